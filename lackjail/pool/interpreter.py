"""Where the interpreter this controller runs on keeps its parts, on this host.

The jail runs the controller's own Python, whatever its layout: a pyenv or
python.org build under one prefix, a distribution's split one (/usr/bin,
/usr/lib/python3.12, a separate lib-dynload), or a copy moved elsewhere with
its shared libpython left where it was built. So nothing is assumed from a
prefix: the executable is the real file, the standard library's folders come
from sysconfig and the import path, and the shared objects are those this
host's loader would load (lackjail.pool.elf), for the executable and for the
extension modules the jail can import.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import sys
import sysconfig
from dataclasses import dataclass

from lackjail.pool import elf


@dataclass(frozen=True)
class Interpreter:
    executable: str  # the real file (a venv's python is a link to it)
    stdlib: str
    platstdlib: str
    dynload: str  # the extension modules of the standard library
    version: str  # "3.12"


@functools.cache
def current() -> Interpreter:
    """The interpreter running this process."""
    base = getattr(sys, "_base_executable", "") or sys.executable
    executable = os.path.realpath(base)
    where = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    where |= {"installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}
    paths = sysconfig.get_paths("posix_prefix", vars=where)
    stdlib, platstdlib = os.path.realpath(paths["stdlib"]), os.path.realpath(paths["platstdlib"])
    dynload = next(
        (os.path.realpath(p) for p in sys.path if os.path.basename(p) == "lib-dynload"),
        os.path.join(platstdlib, "lib-dynload"),
    )
    return Interpreter(executable, stdlib, platstdlib, dynload, sysconfig.get_python_version())


def extension_modules(folder: str, skip: tuple = ()) -> list[str]:
    """The extension modules (*.so) in FOLDER and below, but those whose module name
    matches a pattern of SKIP, sorted."""
    found = []
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".so") and not any(
                fnmatch.fnmatchcase(name.split(".", 1)[0], pattern) for pattern in skip
            ):
                found.append(os.path.join(top, name))
    return found


@functools.lru_cache(maxsize=8)
def _resolver(env_dirs: tuple[str, ...]) -> elf.Resolver:
    """The loader's search with LD_LIBRARY_PATH's folders ENV_DIRS, one per value: a command a
    server runs searches with its client's, never with the server's."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    return elf.Resolver(dirs=elf.default_dirs(multiarch), env_dirs=list(env_dirs))


def libraries(roots: tuple[str, ...]) -> elf.Closure:
    """The shared objects ROOTS (ELF files) load, and the loaders they name."""
    return _resolver(library_search()[0]).closure(list(roots))


def library_search() -> tuple:
    """Where `libraries` looks, besides what the files themselves name: LD_LIBRARY_PATH's
    folders and the loader's built-in ones (as `_resolver` makes them, without reading the
    loader's cache)."""
    env_dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    return tuple(env_dirs), tuple(elf.default_dirs(sysconfig.get_config_var("MULTIARCH") or ""))


def probed() -> list[str]:
    """Every path `libraries` has looked at in this process with this LD_LIBRARY_PATH (see
    `elf.Resolver.probed`)."""
    return _resolver(library_search()[0]).probed()
