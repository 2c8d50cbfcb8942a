"""Running lackjail as someone else, or somewhere else: as an ordinary user, through a
copy of the interpreter and the checkout that user can reach, and inside a simulated
unprivileged container (namespaces refused as Docker's default seccomp profile does).

On these machines the project's interpreter lives under a 0700 /root and a clone may
sit in a 0700 `mktemp -d` folder: an ordinary user can run neither. `reachable()` then
builds, once per test session, a 0755 folder holding the interpreter (its executable,
standard library and shared libpython, hard-linked where the file system allows), the
site-packages of lackjail's dependencies and the checkout's lackjail package.
"""

from __future__ import annotations

import atexit
import functools
import importlib.metadata
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lackjail.pool import interpreter

CHECKOUT = Path(__file__).resolve().parents[1]
TEST_USER = "lackjail-test"

# An unprivileged container, simulated: the seccomp filter below (Docker's default
# profile's rules on namespaces) loaded, then the command exec'd under it.
CONTAINER = r"""
import errno, os, sys
import pyseccomp as sc
NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
flt = sc.SyscallFilter(sc.ALLOW)  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
flt.add_rule(sc.ERRNO(errno.EPERM), "unshare")
flt.add_rule(sc.ERRNO(errno.EPERM), "setns")
for flag in NEW:
    flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
flt.load()
os.execv(sys.argv[1], sys.argv[1:])
"""


def ordinary_user() -> pwd.struct_passwd | None:
    """An ordinary user for privilege tests (useradd'ed when we are root); None if not root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
            check=True,
        )
        return pwd.getpwnam(TEST_USER)


def reachable_by_others(path: str | Path) -> bool:
    """Whether any user may reach PATH: every folder on the way searchable by others,
    PATH itself readable by them."""
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & 0o004:
        return False
    while path != "/":
        path = os.path.dirname(path)
        if not os.stat(path).st_mode & 0o001:
            return False
    return True


@dataclass(frozen=True)
class Python:
    """An interpreter and the import path that give lackjail, for any user."""

    executable: str
    path: tuple[str, ...]  # put first on sys.path (the interpreter runs with -I)
    env: dict  # what it needs in its environment (LD_LIBRARY_PATH for a copied libpython)

    def argv(self, code: str, *args: str) -> list[str]:
        """The command running CODE with lackjail importable."""
        head = f"import sys; sys.path[:0] = {list(self.path)!r}\n"
        return [self.executable, "-I", "-c", head + code, *args]


@functools.cache
def reachable() -> Python:
    """This interpreter and checkout where any user can reach them, else a copy that is."""
    python = interpreter.current()
    sites = _site_folders()
    parts = [python.executable, python.stdlib, python.dynload, CHECKOUT / "lackjail", *sites]
    parts += _libpython()
    if all(reachable_by_others(p) for p in parts):
        return Python(python.executable, (str(CHECKOUT), *sites), {})
    top = Path(tempfile.mkdtemp(prefix="lackjail-reachable-"))
    atexit.register(shutil.rmtree, top, True)
    os.chmod(top, 0o755)
    exe = top / "bin" / os.path.basename(python.executable)
    exe.parent.mkdir()
    _link(python.executable, exe)
    lib = top / "lib" / f"python{python.version}"
    skip = shutil.ignore_patterns("test", "site-packages", "idlelib", "tkinter", "turtledemo")
    shutil.copytree(python.stdlib, lib, ignore=skip, copy_function=_link)
    if not (lib / "lib-dynload").exists():
        shutil.copytree(python.dynload, lib / "lib-dynload", copy_function=_link)
    for so in _libpython():
        _link(so, top / "lib" / os.path.basename(so))
    site = top / "site-packages"
    for name in _distributions():
        dist = importlib.metadata.distribution(name)
        for file in dist.files or ():
            if not str(file).startswith(".."):
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                _link(dist.locate_file(file), site / file)
    shutil.copytree(CHECKOUT / "lackjail", top / "checkout" / "lackjail", copy_function=_link)
    for folder, dirs, _ in os.walk(top):
        for name in dirs:
            os.chmod(os.path.join(folder, name), 0o755)
    return Python(
        str(exe), (str(top / "checkout"), str(site)), {"LD_LIBRARY_PATH": str(top / "lib")}
    )


def _link(src, dst) -> None:
    """DST as SRC, readable by anyone: a hard link where SRC already is (a link shares its
    mode: changing it would change the original's), else a copy."""
    mode = os.stat(src).st_mode & 0o777
    if mode & 0o004:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass
    shutil.copy2(src, dst)
    os.chmod(dst, mode | 0o444)


def _libpython() -> list[str]:
    """The shared libpython this interpreter loads, if it loads one."""
    closure = interpreter.libraries((interpreter.current().executable,))
    return [p for p in closure.objects if os.path.basename(p).startswith("libpython")]


def _site_folders() -> list[str]:
    return sorted(
        {str(Path(importlib.metadata.distribution(n).locate_file(""))) for n in _distributions()}
    )


def _distributions() -> list[str]:
    """lackjail's run-time dependencies, and theirs (extras left out)."""
    seen: list[str] = []
    todo = [re.match(r"[A-Za-z0-9._-]+", r)[0] for r in _requires("lackjail")]
    while todo:
        name = todo.pop()
        if name.lower() in (s.lower() for s in seen):
            continue
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.append(name)
        todo += [re.match(r"[A-Za-z0-9._-]+", r)[0] for r in _requires(name)]
    return seen


def _requires(name: str) -> list[str]:
    try:
        requires = importlib.metadata.requires(name) or []
    except importlib.metadata.PackageNotFoundError:
        import tomllib

        if name != "lackjail":
            return []
        data = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
        requires = data["project"]["dependencies"]
    return [r for r in requires if "extra ==" not in r]


def run_as(user: str | None, python: Python, code: str, *args: str, container=False, **kw):
    """Run CODE with PYTHON (as USER with runuser, or as this user when None), inside a
    simulated unprivileged container when CONTAINER; returns the CompletedProcess."""
    argv = python.argv(code, *args)
    if container:
        argv = python.argv(CONTAINER, *argv)
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", **python.env}
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=kw.pop("cwd", "/"),
        env={**env, **kw.pop("env", {})},
        timeout=kw.pop("timeout", 300),
        **kw,
    )
