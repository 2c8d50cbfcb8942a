"""Workspace confinement: every path a tool touches resolves inside the workspace.

A path is refused when it is not a str, is empty or too long, holds a NUL
byte or a `..` segment, or resolves (after following every symlink, dangling
ones included) outside the workspace root. Files are opened with O_NOFOLLOW
and O_NONBLOCK and must be regular files, so FIFOs, devices (/dev/zero) and
/proc magic links are refused and never block. Writes are also refused under
paths that would run code later: VCS metadata (.git hooks), lackjail's own
kits, Python site-packages and `.pth` files.
"""

from __future__ import annotations

import errno
import os
import stat

from lackjail.errors import KitError, ToolCallError

MAX_PATH_CHARS = 4096
FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev")
PROTECTED_PARTS = frozenset({".git", ".hg", ".svn", ".lackjail", "site-packages", "dist-packages"})
PROTECTED_SUFFIXES = (".pth",)
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def show(path) -> str:
    """A terminal-safe, bounded rendering of a (hostile) path for messages."""
    text = path if isinstance(path, str) else str(path)
    return repr(text[:200] + ("…" if len(text) > 200 else ""))


def workspace_root(path=None) -> str:
    """The real path of a workspace directory (default: the current one), or KitError."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise KitError(f"workspace must be a directory path, not {type(path).__name__}")
    text = os.fspath(path) if path is not None else os.getcwd()
    if "\x00" in text:
        raise KitError("workspace path contains a NUL byte")
    root = os.path.realpath(text)
    if not os.path.isdir(root):
        raise KitError(
            f"workspace {show(text)} is not a directory; pass an existing directory (--workspace DIR)"
        )
    if root == "/" or any(root == r or root.startswith(r + "/") for r in FORBIDDEN_ROOTS):
        raise KitError(
            f"workspace {show(root)} would expose the whole system; pick a project directory"
        )
    return root


def inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root + "/")


def resolve(root: str, path) -> tuple[str, str]:
    """(real path, path relative to ROOT) for a program-supplied PATH, or ToolCallError."""
    if type(path) is not str:
        raise ToolCallError(f"a path must be a str, not {type(path).__name__}")
    if not path:
        raise ToolCallError("the path is empty")
    if "\x00" in path:
        raise ToolCallError(f"path {show(path)} contains a NUL byte")
    if len(path) > MAX_PATH_CHARS:
        raise ToolCallError(f"path is longer than {MAX_PATH_CHARS} characters")
    if ".." in path.split("/"):
        raise ToolCallError(f"path {show(path)} contains '..'; use a path inside the workspace")
    real = os.path.realpath(os.path.join(root, path))
    if not inside(real, root):
        if os.path.isabs(path) and not inside(os.path.normpath(path), root):
            raise ToolCallError(
                f"path {show(path)} is outside the workspace; use a path relative to the workspace"
            )
        raise ToolCallError(f"path {show(path)} leads outside the workspace through a symlink")
    if real == root:
        raise ToolCallError(f"path {show(path)} is the workspace directory itself, not a file")
    return real, os.path.relpath(real, root)


def check_writable(rel: str, path) -> None:
    """Refuse writes that would let a program run code later (hooks, kits, site-packages, .pth)."""
    parts = rel.split("/")
    hit = next((p for p in parts if p in PROTECTED_PARTS), None)
    if hit is not None:
        raise ToolCallError(f"path {show(path)} is under {hit}/, which tools may not change")
    if rel.endswith(PROTECTED_SUFFIXES):
        raise ToolCallError(
            f"path {show(path)} is a .pth file, which Python runs at start-up; tools may not write it"
        )


class FileTooLarge(ToolCallError):
    """A file over the cap a read was given; raised before reading past the cap."""


def read_regular(real: str, limit: int, path) -> bytes:
    """The bytes of the regular file at REAL (no symlink, FIFO or device), at most LIMIT of them."""
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise ToolCallError(_os_message(exc, path)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolCallError(f"{show(path)} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ToolCallError(f"{show(path)} is not a regular file (device, FIFO or socket)")
        if info.st_size > limit:
            raise FileTooLarge(f"{show(path)} is {info.st_size} bytes, over the {limit}-byte cap")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileTooLarge(f"{show(path)} is over the {limit}-byte cap")
        return b"".join(chunks)
    finally:
        os.close(fd)


def existing_kind(real: str, path) -> str | None:
    """ "file" or None (absent) for a write target; ToolCallError for anything but a regular file."""
    try:
        info = os.lstat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolCallError(_os_message(exc, path)) from None
    if stat.S_ISREG(info.st_mode):
        return "file"
    if stat.S_ISDIR(info.st_mode):
        raise ToolCallError(f"{show(path)} is a directory, not a file")
    raise ToolCallError(f"{show(path)} is not a regular file; tools only write regular files")


def _os_message(exc: OSError, path) -> str:
    messages = {
        errno.ENOENT: "no such file in the workspace",
        errno.ENOTDIR: "a parent is not a directory",
        errno.ELOOP: "is a symlink loop",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENXIO: "is not a regular file",
    }
    return f"{show(path)}: {messages.get(exc.errno, exc.strerror or 'cannot open')}"
