"""resolve_doc: read a kit's or tool's documentation, from inside the workspace or from lackjail.

A doc path is workspace-relative, or `lackjail:NAME.md` for a doc lackjail ships
with its bundled kits (read from the package, by a name compared with the
shipped ones, never joined onto a path).
"""

from __future__ import annotations

from importlib import resources

from lackjail.errors import KitError, ToolCallError
from lackjail.workspace.files import read_beneath
from lackjail.workspace.paths import show

MAX_DOC_BYTES = 1 << 20
BUNDLED = "lackjail:"  # the prefix of a doc shipped with lackjail


def resolve_doc(path: str, workspace=None, protection=None) -> str:
    """The text of doc PATH (from `Kit.docs_index()`), confined to the workspace like any tool
    read, under PROTECTION's read rules (a run's policy: `Protection.from_policy`; else the
    defaults); a `lackjail:` doc from the package.
    """
    if path.startswith(BUNDLED):
        return bundled_doc(path.removeprefix(BUNDLED))
    try:
        data = read_beneath(workspace, path, MAX_DOC_BYTES, protection)
    except ToolCallError as exc:
        raise KitError(f"cannot read doc {show(path)}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise KitError(f"doc {show(path)} is not UTF-8 text") from None


def bundled_doc(name: str) -> str:
    """The text of the doc NAME that lackjail ships; KitError when it ships none of that name."""
    folder = resources.files("lackjail.kit").joinpath("docs")
    shipped = {entry.name: entry for entry in folder.iterdir() if entry.name.endswith(".md")}
    if name not in shipped:
        raise KitError(
            f"lackjail ships no doc {show(name)}; its docs are "
            f"{', '.join(BUNDLED + n for n in sorted(shipped))}"
        )
    return shipped[name].read_text(encoding="utf-8")
