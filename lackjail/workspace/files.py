"""Files beneath a Tree: locating a program's path, reading a regular file, a file's identity.

Every open goes through the Tree (kernel-checked, no symlink followed). What
a path names is decided from an O_PATH descriptor's fstat, and only a regular
file is then opened, through that descriptor: a device or FIFO is never
opened (opening a device acts: a watchdog starts, a tape rewinds; opening a
FIFO wakes its writer).
"""

from __future__ import annotations

import errno
import os
import stat

from lackjail.errors import ToolCallError
from lackjail.workspace.beneath import Escape, Tree
from lackjail.workspace.hostfs import reopen_regular, workspace_root_of
from lackjail.workspace.paths import os_message, relative, show
from lackjail.workspace.protect import Protection


class FileTooLarge(ToolCallError):
    """A file over the cap a read was given; raised before reading past the cap."""


def identity(info: os.stat_result | None) -> tuple | None:
    """What must not change between a run reading a file and its commit replacing it."""
    if info is None:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def locate(tree: Tree, rel: str, path) -> str:
    """The canonical in-tree form of REL (in-tree symlinks resolved), or ToolCallError."""
    try:
        canon = tree.canonical(rel)
    except Escape as exc:
        raise ToolCallError(f"path {show(path)} {exc.reason}") from None
    except OSError as exc:
        raise ToolCallError(os_message(exc, path)) from None
    if not canon:
        raise ToolCallError(f"path {show(path)} is the workspace directory itself, not a file")
    return canon


def read_regular(tree: Tree, rel: str, limit: int, path) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file REL (at most LIMIT of them) and its fstat."""
    try:
        pathfd = tree.open(rel, os.O_PATH)
        try:
            fd = reopen_regular(pathfd)
        finally:
            os.close(pathfd)
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise ToolCallError(f"{show(path)} is a directory, not a file") from None
        if exc.errno == errno.ENXIO:
            raise ToolCallError(
                f"{show(path)} is not a regular file (device, FIFO or socket)"
            ) from None
        raise ToolCallError(os_message(exc, path)) from None
    try:
        info = os.fstat(fd)
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
        return b"".join(chunks), info
    except OSError as exc:
        raise ToolCallError(os_message(exc, path)) from None
    finally:
        os.close(fd)


def stat_target(tree: Tree, rel: str, path) -> os.stat_result | None:
    """The fstat of write target REL (None when absent); ToolCallError unless a regular file."""
    try:
        fd = tree.open(rel, os.O_PATH)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolCallError(os_message(exc, path)) from None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if stat.S_ISDIR(info.st_mode):
        raise ToolCallError(f"{show(path)} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise ToolCallError(f"{show(path)} is not a regular file; tools only write regular files")
    return info


def read_beneath(workspace, path, limit: int, protection: Protection | None = None) -> bytes:
    """One file of WORKSPACE (a `Root`, or a folder opened here) read whole, as a tool would
    read it: confined, as the owner, read rules applied (PROTECTION's, else the defaults; for kit
    files and docs the workspace names). ToolCallError; KitError for a folder that is no
    workspace."""
    with workspace_root_of(workspace) as root, root.owner.acting():
        rel = locate(root.tree, relative(root.path, path), path)
        (protection or Protection()).check_read(rel, path)
        return read_regular(root.tree, rel, limit, path)[0]
