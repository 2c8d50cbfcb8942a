"""The language level as data (for prompts, docs, MCP and `lackjail spec`), built from the tables.

`spec(level)` describes the level in force; `render()` turns it into text for
people and model prompts.
"""

from . import grammar
from .custom_rules import SHIPPED
from .facades import FACADES, MAX_RECURSION_LIMIT
from .limits import ProgramLimits
from .rulebook import RULEBOOK
from .validator import check_language

VERSION = 2

SUMMARIES = {
    "lackpy": (
        "lackpy is a small subset of Python 3.12: assignments, if, for (over a call or a name), "
        "calls of kit tools, allowed builtins, parameters and methods of values, comprehensions, "
        "f-strings, and lambda only as a key= argument. The value of the last expression is the "
        "result. A tool error ends the run."
    ),
    "extended": (
        "lackpy extended is lackpy plus what programs usually need: def/return (no decorators), "
        "while, try/except/else/finally with builtin exception classes by name and `as e`, "
        "raise, assert, break/continue/pass, generator expressions, lambda anywhere, and for over "
        "any iterable. A failed tool call raises ToolError, which `except ToolError` (or "
        "`except Exception`) catches; a tool's stop verdict (denied, over budget) ends the run "
        "and cannot be caught. Still not allowed: import, class, global, nonlocal, yield, "
        "await, with, del, decorators, '_'-led and frame/code/generator attributes."
    ),
    "python": (
        "lackpy python is the extended level plus most of the Python that programs are written "
        "in: `import` and `from ... import` of a curated standard library (each module a facade "
        "holding the names listed under Modules, nothing else: no submodule, nothing private), "
        "classes (methods, class attributes, attributes assigned on objects, inheritance from "
        "the program's classes and exception classes, `super()`, decorators such as @dataclass, "
        "@property, @staticmethod, @classmethod, and the dunder methods listed below), "
        "decorators on functions, generator functions (`yield`, `yield from` in a def), `match` "
        "(a class pattern's keywords are attribute names, checked as any; positional "
        "sub-patterns only for int(n), str(s), list(l) ... the builtins that match themselves), "
        "`with`, "
        "`global`, `nonlocal`, `del`, `:=`, annotations "
        "(evaluated as Python does; never under `from __future__ import annotations`), "
        "f(**mapping), rebinding a builtin, `if __name__ == '__main__':`, '_'-led attributes "
        "the program gives its own objects (self._x = ...; namedtuple's _replace, _asdict ...; "
        "never the library's own, nor an enum's _x_), strings holding '__' (but not a "
        "dunder name such as '__class__'), and getattr/hasattr/setattr by a name that is not "
        "'_'-led nor a frame, code, generator, traceback, type or format attribute (checked "
        "on a literal, and refused when called). "
        "Still not allowed: reading or writing a dunder attribute (but super().__init__(...) "
        "and a name's text: f.__name__, x.__class__.__name__; a private self.__x is fine), "
        "defining other dunders (__getattr__, __getattribute__, __setattr__, __new__, __del__, "
        "__init_subclass__, __set_name__, __class_getitem__, __get__, __reduce__ ...), "
        "metaclasses and class keywords (type(name, bases, namespace) makes only what a class "
        "statement may: its namespace's keys are checked when it is called), "
        "delattr/vars/dir/globals/eval/exec/open, str.format on a string "
        "that is not a literal, async/await, try/except*; modules that touch "
        "files, processes, the network or code (os, pathlib, subprocess, socket, "
        "importlib, inspect, ...; sys only as a facade of what the interpreter is: "
        "sys.version_info, sys.maxsize, sys.platform ...; sys.stdout and sys.stderr write into "
        "the run's output; sys.setrecursionlimit stops at "
        f"{MAX_RECURSION_LIMIT:,}) -- a kit tool does that. "
        "`time.sleep` counts against the wall-clock limit; `random` is seeded afresh in "
        "every run's process. As in CPython: a name nothing binds raises NameError when it is "
        "reached; importing a module outside the standard library (numpy, requests ...) raises "
        "ModuleNotFoundError and a relative import ImportError, so `try: import numpy` / "
        "`except ImportError:` works; a bare `except:`, `except BaseException:` and "
        "return/break/continue in `finally` are allowed. A stop verdict (time, memory, output "
        "or a tool's) still ends the run: whatever catches it, the program's next line raises "
        "it again, and a MemoryError ends the run with `memory`, caught or not."
    ),
}

UNDEFINED = (
    "Every name a program reads is a builtin, a tool or a parameter, or is bound before it is "
    "read: earlier in the program, earlier or later in the same loop, or (for a function, "
    "lambda or generator body, which runs later) anywhere in an enclosing scope. Conditional "
    "bindings count; an `except ... as e` name ends with its handler. At the python level "
    "a name nothing binds is CPython's NameError when the program reaches it (a forbidden "
    "name it may import, sys, compile, reduce, must still be bound: import it)."
)

