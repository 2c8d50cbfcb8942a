"""Tool calls checked against the tools' signatures before a program runs: how many arguments,
which keyword names, and the types of literal arguments.

A call the tool would refuse at run time (`read_file(path, 2)`, `grep(patern='x')`,
`read_file(42)`) is rejected with the line, the column and how to call the tool, so
a model fixes it before anything runs. Signatures come as data, so this module
knows nothing of kits:

    {call name: ((argument name, accepted types or None for any, required), ...), ...}

where a call name is a tool (`read_file`) or a pack member (`fs.read`) and the
accepted types are the base names of the spec's declared type ("str", "int",
"float" (an int too), "bool", "bytes", "list", "dict", "None"). Only literals are
typed: a name or an expression may hold anything until the program runs.
The host's validator uses it; the jail never loads it.
"""

import _ast as ast
from difflib import get_close_matches

RULE = "tool-call"

_LITERALS = {
    ast.JoinedStr: "str",
    ast.List: "list",
    ast.ListComp: "list",
    ast.Tuple: "list",  # a tuple crosses to the host as a list
    ast.Dict: "dict",
    ast.DictComp: "dict",
    ast.Set: "set",
    ast.SetComp: "set",
}


def check_calls(tree, signatures: dict, error) -> None:
    """Report, through ERROR(rule, message, line, col) (the validator's, which makes columns
    1-based characters), every call in TREE of a tool in SIGNATURES that its signature refuses."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.__class__ is ast.Call:
            call = _call_name(node.func)
            if call in signatures:
                _check(node, call, signatures[call], error)
        stack.extend(_children(node))


def _children(node):
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, ast.AST))


def _call_name(func) -> str | None:
    if func.__class__ is ast.Name:
        return func.id
    if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name:
        return f"{func.value.id}.{func.attr}"
    return None


def signature_text(call: str, params) -> str:
    """`read_file(path: str, [limit: int])`, as the kit's docs show it."""
    parts = []
    for name, types, required in params:
        shown = f"{name}: {' | '.join(types) if types else 'Any'}"
        parts.append(shown if required else f"[{shown}]")
    return f"{call}({', '.join(parts)})"


def _check(node, call, params, error) -> None:
    names = [name for name, _, _ in params]
    usage = f"call it as {signature_text(call, params)}"
    starred = any(arg.__class__ is ast.Starred for arg in node.args)
    spread = any(kw.arg is None for kw in node.keywords)
    fixed = []  # the arguments whose position is known: those before any *list
    for arg in node.args:
        if arg.__class__ is ast.Starred:
            break
        fixed.append(arg)
    here = (node.lineno, node.col_offset)
    if not starred and len(node.args) > len(names):
        takes = f"{len(names)} argument{'s' if len(names) != 1 else ''}"
        error(RULE, f"{call}() takes {takes} but {len(node.args)} were given; {usage}", *here)
        return
    given = {}
    for (name, types, _), arg in zip(params, fixed):
        given[name] = arg
        _check_type(call, name, types, arg, usage, error)
    for kw in node.keywords:
        if kw.arg is None:
            continue
        spot = (kw.lineno, kw.col_offset)
        if kw.arg not in names:
            close = get_close_matches(kw.arg, names, n=1)
            mean = f" (did you mean {close[0]!r}?)" if close else ""
            error(RULE, f"{call}() has no argument {kw.arg!r}{mean}; {usage}", *spot)
            continue
        if kw.arg in given:
            error(RULE, f"{call}() gets argument {kw.arg!r} twice; {usage}", *spot)
            continue
        given[kw.arg] = kw.value
        types = next(t for n, t, _ in params if n == kw.arg)
        _check_type(call, kw.arg, types, kw.value, usage, error)
    if starred or spread:
        return
    for name, _, required in params:
        if required and name not in given:
            error(RULE, f"{call}() is missing required argument {name!r}; {usage}", *here)


def _check_type(call, name, types, arg, usage, error) -> None:
    if types is None:
        return
    kind = _literal_type(arg)
    if kind is None or kind in types or (kind == "int" and "float" in types):
        return
    error(
        RULE,
        f"{call}() argument {name!r} must be {' | '.join(types)}, not {kind}; {usage}",
        arg.lineno,
        arg.col_offset,
    )


def _literal_type(node) -> str | None:
    """The type a literal argument has when it reaches the tool; None for anything else."""
    if node.__class__ is ast.UnaryOp and node.op.__class__ in (ast.USub, ast.UAdd):
        node = node.operand
        if node.__class__ is not ast.Constant or node.value.__class__ not in (int, float):
            return None
    if node.__class__ is ast.Constant:
        value = node.value
        return "None" if value is None else value.__class__.__name__
    return _LITERALS.get(node.__class__)
