"""Opening paths beneath a workspace directory descriptor, with the kernel enforcing the bound.

The workspace root is opened once; every later access names a path relative
to that descriptor and goes through `openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, so no component of it may be a
symlink and no `..` may climb above the root, whatever another process does
to the tree meanwhile. Where the kernel has no openat2 (before 5.6, or a
seccomp filter hides it) the same holds by walking component by component
with `O_NOFOLLOW | O_DIRECTORY`.

Symlinks inside the tree are resolved explicitly (`canonical`): their targets
are followed as text, in-tree only, and the result is a path with no symlink
left in it. A symlink swapped in after that makes the open fail; it can never
lead the open outside.
"""

from __future__ import annotations

import ctypes
import errno
import os
import weakref

from lackjail.errors import InputError
from lackjail.workspace.hostdir import DIR_FLAGS, MAX_LINKS, open_host_dir

SYS_OPENAT2 = 437  # the same number on every architecture
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS


class Escape(InputError, OSError):
    """A path whose symlinks lead outside the tree (or loop); `reason` says which."""

    def __init__(self, reason: str):
        super().__init__(errno.EXDEV, reason)
        self.reason = reason


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_have_openat2: bool | None = None


def _openat2(dirfd: int, path: bytes, flags: int, mode: int) -> int:
    how = _OpenHow(flags | os.O_CLOEXEC, mode, RESOLVE)
    for _ in range(8):  # EAGAIN: a rename raced the lookup; the kernel asks for a retry
        fd = _syscall(
            ctypes.c_long(SYS_OPENAT2),
            ctypes.c_int(dirfd),
            ctypes.c_char_p(path),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err != errno.EAGAIN:
            raise OSError(err, os.strerror(err))
    raise OSError(errno.EAGAIN, "the tree kept changing while the path was resolved")


def openat2_available() -> bool:
    """True when the kernel answers openat2 (checked once)."""
    global _have_openat2
    if _have_openat2 is None:
        root = os.open("/", DIR_FLAGS)
        try:
            os.close(_openat2(root, b".", os.O_PATH, 0))
            _have_openat2 = True
        except OSError as exc:
            _have_openat2 = exc.errno not in (errno.ENOSYS, errno.EPERM)
        finally:
            os.close(root)
    return _have_openat2


def _walk_open(dirfd: int, parts: list[str], flags: int, mode: int) -> int:
    """The fallback: one openat per component, none of them followed if it is a symlink."""
    current, owned = dirfd, False
    try:
        for part in parts[:-1]:
            nxt = os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=current)
            if owned:
                os.close(current)
            current, owned = nxt, True
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=current)
    finally:
        if owned:
            os.close(current)


class Tree:
    """A directory held open by descriptor; paths below it are opened relative to it."""

    def __init__(self, root: str, use_openat2: bool | None = None, last_link: bool = False):
        """Open the host folder ROOT (see `open_host_dir`); `root` becomes its real path."""
        fd, real = open_host_dir(root, last_link)
        self._adopt(fd, real, use_openat2)

    def _adopt(self, fd: int, root: str, use_openat2: bool | None) -> None:
        self.root, self.fd = root, fd
        self._closer = weakref.finalize(self, os.close, fd)
        self.use_openat2 = openat2_available() if use_openat2 is None else use_openat2

    def below(self, rel: str, create: bool = False, mode: int = 0o755) -> Tree:
        """The folder REL beneath this one as a Tree of its own, reached with no symlink on the
        way; with CREATE, missing folders are made (MODE). OSError."""
        try:
            fd = self.open_dir(rel)
        except FileNotFoundError:
            if not create:
                raise
            fd = self.open_dir("")
            for part in rel.split("/"):
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nxt
        tree = Tree.__new__(Tree)
        tree._adopt(fd, os.path.join(self.root, rel), self.use_openat2)
        return tree

    def close(self) -> None:
        self._closer()
        self.fd = -1

    def open(self, rel: str, flags: int, mode: int = 0) -> int:
        """A descriptor for REL (no symlink in it, no `..`); OSError as the kernel says.

        ELOOP (or ENOTDIR in the fallback) means a symlink is in the way.
        """
        if not rel:
            return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=self.fd)
        if self.use_openat2:
            return _openat2(self.fd, os.fsencode(rel), flags, mode)
        parts = rel.split("/")
        if ".." in parts or "" in parts or "." in parts:
            raise OSError(errno.EXDEV, "not a plain relative path")
        return _walk_open(self.fd, parts, flags, mode)

    def open_dir(self, rel: str) -> int:
        """An O_PATH descriptor of the folder REL, to use as the dir_fd of *at calls."""
        return self.open(rel, DIR_FLAGS)

    def canonical(self, rel: str) -> str:
        """REL with every in-tree symlink replaced by its target; Escape if one leads out.

        Components that do not exist yet are kept as written (a write may create them).
        """
        todo = [p for p in reversed(rel.split("/")) if p not in ("", ".")]
        done: list[str] = []
        links = 0
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    raise Escape("leads outside the workspace through a symlink")
                done.pop()
                continue
            try:
                target = os.readlink("/".join([*done, part]), dir_fd=self.fd)
            except OSError as exc:
                if exc.errno not in (errno.EINVAL, errno.ENOENT, errno.ENOTDIR):
                    raise
                done.append(part)  # not a symlink, or not there (yet)
                continue
            links += 1
            if links > MAX_LINKS:
                raise Escape("is a symlink loop")
            if target.startswith("/"):
                if target != self.root and not target.startswith(self.root + "/"):
                    raise Escape("leads outside the workspace through a symlink")
                target, done = target[len(self.root) :], []
            todo.extend(p for p in reversed(target.split("/")) if p not in ("", "."))
        return "/".join(done)
