"""The language as machine-readable data (for prompts, docs and `lackjail spec`), built from the tables."""

from .custom_rules import SHIPPED
from .grammar import (
    ALLOWED_BUILTINS,
    ALLOWED_NODES,
    BINARY_OPERATORS,
    BOOL_OPERATORS,
    COMPARE_OPERATORS,
    FORBIDDEN_CONSTRUCTS,
    FORBIDDEN_NAMES,
    FORBIDDEN_OPERATORS,
    FORMAT_ATTRIBUTES,
    INTERNAL_ATTRIBUTE_PREFIXES,
    INTERNAL_ATTRIBUTES,
    RULES,
    UNARY_OPERATORS,
)
from .limits import ProgramLimits

LANGUAGE = "lackpy"
VERSION = 1

SUMMARY = (
    "lackpy is a small subset of Python 3.12: assignments, if, for (over a call or a name), "
    "calls of kit tools, allowed builtins, parameters and methods of values, comprehensions, "
    "f-strings, and lambda only as a key= argument. The value of the last expression is the result."
)

POSITIONS = (
    "line and col are 1-based and col counts characters, in text (file:line:col), "
    "JSON, SARIF and the library alike."
)


def spec(limits: ProgramLimits | None = None) -> dict:
    """A fresh dict describing the language (with LIMITS, default caps if None)."""
    return {
        "language": LANGUAGE,
        "version": VERSION,
        "summary": SUMMARY,
        "nodes": sorted(node.__name__ for node in ALLOWED_NODES),
        "operators": {
            "binary": list(BINARY_OPERATORS.values()),
            "unary": list(UNARY_OPERATORS.values()),
            "compare": list(COMPARE_OPERATORS.values()),
            "boolean": list(BOOL_OPERATORS.values()),
            "forbidden": list(FORBIDDEN_OPERATORS.values()),
        },
        "builtins": list(ALLOWED_BUILTINS),
        "forbidden_names": sorted(FORBIDDEN_NAMES),
        "forbidden_constructs": sorted(set(FORBIDDEN_CONSTRUCTS.values())),
        "denied_attributes": {
            "prefix": ["_", *INTERNAL_ATTRIBUTE_PREFIXES],
            "names": sorted(FORMAT_ATTRIBUTES | INTERNAL_ATTRIBUTES),
        },
        "rules": [{"id": rule_id, "description": text} for rule_id, text in RULES.items()],
        "custom_rules": [{"id": rule_id, "description": text} for rule_id, text in SHIPPED.items()],
        "limits": (limits or ProgramLimits()).to_dict(),
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
        + [f"not allowed: {' '.join(ops['forbidden'])}"],
    )
    section("Builtins", [", ".join(data["builtins"])])
    section("Not allowed", [", ".join(data["forbidden_constructs"])])
    section("Forbidden names", [", ".join(data["forbidden_names"])])
    denied = data["denied_attributes"]
    section(
        "Denied attributes",
        [f"starting with: {' '.join(denied['prefix'])}", f"named: {' '.join(denied['names'])}"],
    )
    section("Rules", [f"{rule['id']}: {rule['description']}" for rule in data["rules"]])
    section(
        "Optional rules", [f"{rule['id']}: {rule['description']}" for rule in data["custom_rules"]]
    )
    section("ProgramLimits", [f"{name} = {value}" for name, value in data["limits"].items()])
    out.append(f"Positions: {data['positions']}")
    return "\n".join(out)
