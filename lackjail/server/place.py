"""Where the user's server listens: a folder of the effective user's alone (owner, mode 0700,
reached through no other user's symlink), opened by descriptor; the socket and the lock inside
it are named through that descriptor (`/proc/self/fd/N/NAME`), never by a path looked up again.

The folder is `$XDG_RUNTIME_DIR/lackjail` when $XDG_RUNTIME_DIR is the user's alone, else
`server` inside the cache folder the early jail keeps its plan in (`$XDG_CACHE_HOME/lackjail`,
else `~/.cache/lackjail`). One server per interpreter and lackjail install: the names carry the
install's mark. The standard library only, and none of its slower modules: the client imports
this before anything else.
"""

import os
import sys
import zlib

from lackjail.workspace.hostdir import DIR_FLAGS, open_at, open_host_dir

HERE = os.path.dirname(os.path.abspath(__file__))
INSTALL = f"{zlib.crc32(f'{sys.executable}\0{HERE}'.encode()):08x}"
SOCKET = f"server-{INSTALL}.sock"
LOCK = f"server-{INSTALL}.lock"


def identity() -> str:
    """What a command's process is, beyond what a request carries: the interpreter, lackjail's
    package and the import path (the code it runs), its groups, file names' encoding, and the
    namespaces and root folder it sees paths in. A server serves only clients of the same
    (its code's files are checked on top)."""
    package = os.path.dirname(HERE)
    seen = []
    for where in ("/proc/self/ns/mnt", "/proc/self/ns/user", "/proc/self/ns/pid", "/"):
        try:
            info = os.stat(where)
            seen.append(f"{info.st_dev}:{info.st_ino}")
        except OSError:
            seen.append("-")
    groups = ",".join(map(str, sorted({os.getegid(), *os.getgroups()})))
    encoding = f"{sys.getfilesystemencoding()}:{sys.flags.utf8_mode}"
    return "\0".join([sys.version, sys.executable, package, groups, encoding, *seen, *sys.path])


def alone(info: os.stat_result) -> bool:
    """Ours, and no one else's to read, write or enter."""
    return info.st_uid == os.geteuid() and not info.st_mode & 0o077


def folder_path() -> str:
    """The folder's path, as text (for messages and the write rules that protect it)."""
    runtime = _runtime()
    if runtime:
        return os.path.join(runtime, "lackjail")
    return os.path.join(_cache_base(), "lackjail", "server")


def _runtime() -> str | None:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if not runtime.startswith("/"):
        return None
    try:
        fd, _ = open_host_dir(runtime)
    except OSError:
        return None
    try:
        return runtime if alone(os.fstat(fd)) else None
    finally:
        os.close(fd)


def _cache_base() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def open_folder(create: bool = False) -> int | None:
    """The folder (an O_PATH descriptor) when it is ours alone; with CREATE, the folders missing
    on the way are made (0700) beneath folders that are ours or root's and no one else's to
    change. None when there is none, or it is not ours alone."""
    runtime = _runtime()
    if runtime:
        start, names = runtime, ["lackjail"]
    else:
        base = os.path.abspath(_cache_base())
        start, names = os.path.dirname(base), [os.path.basename(base), "lackjail", "server"]
    try:
        above, _ = open_host_dir(start)
    except OSError:
        return None
    try:
        for name in names:
            info = os.fstat(above)
            if info.st_uid not in (0, os.geteuid()) or info.st_mode & 0o022:
                return None
            if create:
                try:
                    os.mkdir(name, 0o700, dir_fd=above)
                except FileExistsError:
                    pass
            below = open_at(above, name, DIR_FLAGS)
            os.close(above)
            above = below
        if alone(os.fstat(above)):
            folder, above = above, -1
            return folder
        return None
    except OSError:
        return None
    finally:
        if above >= 0:
            os.close(above)


def named(folder: int, name: str) -> str:
    """A path that reaches NAME in the folder FOLDER through its descriptor (for bind and
    connect, which take no directory descriptor)."""
    return f"/proc/self/fd/{folder}/{name}"
