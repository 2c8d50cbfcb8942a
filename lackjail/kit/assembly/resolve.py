"""resolve_kit: every accepted kit form -> one checked Kit.

Forms: None or "none" (no tools); "NAME" (a bundled kit, else the tool or
pack of that name, else the workspace's .lackjail/kits/NAME.kit: a
repository's kit file never stands in for a tool the caller named);
"path/to/file.kit"; "a,b" or a list of tool/pack names (or ToolSpec/Pack
objects); a dict alias -> tool name; a nested dict
{"r": {"tool": "read_file", "approval": "required"}}; a Kit. `extra_tools`
(a list, "a,b" or a dict) is merged into any of them.
"""

from __future__ import annotations

import builtins
import os

from lackjail.errors import KitError
from lackjail.kit.assembly.kit import Kit
from lackjail.kit.assembly.kitfile import BUNDLED_DIR, KIT_NAME_RE, find_kit, list_kits, read_kit
from lackjail.kit.assembly.toolbox import Toolbox, default_toolbox
from lackjail.kit.tools.packs import Pack
from lackjail.kit.tools.toolspec import ToolSpec, check_identifier

NESTED_KEYS = ("tool", "description", "approval", "timeout_s")
FORMS = "None, 'none', a kit name, 'a,b', a list of tool names, a dict of alias -> tool, or a Kit"


class _Builder:
    """Collects call name -> spec for one kit, refusing clashes with a message naming the kit."""

    def __init__(self, box: Toolbox, where: str):
        self.box, self.where = box, where
        self.entries: dict[str, ToolSpec] = {}
        self.packs: dict[str, str] = {}

    def add(self, alias: str | None, target, overrides: dict | None = None) -> None:
        if isinstance(target, ToolSpec):
            self.box.check(target)
            self._tool(alias or target.name, target, overrides)
        elif isinstance(target, Pack):
            for spec in target.members.values():
                self.box.check(spec)
            self._pack(alias or target.namespace, target, None, overrides)
        elif isinstance(target, str):
            self._named(alias, target.strip(), overrides)
        elif callable(target):
            raise KitError(
                f"entry {alias or target!r} in {self.where} is a Python callable; pass "
                "callables as Jail(tools=[...]) or tools={'name': callable}"
            )
        else:
            raise KitError(
                f"entry {alias or target!r} in {self.where} must be a tool name, not "
                f"{type(target).__name__}"
            )

    def _named(self, alias, name, overrides):
        box = self.box
        namespace, dot, member = name.partition(".")
        if name in box.packs:
            self._pack(alias or name, box.packs[name], None, overrides)
        elif dot and namespace in box.packs and member in box.packs[namespace].members:
            if alias:
                self._tool(alias, box.packs[namespace].members[member], overrides)
            else:
                self._pack(namespace, box.packs[namespace], member, overrides)
        elif name in box.tools:
            self._tool(alias or name, box.tools[name], overrides)
        else:
            raise box.unknown(name, self.where)

    def _pack(self, namespace, pack: Pack, only: str | None, overrides):
        check_identifier(namespace, f"pack name in {self.where}:")
        self._claim_top(namespace, is_pack=True)
        about = (overrides or {}).get("description", pack.description)
        self.packs.setdefault(namespace, about)
        for member, spec in pack.members.items():
            if only is None or member == only:
                self._put(
                    f"{namespace}.{member}", _override(spec, overrides, keep_description=True)
                )

    def _tool(self, call, spec, overrides):
        check_identifier(call, f"tool name in {self.where}:")
        self._claim_top(call, is_pack=False)
        self._put(call, _override(spec, overrides, keep_description=False))

    def _claim_top(self, name, is_pack):
        if hasattr(builtins, name):
            raise KitError(
                f"name '{name}' in {self.where} would hide the builtin {name}(); pick another alias"
            )
        clash = name in self.packs if not is_pack else name in self.entries
        if clash:
            raise KitError(f"name '{name}' in {self.where} is both a tool and a pack; rename one")

    def _put(self, call, spec):
        old = self.entries.get(call)
        if old is not None and old != spec:
            raise KitError(
                f"name '{call}' in {self.where} names two different tools ('{old.name}' and "
                f"'{spec.name}'); give one an alias"
            )
        self.entries[call] = spec

    def add_form(self, form, label: str) -> None:
        """Add a list, "a,b" string or dict form (the forms extra_tools may take as well)."""
        if isinstance(form, str):
            names = [n.strip() for n in form.split(",")]
            if not all(names):
                raise KitError(
                    f"{label} {form!r} has an empty tool name; write 'a,b' with no empty entries"
                )
            form = names
        if isinstance(form, (ToolSpec, Pack)):
            form = [form]
        if isinstance(form, (list, tuple)):
            for item in form:
                self.add(None, item)
        elif isinstance(form, dict):
            for alias, value in form.items():
                if not isinstance(alias, str):
                    raise KitError(f"alias {alias!r} in {self.where} must be a str")
                if isinstance(value, dict):
                    unknown = set(value) - set(NESTED_KEYS)
                    if unknown:
                        raise KitError(
                            f"unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                            f"for '{alias}' in {self.where}; "
                            f"known keys: {', '.join(NESTED_KEYS)}"
                        )
                    self.add(
                        alias,
                        value.get("tool", alias),
                        {k: v for k, v in value.items() if k != "tool"},
                    )
                else:
                    self.add(alias, value)
        else:
            raise KitError(f"{label} must be {FORMS}; not {type(form).__name__}")


