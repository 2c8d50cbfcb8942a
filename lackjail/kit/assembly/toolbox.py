"""The toolbox: the providers, tools and packs a kit may name."""

from __future__ import annotations

import difflib

from lackjail.errors import KitError
from lackjail.kit.tools import builtin as builtin_tools
from lackjail.kit.tools.docspec import spec_from_function
from lackjail.kit.tools.packs import Pack
from lackjail.kit.tools.providers import BuiltinProvider, PythonProvider
from lackjail.kit.tools.toolspec import ToolSpec

PURE_MODULE = "lackjail.worker.puretools"
PURE_TOOLS = ("slugify", "word_count")
FS_PACK = {"read": "read_file", "find": "find_files", "write": "write_file", "edit": "edit_file"}


class Toolbox:
    """Registered providers, tools (by tool name) and packs (by namespace); every spec is checked on
    entry.
    """

    def __init__(self):
        self.providers: dict = {}
        self.tools: dict[str, ToolSpec] = {}
        self.packs: dict[str, Pack] = {}

    def register_provider(self, provider) -> None:
        name = getattr(provider, "name", None)
        if (
            not isinstance(name, str)
            or not name
            or not callable(getattr(provider, "check", None))
            or not callable(getattr(provider, "bind", None))
        ):
            raise KitError(
                "a provider needs a str `name` and `check(spec)` and `bind(spec, ctx)` methods"
            )
        self.providers[name] = provider

    def check(self, spec: ToolSpec) -> None:
        """Raise KitError unless SPEC's provider is registered and accepts it."""
        provider = self.providers.get(spec.provider)
        if provider is None:
            raise KitError(
                f"tool '{spec.name}': no provider '{spec.provider}'; registered providers: "
                f"{', '.join(sorted(self.providers))}"
            )
        provider.check(spec)

    def register_tool(self, spec: ToolSpec) -> None:
        if not isinstance(spec, ToolSpec):
            raise KitError(f"register_tool takes a ToolSpec, not {type(spec).__name__}")
        if spec.name in self.packs:
            raise KitError(f"tool '{spec.name}' would hide the pack of the same name; rename one")
        self.check(spec)
        self.tools[spec.name] = spec

    def register_pack(self, pack: Pack) -> None:
        if not isinstance(pack, Pack):
            raise KitError(f"register_pack takes a Pack, not {type(pack).__name__}")
        if pack.namespace in self.tools:
            raise KitError(
                f"pack '{pack.namespace}' would hide the tool of the same name; rename one"
            )
        for spec in pack.members.values():
            self.check(spec)
        self.packs[pack.namespace] = pack

    def known(self) -> list[str]:
        return sorted([*self.tools, *self.packs])

    def unknown(self, name: str, where: str) -> KitError:
        """The error for a name that is neither a tool nor a pack, with the closest known names."""
        close = difflib.get_close_matches(name, self.known(), n=3)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return KitError(
            f"unknown tool {name!r} in {where}{hint}; known tools and packs: "
            f"{', '.join(self.known())}"
        )


def default_toolbox() -> Toolbox:
    """A toolbox with the builtin and python providers, the file tools, the pure jail tools and the
    `fs` pack.
    """
    from lackjail.worker import puretools

    box = Toolbox()
    box.register_provider(BuiltinProvider())
    box.register_provider(PythonProvider())
    for name, fn in builtin_tools.IMPLEMENTATIONS.items():
        box.register_tool(
            spec_from_function(
                fn, name=name, provider="builtin", skip_params=1, **builtin_tools.SETTINGS[name]
            )
        )
    for name in PURE_TOOLS:
        box.register_tool(
            spec_from_function(
                getattr(puretools, name),
                name=name,
                provider="python",
                provider_config={"module": PURE_MODULE, "function": name},
                grade_w=0,
                effects_ceiling=0,
                placement="jail",
            )
        )
    box.register_pack(
        Pack("fs", "Files inside the workspace.", {m: box.tools[t] for m, t in FS_PACK.items()})
    )
    return box
