"""Where the user's server listens: a folder of the effective user's alone (owner, mode 0700,
reached through no other user's symlink), opened by descriptor; the socket and the lock inside
it are named through that descriptor (`/proc/self/fd/N/NAME`), never by a path looked up again.

The folder is `$XDG_RUNTIME_DIR/lackjail` when $XDG_RUNTIME_DIR is the user's alone, else
`server` inside the cache folder the early jail keeps its plan in (`$XDG_CACHE_HOME/lackjail`,
else `~/.cache/lackjail`). One server per interpreter and lackjail install: the names carry the
install's mark. The standard library only, and none of its slower modules: the client imports
this before anything else.
"""

import _signal
import _socket
import os
import sys
import zlib

from lackjail.workspace.hostdir import DIR_FLAGS, open_at, open_host_dir

HERE = os.path.dirname(os.path.abspath(__file__))
INSTALL = f"{zlib.crc32(f'{sys.executable}\0{HERE}'.encode()):08x}"
SOCKET = f"server-{INSTALL}.sock"
LOCK = f"server-{INSTALL}.lock"
SO_PEERPIDFD = 77  # Linux 6.5: a pidfd of the peer that connected
# what the kernel lets a process do beyond its uid: /proc/PID/status lines, namespaces, files
STATUS = (b"Uid:", b"Gid:", b"Groups:", b"CapInh:", b"CapPrm:", b"CapEff:", b"CapBnd:",
          b"CapAmb:", b"NoNewPrivs:", b"Seccomp:", b"Seccomp_filters:")  # fmt: skip
NAMESPACES = ("mnt", "user", "pid", "net", "ipc", "uts", "cgroup", "time")
CONFINED_BY = ("cgroup", "limits", "attr/current")


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


def context(pid: int | str = "self") -> list[bytes]:
    """What process PID may do beyond its uid: its ids, groups and capabilities, no_new_privs
    and seccomp filters, namespaces and root folder, cgroups, rlimits and security label. A
    command runs in the server only when the client's and the server's are the same: else a
    client with fewer rights (a root without capabilities, a process under seccomp, in another
    namespace or cgroup) would have a server with more act for it, and a client would hand its
    stdio and environment to a server with fewer. What cannot be read is b"-"."""
    base = f"/proc/{pid}/"
    status = _read(base + "status")
    seen = [line for line in status.splitlines() if line.startswith(STATUS)] or [b"-"]
    for name in NAMESPACES:
        try:
            seen.append(os.readlink(base + "ns/" + name).encode())
        except OSError:
            seen.append(b"-")
    try:
        info = os.stat(base + "root")
        seen.append(f"{info.st_dev}:{info.st_ino}".encode())
    except OSError:
        seen.append(b"-")
    return seen + [_read(base + name) for name in CONFINED_BY]


def peer_context(sock: _socket.socket) -> list[bytes] | None:
    """The `context` of the process at the other end of SOCK, the one that connected (its
    pidfd, checked alive after the reads: its pid named no other process meanwhile); None when
    it cannot be told."""
    cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    pid = int.from_bytes(cred[:4], sys.byteorder)
    try:
        pidfd = sock.getsockopt(_socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError:  # a kernel before 6.5: the pid's process now
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return None
    try:
        seen = context(pid)
        _signal.pidfd_send_signal(pidfd, 0)
    except OSError:
        return None
    finally:
        os.close(pidfd)
    return seen


def _read(path: str) -> bytes:
    """A kernel file of /proc, whole; b"-" when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b"-"
    try:
        data, chunk = b"", b"-"
        while chunk and len(data) < 1 << 16:
            chunk = os.read(fd, 1 << 16)
            data += chunk
        return data
    except OSError:
        return b"-"
    finally:
        os.close(fd)


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
