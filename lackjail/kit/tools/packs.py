"""Packs: tools grouped under a namespace, each with a one-line guidance.

A program calls pack members as `fs.read(...)`; the kit shows the pack as its
namespace plus one signature-and-guidance line per member (the SimpleLLMFunc
"primitives" shape). Members are ordinary ToolSpecs, so a member may be a
built-in tool under a shorter name or a function whose docstring is its spec.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field

from lackjail.errors import KitError
from lackjail.kit.tools.docspec import spec_from_function
from lackjail.kit.tools.toolspec import ToolSpec, check_identifier


@dataclass(frozen=True)
class Pack:
    """A namespace of tools: member name -> spec (the spec's `name` stays the tool's own)."""

    namespace: str
    description: str = ""
    members: dict[str, ToolSpec] = field(default_factory=dict)

    def __post_init__(self):
        check_identifier(self.namespace, "pack namespace")
        if not self.members:
            raise KitError(f"pack '{self.namespace}' has no members")
        for member, spec in self.members.items():
            check_identifier(member, f"member of pack '{self.namespace}'")
            if not isinstance(spec, ToolSpec):
                raise KitError(
                    f"member '{member}' of pack '{self.namespace}' must be a ToolSpec, not "
                    f"{type(spec).__name__}"
                )


def pack_from_module(module_name: str, namespace: str, description: str = "", **fields) -> Pack:
    """A pack of the public functions defined in a module, each spec read from its docstring.

    FIELDS (grade_w, effects_ceiling, placement, approval, timeout_s, ...) apply to every member.
    """
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise KitError(f"pack '{namespace}': cannot import module '{module_name}': {exc}") from None
    members = {}
    for name, fn in inspect.getmembers(module, inspect.isfunction):
        if name.startswith("_") or fn.__module__ != module.__name__:
            continue
        members[name] = spec_from_function(
            fn,
            name=f"{namespace}.{name}",
            provider="python",
            provider_config={"module": module_name, "function": name},
            **fields,
        )
    return Pack(namespace, description or (inspect.getdoc(module) or "").split("\n", 1)[0], members)
