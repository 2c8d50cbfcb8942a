"""Program-supplied paths, checked as text: what a path may look like before the kernel resolves it.

A path is refused when it is not a str, is empty or too long, holds a NUL
byte or a `..` segment, or is absolute and outside the workspace root. What
is left is a plain relative path that `beneath.Tree` resolves under the
workspace descriptor; only there is it decided what it names.
"""

from __future__ import annotations

import errno
import os

from lackjail.errors import ToolCallError

MAX_PATH_CHARS = 4096


def show(path) -> str:
    """A terminal-safe, bounded rendering of a (hostile) path for messages."""
    text = path if isinstance(path, str) else str(path)
    return repr(text[:200] + ("…" if len(text) > 200 else ""))


def inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root + "/")


def relative(root: str, path) -> str:
    """The plain workspace-relative form of a program-supplied PATH, or ToolCallError."""
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
    if path.startswith("/"):
        if not inside(os.path.normpath(path), root):
            raise ToolCallError(
                f"path {show(path)} is outside the workspace; use a path relative to the workspace"
            )
        path = path[len(root) :]
    rel = "/".join(p for p in path.split("/") if p not in ("", "."))
    if not rel:
        raise ToolCallError(f"path {show(path)} is the workspace directory itself, not a file")
    return rel


def os_message(exc: OSError, path) -> str:
    """What an OSError met while touching PATH means, in words a program can act on."""
    messages = {
        errno.ENOENT: "no such file in the workspace",
        errno.ENOTDIR: "a parent is not a folder (or is a symlink that changed)",
        errno.ELOOP: "a symlink is in the way (it changed while the path was resolved)",
        errno.EXDEV: "leads outside the workspace",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.ENXIO: "is not a regular file",
        errno.EISDIR: "is a directory, not a file",
    }
    return f"{show(path)}: {messages.get(exc.errno or 0, exc.strerror or 'cannot open')}"