def _override(spec: ToolSpec, overrides: dict | None, keep_description: bool) -> ToolSpec:
    if not overrides:
        return spec
    changes = dict(overrides)
    if keep_description:
        changes.pop("description", None)
    return spec.replace(**changes) if changes else spec


def resolve_kit(
    spec,
    workspace=None,
    extra_tools=None,
    toolbox: Toolbox | None = None,
    extra_label: str = "extra_tools",
) -> Kit:
    """One checked Kit from any kit form; a bad kit raises KitError naming the key or tool and the
    fix. EXTRA_LABEL names EXTRA_TOOLS in those messages (`tools=` for a Jail's callables).
    """
    box = toolbox or (spec.toolbox if isinstance(spec, Kit) else None) or default_toolbox()
    folder = os.path.abspath(os.fspath(workspace)) if workspace is not None else os.getcwd()
    name, description, docs = "custom", "", ()
    if isinstance(spec, Kit):
        builder = _Builder(box, f"kit '{spec.name}'")
        name, description, docs = spec.name, spec.description, spec.docs
        builder.entries, builder.packs = dict(spec.specs), dict(spec.packs)
    elif spec is None or spec == "none":
        builder, name = _Builder(box, "kit 'none'"), "none"
    elif isinstance(spec, str) and "," not in spec and _is_kit_file(spec, folder, box):
        kit_file = read_kit(
            spec if spec.endswith(".kit") else find_kit(spec, folder),
            workspace=folder if workspace is None else workspace,
        )
        name, description, docs = kit_file.name, kit_file.description, kit_file.docs
        builder = _Builder(box, f"kit '{kit_file.name}' ({kit_file.source})")
        builder.add_form(list(kit_file.tools), "kit file")
    else:
        if (
            isinstance(spec, str)
            and "," not in spec
            and spec.strip() not in box.tools
            and spec.strip() not in box.packs
            and "." not in spec
        ):
            kits = ", ".join(n for n, _, _ in list_kits(folder)) or "none"
            raise KitError(
                f"no kit named {spec!r} (kits in {os.path.join(folder, '.lackjail', 'kits')} "
                f"and bundled: {kits}) and no tool or pack of that name; known tools and packs: "
                f"{', '.join(box.known())}"
            )
        builder = _Builder(box, "kit 'custom'")
        builder.add_form(spec, "a kit")
    if extra_tools is not None:
        builder.where = f"{extra_label} of kit '{name}'"
        builder.add_form(extra_tools, "extra_tools")
    return Kit(name, description, builder.entries, builder.packs, docs, box)


def _is_kit_file(spec: str, folder: str, box: Toolbox) -> bool:
    """True when SPEC names a kit file: a path ending in .kit, a bundled kit, or a workspace kit
    whose name is not a tool or pack of BOX (`--kit read_file` is the tool, whatever the
    workspace holds).
    """
    if spec.endswith(".kit"):
        return True
    if not KIT_NAME_RE.fullmatch(spec):
        return False
    if (BUNDLED_DIR / f"{spec}.kit").is_file():
        return True
    return spec not in box.tools and spec not in box.packs and find_kit(spec, folder) is not None
