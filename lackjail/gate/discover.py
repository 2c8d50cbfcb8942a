"""Finding the programs a gate checks: explicit files, and files under folders matching a glob.

The glob is matched against the path relative to the folder argument, with
`/` separators: `*` and `?` stay inside one path segment, `**/` spans any
number of folders (none included). Hidden folders and files (a name starting
with `.`, like `.git` or `.venv`) are skipped while walking, and symlinked
folders are not followed, so a walk cannot loop or leave the tree. A symlink
to a file is a finding (`Found.finding`), never read: it may point at a
secret (`progs/x.lackpy -> ../../.env`) that a report would then quote.
`open_program` opens a file below the root beneath the root's descriptor,
with no symlink followed anywhere on the way. A file
named on the command line is always included, whatever the glob; `-` is a
program read from stdin, reported as `<stdin>`.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from lackjail.errors import InputError
from lackjail.workspace.beneath import Tree
from lackjail.workspace.hostfs import HostFile, reopen_regular

DEFAULT_GLOB = "**/*.lackpy"
STDIN = "-"


class DiscoveryError(InputError, ValueError):
    """A path or glob that cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class Found:
    """One program: its absolute path, and the name reports use.

    The name is relative to the root with `/` separators, or absolute for a file outside the root.
    """

    path: str
    name: str
    finding: str | None = None  # why the file is reported and never read (a symlink)


def glob_regex(pattern: str) -> re.Pattern:
    """A regex for PATTERN over `/`-separated relative paths (see the module docstring)."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise DiscoveryError("the glob is empty; e.g. --glob '**/*.lackpy'")
    if pattern.startswith("/") or "\\" in pattern or "\x00" in pattern:
        raise DiscoveryError(
            f"glob {pattern!r} must be a relative pattern with '/' separators, e.g. "
            "'src/**/*.lackpy'"
        )
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                raise DiscoveryError(f"glob {pattern!r} has an unclosed '['")
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace(r"\-", "-")
            out.append(f"[{'^/' if negate else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


SYMLINK_FINDING = "the program is a symlink; the gate does not follow symlinks, so it was not read"


def _found(path: str, root: str, finding: str | None = None) -> Found:
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return Found(absolute, _report_name(absolute), finding)
    return Found(absolute, _report_name(relative), finding)


def _report_name(path: str) -> str:
    """PATH as reports name it: `/` separators, and bytes that are no UTF-8 (a hostile file name)
    escaped as `\\xff`, so every report encodes (a lone surrogate crashed SARIF and JSON)."""
    return os.fsencode(Path(path).as_posix()).decode("utf-8", "backslashreplace")


def open_program(path: str, root: str) -> int:
    """A read-only descriptor of the regular file PATH; OSError (a device or FIFO is looked at
    through O_PATH, never opened).

    Below ROOT the file is opened beneath the root's descriptor with no symlink
    followed (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); a file the caller
    named outside ROOT is opened with O_NOFOLLOW.
    """
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        with HostFile(absolute) as file:
            return file.open()
    tree = Tree(root)
    try:
        pathfd = tree.open(Path(relative).as_posix(), os.O_PATH)
    finally:
        tree.close()
    try:
        return reopen_regular(pathfd)  # a device or FIFO is refused, never opened
    finally:
        os.close(pathfd)


def discover(paths, pattern: str = DEFAULT_GLOB, root=None) -> list[Found]:
    """The programs under PATHS (files or folders; default the current folder), sorted by name, no
    duplicates.

    Names are relative to ROOT (default: the current folder) where the file lies below it.
    """
    regex = glob_regex(pattern)
    root = os.path.abspath(root or os.getcwd())
    found: dict[str, Found] = {}
    for path in paths or ["."]:
        if not isinstance(path, str) or not path or "\x00" in path:
            raise DiscoveryError(f"path {path!r} is not usable; pass files or folders")
        if path == STDIN:
            found.setdefault(STDIN, Found(STDIN, "<stdin>"))
            continue
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise DiscoveryError(f"path {path!r} does not exist") from None
        except OSError as exc:
            raise DiscoveryError(f"cannot look at path {path!r}: {exc.strerror or exc}") from None
        if stat.S_ISREG(mode) or stat.S_ISLNK(mode) and os.path.isfile(path):
            item = _found(path, root, SYMLINK_FINDING if stat.S_ISLNK(mode) else None)
            found.setdefault(item.path, item)
        elif stat.S_ISDIR(mode):
            for item in _walk(path, regex, root):
                found.setdefault(item.path, item)
        else:
            raise DiscoveryError(f"path {path!r} is neither a file nor a folder")
    return sorted(found.values(), key=lambda f: f.name)


def _walk(folder: str, regex: re.Pattern, root: str):
    """The programs below FOLDER, walked by descriptor (os.fwalk): a subfolder swapped for a
    symlink while it is listed is never entered, so no name from where it leads is reported."""

    def fail(exc):
        raise DiscoveryError(f"cannot list folder {exc.filename!r}: {exc.strerror or exc}")

    for current, dirs, files, dirfd in os.fwalk(folder, onerror=fail, follow_symlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.startswith("."):
                continue
            full = os.path.join(current, name)
            if regex.fullmatch(Path(os.path.relpath(full, folder)).as_posix()):
                try:
                    link = stat.S_ISLNK(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode)
                except FileNotFoundError:
                    continue  # gone meanwhile
                yield _found(full, root, SYMLINK_FINDING if link else None)
