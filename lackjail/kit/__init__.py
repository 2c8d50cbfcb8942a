"""Kits and tools, host side: specs, providers, kit resolution, and the mediated call path.

kit = resolve_kit("files", workspace=".")
session = kit.session(policy, workspace=".", approve=lambda call: ask_someone(call))
outcome = session.call("read_file", ["README.md"], {})   # hostile input, never raises
session.commit()   # or session.rollback(); session.diff() for --dry-run

The names below load on first use: resolving a kit imports neither the call path (sessions,
staged writes) nor the kits' documentation.
"""

from lackjail.kit.assembly.kit import Kit
from lackjail.lazy import exports

TYPE_CHECKING = False  # typing's own costs an import; the type checker reads this name alike
if TYPE_CHECKING:
    from lackjail.errors import CommitError, KitError, LimitExceeded, ToolCallError, ToolDenied
    from lackjail.kit.assembly.docs import resolve_doc
    from lackjail.kit.assembly.kitfile import format_kit, list_kits, read_kit, write_kit
    from lackjail.kit.assembly.toolbox import Toolbox, default_toolbox
    from lackjail.kit.calls.session import CallOutcome, ToolSession
    from lackjail.kit.tools.docspec import parse_docstring, spec_from_function
    from lackjail.kit.tools.packs import Pack, pack_from_module
    from lackjail.kit.tools.providers import BuiltinProvider, Provider, PythonProvider, ToolContext
    from lackjail.kit.tools.toolspec import ArgSpec, ToolSpec
    from lackjail.workspace.transaction import StagingArea, Workspace

_EXPORTS = {
    "CommitError": "lackjail.errors",
    "KitError": "lackjail.errors",
    "LimitExceeded": "lackjail.errors",
    "ToolCallError": "lackjail.errors",
    "ToolDenied": "lackjail.errors",
    "resolve_doc": "lackjail.kit.assembly.docs",
    "format_kit": "lackjail.kit.assembly.kitfile",
    "list_kits": "lackjail.kit.assembly.kitfile",
    "read_kit": "lackjail.kit.assembly.kitfile",
    "write_kit": "lackjail.kit.assembly.kitfile",
    "Toolbox": "lackjail.kit.assembly.toolbox",
    "default_toolbox": "lackjail.kit.assembly.toolbox",
    "CallOutcome": "lackjail.kit.calls.session",
    "ToolSession": "lackjail.kit.calls.session",
    "parse_docstring": "lackjail.kit.tools.docspec",
    "spec_from_function": "lackjail.kit.tools.docspec",
    "Pack": "lackjail.kit.tools.packs",
    "pack_from_module": "lackjail.kit.tools.packs",
    "BuiltinProvider": "lackjail.kit.tools.providers",
    "Provider": "lackjail.kit.tools.providers",
    "PythonProvider": "lackjail.kit.tools.providers",
    "ToolContext": "lackjail.kit.tools.providers",
    "ArgSpec": "lackjail.kit.tools.toolspec",
    "ToolSpec": "lackjail.kit.tools.toolspec",
    "StagingArea": "lackjail.workspace.transaction",
    "Workspace": "lackjail.workspace.transaction",
}

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


__getattr__ = exports(__name__, _EXPORTS, globals())


def resolve_kit(spec, workspace=None, extra_tools=None, toolbox=None, extra_label="extra_tools"):
    """One checked Kit from any kit form (see `lackjail.kit.assembly.resolve.resolve_kit`).
    The kit of no tools (None, "none", or such a Kit) is made here, without importing the
    modules of the tools and of kit files."""
    empty = isinstance(spec, Kit) and not spec.specs and not spec.packs and not spec.docs
    if extra_tools is None and toolbox is None and (spec is None or spec == "none" or empty):
        return spec if isinstance(spec, Kit) else Kit.empty()
    from lackjail.kit.assembly.resolve import resolve_kit as resolve

    return resolve(spec, workspace, extra_tools, toolbox, extra_label)