POSITIONS = (
    "line and col are 1-based and col counts characters, in text (file:line:col), "
    "JSON, SARIF and the library alike."
)


def spec(level: str = grammar.DEFAULT_LANGUAGE, limits: ProgramLimits | None = None) -> dict:
    """A fresh dict describing language LEVEL ("lackpy" or "extended"), with LIMITS
    (default caps if None). Raises ValueError for an unknown level."""
    extended = check_language(level) != "lackpy"
    python = level == "python"
    words = grammar.LEVELS[level]
    nodes = grammar.ALLOWED_NODES + (grammar.EXTENDED_NODES if extended else ())
    nodes += grammar.PYTHON_NODES if python else ()
    allowed = {node.__name__ for node in nodes}
    forbidden = {
        name: text for name, text in grammar.FORBIDDEN_CONSTRUCTS.items() if name not in allowed
    }
    return {
        "language": level,
        "version": VERSION,
        "summary": SUMMARIES[level],
        "nodes": sorted(allowed),
        "operators": {
            "binary": list(words.binary.values()),
            "unary": list(words.unary.values()),
            "compare": list(grammar.COMPARE_OPERATORS.values()),
            "boolean": list(grammar.BOOL_OPERATORS.values()),
            "forbidden": list(words.forbidden_operators.values()),
        },
        "builtins": list(words.builtins),
        "exceptions": list(words.exceptions),
        "modules": {name: list(names) for name, names in FACADES.items()} if python else {},
        "dunder_methods": sorted(grammar.DEFINABLE_DUNDERS) if python else [],
        "forbidden_names": sorted(words.forbidden_names),
        "forbidden_constructs": [
            {"construct": text, "instead": grammar.ALTERNATIVES.get(name, "")}
            for name, text in sorted(forbidden.items(), key=lambda item: item[1])
        ],
        "denied_attributes": {
            "prefix": ["_", *grammar.INTERNAL_ATTRIBUTE_PREFIXES],
            "names": sorted(grammar.FORMAT_ATTRIBUTES | grammar.INTERNAL_ATTRIBUTES),
        },
        "names": UNDEFINED,
        "rules": [
            {"id": rule_id, "description": text, "rejected": bad, "accepted": good, "level": lvl}
            for rule_id, (text, bad, good, lvl) in RULEBOOK.items()
        ],
        "custom_rules": [{"id": rule_id, "description": text} for rule_id, text in SHIPPED.items()],
        "limits": (limits or ProgramLimits()).to_dict(level),
        "positions": POSITIONS,
    }


def render(data: dict) -> str:
    """The spec as readable text, for people and prompts."""
    out = [f"{data['language']} (spec version {data['version']})", "", data["summary"], ""]

    def section(title, items):
        out.append(f"{title}:")
        out.extend(f"  {item}" for item in items)
        out.append("")

    ops = data["operators"]
    section("Allowed nodes", [", ".join(data["nodes"])])
    section(
        "Operators",
        [f"{kind}: {' '.join(ops[kind])}" for kind in ("binary", "unary", "compare", "boolean")]
        + ([f"not allowed: {' '.join(ops['forbidden'])}"] if ops["forbidden"] else []),
    )
    section("Builtins", [", ".join(data["builtins"])])
    if data["exceptions"]:
        section("Exception classes", [", ".join(data["exceptions"])])
    if data.get("modules"):
        section(
            "Modules (import X, import X as Y, from X import name or *; a dotted one only "
            "as from X.Y import name)",
            [f"{name}: {', '.join(names)}" for name, names in data["modules"].items()],
        )
    if data.get("dunder_methods"):
        section("Dunder methods a class may define", [", ".join(data["dunder_methods"])])
    section(
        "Not allowed",
        [
            f"{item['construct']}" + (f" -- instead: {item['instead']}" if item["instead"] else "")
            for item in data["forbidden_constructs"]
        ],
    )
    section("Forbidden names", [", ".join(data["forbidden_names"])])
    denied = data["denied_attributes"]
    section(
        "Denied attributes",
        [f"starting with: {' '.join(denied['prefix'])}", f"named: {' '.join(denied['names'])}"],
    )
    section("Names", [data["names"]])
    rules = []
    for rule in data["rules"]:
        rules.append(f"{rule['id']}: {rule['description']}")
        # a "described" example is words about the program, any other is the program itself
        show = str if rule["level"] == "described" else repr
        level = f" ({rule['level']})" if rule["level"] == "extended" else ""
        rules.append(f"    rejected{level}: {show(rule['rejected'])}")
        rules.append(f"    accepted{level}: {show(rule['accepted'])}")
    section("Rules (examples assume a tool read_file(path: str) and a parameter path)", rules)
    section(
        "Optional rules", [f"{rule['id']}: {rule['description']}" for rule in data["custom_rules"]]
    )
    section("Limits", [f"{name} = {value}" for name, value in data["limits"].items()])
    out.append(f"Positions: {data['positions']}")
    return "\n".join(out)
