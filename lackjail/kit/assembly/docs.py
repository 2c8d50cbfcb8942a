"""resolve_doc: read a kit's or tool's documentation, only from inside the workspace."""

from __future__ import annotations

from lackjail.errors import KitError, ToolCallError
from lackjail.workspace.paths import read_regular, resolve, show, workspace_root

MAX_DOC_BYTES = 1 << 20


def resolve_doc(path: str, workspace=None) -> str:
    """The text of doc PATH (from `Kit.docs_index()`), confined to the workspace like any tool read."""
    root = workspace_root(workspace)
    try:
        real, _ = resolve(root, path)
        data = read_regular(real, MAX_DOC_BYTES, path)
    except ToolCallError as exc:
        raise KitError(f"cannot read doc {show(path)}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise KitError(f"doc {show(path)} is not UTF-8 text") from None
