"""resolve_doc: read a kit's or tool's documentation, only from inside the workspace."""

from __future__ import annotations

from lackjail.errors import KitError, ToolCallError
from lackjail.workspace.files import read_beneath
from lackjail.workspace.paths import show

MAX_DOC_BYTES = 1 << 20


def resolve_doc(path: str, workspace=None, protection=None) -> str:
    """The text of doc PATH (from `Kit.docs_index()`), confined to the workspace like any tool
    read, under PROTECTION's read rules (a run's policy: `Protection.from_policy`; else the
    defaults).
    """
    try:
        data = read_beneath(workspace, path, MAX_DOC_BYTES, protection)
    except ToolCallError as exc:
        raise KitError(f"cannot read doc {show(path)}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise KitError(f"doc {show(path)} is not UTF-8 text") from None
