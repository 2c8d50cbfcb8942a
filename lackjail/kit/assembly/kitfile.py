"""Kit files: `.lackjail/kits/NAME.kit` in the workspace, or bundled with lackjail.

    ---
    name: review
    description: Read-only tools for reviewing code
    docs: docs/review.md, docs/style.md
    ---
    # one tool, pack or pack.member per line; '#' starts a comment
    read_file
    find_files
    fs

Kit files name tools of the toolbox; they cannot define new ones, so a kit
file in a workspace never makes lackjail import code.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from lackjail.errors import KitError, ToolCallError
from lackjail.kit.tools.toolspec import TOOL_NAME_RE
from lackjail.workspace.beneath import Tree
from lackjail.workspace.files import read_beneath, read_regular
from lackjail.workspace.hostfs import Root, workspace_root_of, write_whole
from lackjail.workspace.paths import inside, show

KITS_DIR = os.path.join(".lackjail", "kits")
BUNDLED_DIR = Path(__file__).resolve().parent.parent / "kits"
KIT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
MAX_KIT_BYTES = 64 << 10
FRONTMATTER_KEYS = ("name", "description", "docs")


@dataclass(frozen=True)
class KitFile:
    name: str
    description: str
    docs: tuple
    tools: tuple
    source: str  # the file it came from, for messages


def check_kit_name(name) -> str:
    if not isinstance(name, str) or not KIT_NAME_RE.fullmatch(name):
        raise KitError(
            f"kit name {name!r} is not valid; use 1-64 letters, digits, '-' or '_' (no dots or "
            "slashes)"
        )
    return name


def parse_kit(text: str, source: str, name: str) -> KitFile:
    """Parse kit file TEXT; errors name SOURCE:LINE and the fix. NAME is the file's stem."""
    lines = text.splitlines()
    meta: dict[str, str] = {}
    start = 0
    first = next(
        (i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("#")),
        None,
    )
    if first is not None and lines[first].strip() == "---":
        end = next((i for i in range(first + 1, len(lines)) if lines[i].strip() == "---"), None)
        if end is None:
            raise KitError(
                f"{source}:{first + 1}: the '---' frontmatter is never closed; add a '---' line "
                "after it"
            )
        for number in range(first + 1, end):
            line = lines[number].strip()
            if not line or line.startswith("#"):
                continue
            key, colon, value = line.partition(":")
            key = key.strip()
            if not colon or key not in FRONTMATTER_KEYS:
                raise KitError(
                    f"{source}:{number + 1}: expected 'key: value' with key one of "
                    f"{', '.join(FRONTMATTER_KEYS)}; got {line[:80]!r}"
                )
            if key in meta:
                raise KitError(f"{source}:{number + 1}: frontmatter key '{key}' is given twice")
            meta[key] = value.strip()
        start = end + 1
    tools: list[str] = []
    for number in range(start, len(lines)):
        entry = lines[number].split("#", 1)[0].strip()
        if not entry:
            continue
        if entry == "---":
            raise KitError(
                f"{source}:{number + 1}: unexpected '---'; frontmatter goes once, at the top"
            )
        if not TOOL_NAME_RE.fullmatch(entry):
            raise KitError(
                f"{source}:{number + 1}: {entry[:80]!r} is not a tool name; write one tool name "
                "per line (comments start with #)"
            )
        if entry in tools:
            raise KitError(f"{source}:{number + 1}: tool '{entry}' is listed twice")
        tools.append(entry)
    declared = meta.get("name", name)
    if declared != name:
        raise KitError(
            f"{source}: frontmatter says name '{declared}' but the file is {name}.kit; make them "
            "match"
        )
    docs = tuple(d.strip() for d in meta.get("docs", "").split(",") if d.strip())
    return KitFile(
        name=name,
        description=meta.get("description", ""),
        docs=docs,
        tools=tuple(tools),
        source=source,
    )


def read_kit(path, workspace=None) -> KitFile:
    """Parse the kit file at PATH (a regular UTF-8 file of at most 64 KiB).

    A file inside WORKSPACE is read as a tool would read it (beneath the
    workspace, as its owner); any other path is one the caller chose.
    """
    path = Path(path)
    full = os.path.abspath(path)
    try:
        root = _root_or_none(workspace)
        rel = _in_workspace(full, workspace, root.path) if root is not None else None
        if root is not None and rel is not None:
            data = read_beneath(root, rel, MAX_KIT_BYTES)
        else:
            data = _read_chosen(full)
        text = data.decode("utf-8")
    except ToolCallError as exc:
        raise KitError(f"cannot read kit file {path}: {exc}") from None
    except UnicodeDecodeError:
        raise KitError(f"kit file {path} is not UTF-8 text") from None
    return parse_kit(text, str(path), path.name[:-4] if path.name.endswith(".kit") else path.stem)


def _in_workspace(full: str, workspace, root: str) -> str | None:
    """FULL relative to the workspace when it names a file there: as written, so a symlinked
    `.lackjail/kits` leading out is refused by the read beneath (never followed as the
    controller), or once its folder is resolved; None for a path outside."""
    for base in (os.path.abspath(workspace), root):
        if inside(full, base):
            return os.path.relpath(full, base)
    folder = os.path.realpath(os.path.dirname(full))
    if inside(folder, root):
        return os.path.relpath(os.path.join(folder, os.path.basename(full)), root)
    return None


