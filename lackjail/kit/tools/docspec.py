"""Tool specs from docstrings (SimpleLLMFunc-style sections).

A tool's docstring is its prompt: a one-line summary, then optional sections

    Use: the one-line guidance shown next to the tool in packs
    Input: what the arguments are, in prose
    Output: what comes back
    Parameters:
        path (str): a path inside the workspace
        limit (int, optional): at most this many
    Best Practices:
        - one advice per bullet

`Args:` and `Returns:` are read as Parameters and Output. The function's
signature is authoritative for names, order and which arguments are
required; the docstring adds descriptions, and types where there are no
annotations.
"""

from __future__ import annotations

import inspect
import re

from lackjail.errors import KitError
from lackjail.kit.tools.toolspec import ArgSpec, ToolSpec

_SECTIONS = {
    "use": "use",
    "input": "input",
    "output": "output",
    "returns": "output",
    "parameters": "parameters",
    "args": "parameters",
    "arguments": "parameters",
    "best practices": "best_practices",
}
_HEADER = re.compile(
    r"(?i)\s*(use|input|output|returns|parameters|args|arguments|best practices)\s*:\s*(.*)"
)
_PARAM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)")


def parse_docstring(doc: str | None) -> dict:
    """Split a docstring into summary, use, input, output, parameters {name: (type, text)},
    best_practices.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    out = {
        "summary": "",
        "use": "",
        "input": "",
        "output": "",
        "parameters": {},
        "best_practices": [],
    }
    section, summary, body = "summary", [], {}
    for line in lines:
        header = _HEADER.fullmatch(line) if not line.startswith((" ", "\t")) else None
        if header:
            section = _SECTIONS[header.group(1).lower()]
            body.setdefault(section, [])
            if header.group(2).strip():
                body[section].append(header.group(2))
        elif section == "summary":
            if not line.strip() and summary:
                section = "description"
            elif line.strip():
                summary.append(line.strip())
        elif section != "description":
            body[section].append(line)
    out["summary"] = " ".join(summary)
    for key in ("use", "input", "output"):
        out[key] = " ".join(part.strip() for part in body.get(key, []) if part.strip())
    out["parameters"] = _parameters(body.get("parameters", []))
    out["best_practices"] = _bullets(body.get("best_practices", []))
    return out


def _parameters(lines) -> dict:
    params: dict = {}
    last = None
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _PARAM.fullmatch(line)
        if match and (last is None or indent <= params[last][2]):
            name, kind, text = match.groups()
            # "(int, optional)": the type; whether it is optional comes from the signature
            kinds = [
                p.strip() for p in (kind or "").split(",") if p.strip() not in ("", "optional")
            ]
            params[name] = [kinds[0] if kinds else None, text.strip(), indent]
            last = name
        elif last is not None:
            params[last][1] = f"{params[last][1]} {line.strip()}".strip()
    return {name: tuple(value[:2]) for name, value in params.items()}


def _bullets(lines) -> list[str]:
    items: list[str] = []
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text.startswith(("- ", "* ", "• ")) or not items:
            items.append(text.lstrip("-*• ").strip())
        else:
            items[-1] = f"{items[-1]} {text}"
    return items


def _annotation(value) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, type):
        return value.__name__
    return str(value).replace("typing.", "").replace("NoneType", "None")


def spec_from_function(
    fn,
    *,
    name: str,
    provider: str,
    provider_config: dict | None = None,
    skip_params: int = 0,
    **fields,
) -> ToolSpec:
    """A ToolSpec for FN: arguments from its signature, prose from its docstring.

    SKIP_PARAMS leading parameters are bound by the provider (e.g. the call context
    of built-in tools) and not shown to programs. FIELDS set the other spec fields.
    """
    doc = parse_docstring(fn.__doc__)
    try:
        params = list(inspect.signature(fn).parameters.values())[skip_params:]
    except (TypeError, ValueError):
        raise KitError(f"tool '{name}': cannot read the signature of {fn!r}") from None
    documented = dict(doc["parameters"])
    args = []
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise KitError(
                f"tool '{name}': parameter '{param.name}' is {param.kind.description}; tools take "
                "named parameters"
            )
        kind, text = documented.pop(param.name, (None, ""))
        args.append(
            ArgSpec(
                name=param.name,
                type=_annotation(param.annotation) or kind or "Any",
                description=text,
                required=param.default is inspect.Parameter.empty,
            )
        )
    if documented:
        raise KitError(
            f"tool '{name}': the docstring documents parameter(s) {', '.join(sorted(documented))} "
            f"that {getattr(fn, '__qualname__', fn)!r} does not take; fix the Parameters: section"
        )
    return ToolSpec(
        name=name,
        provider=provider,
        provider_config=provider_config or {},
        description=fields.pop("description", doc["summary"]),
        args=tuple(args),
        returns=fields.pop("returns", None)
        or _annotation(inspect.signature(fn).return_annotation)
        or "Any",
        guidance=fields.pop("guidance", doc["use"]),
        input_doc=doc["input"],
        output_doc=doc["output"],
        best_practices=tuple(doc["best_practices"]),
        **fields,
    )
