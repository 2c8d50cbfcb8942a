"""Kits and tools, host side: specs, providers, kit resolution, and the mediated call path.

kit = resolve_kit("files", workspace=".")
session = kit.session(policy, workspace=".", approve=lambda call: ask_someone(call))
outcome = session.call("read_file", ["README.md"], {})   # hostile input, never raises
session.commit()   # or session.rollback(); session.diff() for --dry-run
"""

from lackjail.errors import CommitError, KitError, LimitExceeded, ToolCallError, ToolDenied
from lackjail.kit.assembly.docs import resolve_doc
from lackjail.kit.assembly.kit import Kit
from lackjail.kit.assembly.kitfile import format_kit, list_kits, read_kit, write_kit
from lackjail.kit.assembly.resolve import resolve_kit
from lackjail.kit.assembly.toolbox import Toolbox, default_toolbox
from lackjail.kit.calls.session import CallOutcome, ToolSession
from lackjail.kit.tools.docspec import parse_docstring, spec_from_function
from lackjail.kit.tools.packs import Pack, pack_from_module
from lackjail.kit.tools.providers import BuiltinProvider, Provider, PythonProvider, ToolContext
from lackjail.kit.tools.toolspec import ArgSpec, ToolSpec
from lackjail.workspace.transaction import StagingArea, Workspace

__all__ = [
    "ArgSpec",
    "BuiltinProvider",
    "CallOutcome",
    "CommitError",
    "Kit",
    "KitError",
    "LimitExceeded",
    "Pack",
    "Provider",
    "PythonProvider",
    "StagingArea",
    "ToolContext",
    "ToolDenied",
    "ToolCallError",
    "ToolSession",
    "ToolSpec",
    "Toolbox",
    "Workspace",
    "default_toolbox",
    "format_kit",
    "list_kits",
    "pack_from_module",
    "parse_docstring",
    "read_kit",
    "resolve_doc",
    "resolve_kit",
    "spec_from_function",
    "write_kit",
]
