"""Tool specs: what a tool takes and returns, how far it reaches, and where it runs.

A spec is checked when it is made, so a bad one fails at kit resolution with
a KitError naming the tool and the field, never in the middle of a run.
`ToolSpec.bind` checks one call's hostile arguments against the spec.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
import re
from dataclasses import dataclass, field
from types import MappingProxyType

from lackjail.errors import KitError, ToolCallError

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 3600.0
APPROVALS = ("never", "required")
PLACEMENTS = ("host", "jail")
JAIL_MODULE_PREFIX = "lackjail.worker."  # the only package a jail can import tools from
# Declared argument types and the exact Python types they accept.
TYPES = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "bytes": (bytes,),
    "list": (list,),
    "dict": (dict,),
    "None": (type(None),),
    "Any": None,
}
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
TOOL_NAME_RE = re.compile(rf"{_IDENT}(\.{_IDENT})?")
MODULE_RE = re.compile(rf"{_IDENT}(\.{_IDENT})*")


def check_identifier(name, what: str) -> None:
    """Raise KitError unless NAME can be bound in a program
    (identifier, no keyword, no leading _).
    """
    if (
        not isinstance(name, str)
        or not re.fullmatch(_IDENT, name)
        or keyword.iskeyword(name)
        or name.startswith("_")
    ):
        raise KitError(
            f"{what} {name!r} is not a usable name; use letters, digits and _ (not starting with _ "
            "or a digit)"
        )


@functools.lru_cache(maxsize=1024)
def parse_type(text: str, where: str) -> tuple[str, ...]:
    """The base type names of a declared type ("list[str] | None" -> ("list", "None"))."""
    if not isinstance(text, str) or not text.strip():
        raise KitError(f"{where} has no type; use one of {', '.join(TYPES)}")
    optional = re.fullmatch(r"\s*Optional\[(.*)\]\s*", text)
    parts, depth, current = [], 0, ""
    for char in optional.group(1) + "|None" if optional else text:
        depth += char == "["
        depth -= char == "]"
        if char == "|" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    bases = []
    for part in parts:
        base = part.strip().split("[", 1)[0].strip()
        base = {"NoneType": "None", "typing.Any": "Any", "object": "Any"}.get(base, base)
        if base not in TYPES:
            raise KitError(
                f"{where} has type {text.strip()!r}; tools take plain data: use one of "
                f"{', '.join(TYPES)}"
            )
        bases.append(base)
    return tuple(bases)


def type_accepts(text: str, value) -> bool:
    """True when VALUE's exact type is one the declared type allows (generic parameters are not
    checked).
    """
    kinds = _exact_types(text)
    return kinds is None or type(value) in kinds


@functools.lru_cache(maxsize=1024)
def _exact_types(text: str) -> frozenset | None:
    """The exact types a declared type allows, worked out once per type (None: any)."""
    kinds: set = set()
    for base in parse_type(text, "argument"):
        allowed = TYPES[base]
        if allowed is None:
            return None
        kinds.update(allowed)
    return frozenset(kinds)


@dataclass(frozen=True)
class ArgSpec:
    """One argument: name, declared type, description, and whether a call must give it."""

    name: str
    type: str = "Any"
    description: str = ""
    required: bool = True

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _arg(value, tool: str) -> ArgSpec:
    if isinstance(value, ArgSpec):
        return value
    if isinstance(value, dict):
        unknown = set(value) - {"name", "type", "description", "required"}
        if unknown or "name" not in value:
            raise KitError(
                f"argument of tool '{tool}' must have keys name, type, description, required; got "
                f"{sorted(value)}"
            )
        return ArgSpec(**value)
    raise KitError(
        f"argument of tool '{tool}' must be an ArgSpec or a dict, not {type(value).__name__}"
    )


@dataclass(frozen=True)
class ToolSpec:
    """Everything the controller and the prompts know about one tool.

    grade_w: 0 pure, 1 read, 2 scoped exec, 3 write; effects_ceiling on the same scale.
    placement "jail" is for pure grade-0 tools from the worker package: they run in
    the jail and skip the round trip. guidance is the one-line "Use:" hint of packs.
    """

    name: str
    provider: str
    provider_config: dict = field(default_factory=dict)
    description: str = ""
    args: tuple = ()
    returns: str = "Any"
    grade_w: int = 3
    effects_ceiling: int = 3
    docs: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    approval: str = "never"
    placement: str = "host"
    guidance: str = ""
    input_doc: str = ""
    output_doc: str = ""
    best_practices: tuple = ()

    def __post_init__(self):
        name = self.name
        if not isinstance(name, str) or not TOOL_NAME_RE.fullmatch(name):
            raise KitError(
                f"tool name {name!r} is not valid; use an identifier like 'read_file' or "
                "'pack.member'"
            )
        for part in name.split("."):
            check_identifier(part, "tool name")
        if not isinstance(self.provider, str) or not self.provider:
            raise KitError(
                f"tool '{name}' has no provider; set provider='builtin', 'python' or a registered "
                "one"
            )
        if not isinstance(self.provider_config, (dict, MappingProxyType)):
            raise KitError(f"tool '{name}': provider_config must be a dict")
        object.__setattr__(self, "provider_config", MappingProxyType(dict(self.provider_config)))
        args = tuple(_arg(a, name) for a in self.args)
        object.__setattr__(self, "args", args)
        seen, optional_seen = set(), False
        for arg in args:
            check_identifier(arg.name, f"argument of tool '{name}'")
            if type(arg.required) is not bool or not isinstance(arg.description, str):
                raise KitError(
                    f"argument '{arg.name}' of tool '{name}': required must be true/false and "
                    "description a str"
                )
            if arg.name in seen:
                raise KitError(f"tool '{name}' declares argument '{arg.name}' twice")
            seen.add(arg.name)
            parse_type(arg.type, f"argument '{arg.name}' of tool '{name}'")
            if arg.required and optional_seen:
                raise KitError(
                    f"tool '{name}': required argument '{arg.name}' follows an optional one"
                )
            optional_seen |= not arg.required
        parse_type(self.returns, f"the return of tool '{name}'")
        for key in ("grade_w", "effects_ceiling"):
            value = getattr(self, key)
            if type(value) is not int or not 0 <= value <= 3:
                raise KitError(
                    f"tool '{name}': {key} must be 0 (pure), 1 (read), 2 (scoped exec) or 3 "
                    f"(write), not {value!r}"
                )
        timeout = self.timeout_s
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not 0 < timeout <= MAX_TIMEOUT_S
        ):
            raise KitError(
                f"tool '{name}': timeout_s must be seconds in (0, {MAX_TIMEOUT_S:g}], not "
                f"{timeout!r}"
            )
        object.__setattr__(self, "timeout_s", float(timeout))
        if self.approval not in APPROVALS:
            raise KitError(
                f"tool '{name}': approval must be one of {', '.join(APPROVALS)}, not "
                f"{self.approval!r}"
            )
        if self.placement not in PLACEMENTS:
            raise KitError(
                f"tool '{name}': placement must be one of {', '.join(PLACEMENTS)}, not "
                f"{self.placement!r}"
            )
        if self.placement == "jail":
            self._check_jail_placement()
        if self.docs is not None and (
            not isinstance(self.docs, str) or not self.docs or "\x00" in self.docs
        ):
            raise KitError(f"tool '{name}': docs must be a path inside the workspace")
        object.__setattr__(self, "best_practices", tuple(str(b) for b in self.best_practices))

    def _check_jail_placement(self):
        module = self.provider_config.get("module", "")
        if self.grade_w or self.effects_ceiling:
            raise KitError(
                f"tool '{self.name}': placement 'jail' is only for pure tools (grade_w 0, "
                "effects_ceiling 0)"
            )
        if (
            self.provider != "python"
            or not isinstance(module, str)
            or not MODULE_RE.fullmatch(module)
            or not module.startswith(JAIL_MODULE_PREFIX)
        ):
            raise KitError(
                f"tool '{self.name}': placement 'jail' needs provider 'python' with a module in "
                f"{JAIL_MODULE_PREFIX}* (the jail holds only the worker package); got {module!r}"
            )

    @property
    def jail_target(self) -> tuple[str, str]:
        """(module, function) the jail imports for a placement 'jail' tool."""
        return self.provider_config["module"], self.provider_config.get(
            "function", self.name.rpartition(".")[2]
        )

    def replace(self, **changes) -> ToolSpec:
        return dataclasses.replace(self, **changes)

    def signature(self, call_name: str | None = None) -> str:
        """`name(a: str, [b: int]) -> list` as a program calls it."""
        parts = [
            f"{a.name}: {a.type}" if a.required else f"[{a.name}: {a.type}]" for a in self.args
        ]
        return f"{call_name or self.name}({', '.join(parts)}) -> {self.returns}"

    def to_dict(self) -> dict:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["provider_config"] = dict(self.provider_config)
        data["args"] = [a.to_dict() for a in self.args]
        data["best_practices"] = list(self.best_practices)
        return data

    def bind(self, call_name: str, args: list, kwargs: dict) -> dict:
        """Map a call's positional and keyword arguments to names, checking arity and types.

        ARGS and KWARGS are plain copies of what the program sent; raises ToolCallError.
        """
        names = [a.name for a in self.args]
        if len(args) > len(names):
            raise ToolCallError(
                f"{call_name}() takes {len(names)} argument(s) ({', '.join(names) or 'none'}) but "
                f"{len(args)} were given"
            )
        bound = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise ToolCallError(
                    f"{call_name}() got an unexpected keyword argument {key[:60]!r}; it takes: "
                    f"{', '.join(names) or 'nothing'}"
                )
            if key in bound:
                raise ToolCallError(f"{call_name}() got multiple values for argument '{key}'")
            bound[key] = value
        for arg in self.args:
            if arg.name not in bound:
                if arg.required:
                    raise ToolCallError(f"{call_name}() is missing required argument '{arg.name}'")
                continue
            if not type_accepts(arg.type, bound[arg.name]):
                raise ToolCallError(
                    f"{call_name}() argument '{arg.name}' must be {arg.type}, not "
                    f"{type(bound[arg.name]).__name__}"
                )
        return bound


def grade_of(specs) -> dict:
    """Element-wise max of the tools' grades: {"w": world coupling, "d": effects ceiling}; {0, 0}
    for no tools.
    """
    specs = list(specs)
    return {
        "w": max((s.grade_w for s in specs), default=0),
        "d": max((s.effects_ceiling for s in specs), default=0),
    }