def _root_or_none(workspace) -> Root | None:
    """The opened workspace (a Root passed in, or the folder opened now; closed with the last
    reference), None for none."""
    if isinstance(workspace, Root):
        return workspace
    try:
        return Root(workspace) if workspace is not None else None
    except KitError:
        return None


def _read_chosen(full: str) -> bytes:
    """A kit file the caller named (or a bundled one): its folder may be anywhere."""
    try:
        tree = Tree(os.path.dirname(full), last_link=True)
    except OSError as exc:
        raise ToolCallError(f"{show(full)}: {exc.strerror or exc}") from None
    try:
        name = os.path.basename(full)
        return read_regular(tree, tree.canonical(name) or name, MAX_KIT_BYTES, name)[0]
    except OSError as exc:
        raise ToolCallError(f"{show(full)}: {exc.strerror or exc}") from None
    finally:
        tree.close()


def find_kit(name: str, workspace) -> Path | None:
    """The file of the kit NAME: the workspace's own, else the bundled one, else None.

    A workspace kit may not take a bundled kit's name: `--kit readonly` must
    mean the bundled readonly kit whatever the repository holds.
    """
    check_kit_name(name)
    own = Path(workspace) / KITS_DIR / f"{name}.kit"
    bundled = BUNDLED_DIR / f"{name}.kit"
    # lexists, not is_file: a kit that is a FIFO or a device must fail loudly, not vanish
    if os.path.lexists(own):
        if bundled.is_file():
            raise KitError(
                f"workspace kit {own} takes the name of the bundled kit {bundled}; a workspace "
                f"may not replace a bundled kit: rename {own.name}"
            )
        return own
    return bundled if bundled.is_file() else None


def list_kits(workspace) -> list[tuple[str, str, Path]]:
    """(name, source, path) of every kit; a workspace kit named like a bundled one is left out
    (using it is an error, see find_kit). WORKSPACE (a `Root` or a folder) is listed beneath its
    descriptor: a workspace or kits folder swapped for a symlink lists nothing of where it
    leads."""
    found: dict[str, tuple[str, str, Path]] = {}
    for path in sorted(BUNDLED_DIR.glob("*.kit")):
        found[path.name[:-4]] = (path.name[:-4], "bundled", path)
    folder = Path(os.fspath(workspace)) / KITS_DIR
    for file in sorted(_workspace_kit_files(workspace)):
        name = file[:-4]
        if KIT_NAME_RE.fullmatch(name) and name not in found:
            found[name] = (name, "workspace", folder / file)
    return sorted(found.values())


def _workspace_kit_files(workspace) -> list[str]:
    """The names ending in .kit in the workspace's kits folder (none when there is none, or when
    it lies outside the workspace)."""
    try:
        with workspace_root_of(workspace) as root, root.owner.acting():
            # in-tree symlinks resolved as a tool resolves them; one leading out: Escape, none
            fd = root.tree.open(root.tree.canonical(KITS_DIR), os.O_RDONLY | os.O_DIRECTORY)
            try:
                return [n for n in os.listdir(fd) if n.endswith(".kit")]
            finally:
                os.close(fd)
    except (KitError, OSError):
        return []


def format_kit(name: str, description: str, tools, docs=()) -> str:
    """The text of a kit file (what `lackjail kit create` writes)."""
    check_kit_name(name)
    for key, value in (("description", description), *(("docs", d) for d in docs)):
        if not isinstance(value, str) or "\n" in value or "\r" in value:
            raise KitError(f"kit {key} must be one line of text")
    if any("," in d for d in docs):
        raise KitError("a docs path may not contain ','; kit files separate docs with commas")
    lines = ["---", f"name: {name}"]
    if description:
        lines.append(f"description: {description}")
    if docs:
        lines.append(f"docs: {', '.join(docs)}")
    lines += ["---", *tools, ""]
    text = "\n".join(lines)
    parse_kit(text, "<new kit>", name)  # what we write must read back
    return text


def write_kit(workspace, name: str, text: str, force: bool = False) -> Path:
    """Write kit TEXT as NAME.kit in the workspace's kit folder, atomically; refuse to overwrite
    unless FORCE. The folder is reached beneath the workspace (no symlink), as its owner."""
    folder = Path(workspace) / KITS_DIR
    path = folder / f"{check_kit_name(name)}.kit"
    try:
        # folders and file made as the workspace's owner, beneath the folder opened once
        with workspace_root_of(workspace) as root, root.owner.acting():
            tree = root.tree.below(Path(KITS_DIR).as_posix(), create=True)
            try:
                write_whole(tree, path.name, text.encode("utf-8"), replace=force)
            finally:
                tree.close()
    except FileExistsError:
        raise KitError(f"kit file {path} exists; pass --force to replace it") from None
    except OSError as exc:
        raise KitError(f"cannot write kit file {show(str(path))}: {exc.strerror or exc}") from None
    return path
