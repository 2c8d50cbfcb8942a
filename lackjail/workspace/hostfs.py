"""The one door to host files: every file the controller opens, writes or chmods for a user.

The controller often runs as root, and the folders it works in belong to
users who may swap any entry of them at any moment. So here, and only here:

- a folder is opened once, by descriptor (`beneath.open_host_dir`: each
  component O_NOFOLLOW, only root's or our own symlinks followed on the way);
  a workspace (`Root`) may not be a symlink at all, and its owner is read
  from that descriptor once;
- a file is a plain name beneath such a descriptor (inside a workspace, a
  relative path resolved by `beneath.Tree`), never reached through a
  symlink; its type is decided from an O_PATH descriptor and only a regular
  file is opened (opening a FIFO hangs, opening a device acts);
- modes and owners are set on descriptors, and a file is replaced by a
  temporary one made O_EXCL|O_NOFOLLOW beneath the folder's descriptor,
  fchmod'ed and fsync'ed, then renamed into place by descriptor.

Nothing here resolves a path and then acts on it by name.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from lackjail.errors import KitError
from lackjail.workspace.beneath import Tree, open_host_dir
from lackjail.workspace.hostdir import open_at
from lackjail.workspace.owner import Owner
from lackjail.workspace.paths import show

READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev")


def reopen_regular(pathfd: int, flags: int = READ_FLAGS) -> int:
    """The file of the O_PATH descriptor PATHFD opened with FLAGS when it is a regular file (the
    same file, not its path looked up again); OSError (EISDIR, ENXIO) for anything else, which
    is never opened."""
    mode = os.fstat(pathfd).st_mode
    if not stat.S_ISREG(mode):
        kind = "is a directory" if stat.S_ISDIR(mode) else "is not a regular file"
        raise OSError(errno.EISDIR if stat.S_ISDIR(mode) else errno.ENXIO, kind)
    return os.open(f"/proc/self/fd/{pathfd}", flags | os.O_CLOEXEC)


def open_regular_at(dirfd: int, name: str, flags: int = READ_FLAGS) -> int:
    """The regular file NAME in the folder DIRFD opened with FLAGS; never a symlink (ELOOP),
    FIFO, device or socket (ENXIO), nor a folder (EISDIR)."""
    pathfd = open_at(dirfd, name, os.O_PATH)
    try:
        if stat.S_ISLNK(os.fstat(pathfd).st_mode):
            raise OSError(errno.ELOOP, "is a symlink")
        return reopen_regular(pathfd, flags)
    finally:
        os.close(pathfd)


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """All of FD from where it stands; OSError(EFBIG) past LIMIT bytes."""
    chunks, total = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes")


def write_all(fd: int, data: bytes) -> None:
    """Write all of DATA to FD (os.write may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_whole(
    tree: Tree, name: str, data: bytes, replace: bool = True, mode: int = 0o644
) -> None:
    """Write file NAME directly in TREE's folder whole or not at all (a temp file renamed, or
    linked when REPLACE is false: FileExistsError then). Never follows a symlink; the mode is
    set on the temp file's descriptor before it takes NAME."""
    tmp = f".{name}.{os.urandom(4).hex()}.tmp"
    fd = open_at(tree.fd, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            write_all(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.rename(tmp, name, src_dir_fd=tree.fd, dst_dir_fd=tree.fd)
        else:
            os.link(tmp, name, src_dir_fd=tree.fd, dst_dir_fd=tree.fd, follow_symlinks=False)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=tree.fd)


def explain(exc: OSError) -> str:
    """What an OSError from this module means for a host file, in words."""
    if exc.errno == errno.ELOOP:
        walked = exc.strerror or ""  # open_host_dir names the symlink it refused
        if "/" in walked:
            return walked
        return "is a symlink; lackjail never follows one here, pass the real file"
    if exc.errno == errno.ENXIO:
        return "is not a regular file (a FIFO, device or socket); lackjail never opens one"
    if exc.errno == errno.EISDIR:
        return "is a folder, not a file"
    return exc.strerror or str(exc)


class HostFile:
    """A host file named by its folder, opened once (O_NOFOLLOW walk), and a plain name in it.

    For files a user names on the command line or that hold a user's output:
    programs, batch inputs and outputs, gate reports, configs. The folder is
    held by descriptor for this object's life; every access opens NAME
    beneath it and never follows a symlink.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        folder, name = os.path.split(os.path.abspath(self.path))
        if not name or self.path.endswith("/"):
            raise OSError(errno.EISDIR, "is a folder, not a file")
        self.name = name
        self.folder = Tree(folder, last_link=True)

    def close(self) -> None:
        self.folder.close()

    def __enter__(self) -> HostFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self, flags: int = READ_FLAGS) -> int:
        """The regular file opened with FLAGS (FileNotFoundError when absent)."""
        return open_regular_at(self.folder.fd, self.name, flags)

    def read(self, limit: int | None = None) -> bytes:
        """The whole file (at most LIMIT bytes, else OSError EFBIG)."""
        fd = self.open()
        try:
            return read_fd(fd, limit)
        finally:
            os.close(fd)

    def open_append(self, mode: int = 0o644) -> int:
        """A write descriptor appending to the file, created (MODE, less the umask) when
        absent."""
        flags = os.O_WRONLY | os.O_APPEND
        for _ in range(8):  # someone making and removing it meanwhile: a few tries, no more
            try:
                return self._open_to_change(flags)
            except FileNotFoundError:
                pass
            try:
                return open_at(self.folder.fd, self.name, flags | os.O_CREAT | os.O_EXCL, mode)
            except FileExistsError:
                continue  # made meanwhile: open what is there now, as any other file
        raise OSError(errno.EAGAIN, "kept appearing and disappearing while it was opened")

    def truncate(self, size: int) -> None:
        fd = self._open_to_change(os.O_WRONLY)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)

    def _open_to_change(self, flags: int) -> int:
        """The file opened to be changed in place; refused (EMLINK) when it has other names: a
        hard link a user made to a file of root's (where protected_hardlinks is off) would
        have root change that file."""
        fd = self.open(flags)
        if os.fstat(fd).st_nlink != 1:
            os.close(fd)
            raise OSError(errno.EMLINK, "has other hard links; lackjail never changes one")
        return fd

    def replace(self, data: bytes, replace: bool = True, mode: int = 0o644) -> None:
        """Write the file whole or not at all (see `write_whole`)."""
        write_whole(self.folder, self.name, data, replace, mode)


def read_file(path, limit: int | None = None, own_links: bool = False) -> bytes:
    """The bytes of the regular host file PATH, never through a symlink (with OWN_LINKS: none
    but root's or our own, for our own config files); OSError (see `explain`)."""
    if own_links:
        pathfd, _ = open_host_dir(os.fspath(path), last_link=True, folder=False)
        try:
            fd = reopen_regular(pathfd)
        finally:
            os.close(pathfd)
    else:
        with HostFile(path) as file:
            fd = file.open()
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def write_file(path, data: bytes, replace: bool = True, mode: int = 0o644) -> None:
    """Write the host file PATH whole or not at all (see `write_whole`); OSError."""
    with HostFile(path) as file:
        file.replace(data, replace, mode)


class Root:
    """A workspace folder opened once: its descriptor (`tree`), real path and owner.

    Opened with no symlink as its last component (a workspace that is a
    symlink is refused, see `beneath.open_host_dir`); every run of a Jail uses
    this descriptor, so swapping the folder for a symlink afterwards changes
    nothing the controller does. The owner is read from the descriptor.
    """

    def __init__(self, path=None):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise KitError(f"workspace must be a directory path, not {type(path).__name__}")
        text = os.fspath(path) if path is not None else os.getcwd()
        if "\x00" in text:
            raise KitError("workspace path contains a NUL byte")
        try:
            self.tree = Tree(text)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EACCES, errno.EPERM):
                message = f"workspace {show(text)}: {exc.strerror} (--workspace DIR)"
                raise KitError(message) from None
            raise KitError(
                f"workspace {show(text)} is not a directory; pass an existing one (--workspace DIR)"
            ) from None
        self.path = self.tree.root
        if self.path == "/" or any(
            self.path == r or self.path.startswith(r + "/") for r in FORBIDDEN_ROOTS
        ):
            self.tree.close()
            raise KitError(
                f"workspace {show(self.path)} would expose the whole system; pick a project "
                "directory"
            )
        self.owner = Owner(self.tree.fd)

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"Root({self.path!r})"

    def close(self) -> None:
        self.tree.close()


@contextlib.contextmanager
def workspace_root_of(workspace):
    """The opened workspace WORKSPACE (a Root, kept open) or the folder it names (opened here,
    closed after); KitError."""
    if isinstance(workspace, Root):
        yield workspace
        return
    root = Root(workspace)
    try:
        yield root
    finally:
        root.close()


def workspace_root(path=None) -> str:
    """The real path of a workspace folder (default: the current one), checked as `Root` opens
    it; KitError. For messages and defaults only: act on a `Root`, never on this string."""
    root = Root(path)
    root.close()
    return root.path
