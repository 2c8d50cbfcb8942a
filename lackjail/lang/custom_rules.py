"""Custom rules a caller adds to tighten the language (never to loosen it).

A rule is a callable taking the parsed `ast.Module` and returning a list of
messages, `(message, node)` pairs or ValidationErrors; an empty list passes.
Its id in reports is its `rule_id` attribute, else its name with '-' for '_'.
Rules run only on trees that passed the size caps, and walk iteratively.
"""

import ast

_BLOCKS = (ast.For, ast.If)


def no_loops(tree: ast.Module) -> list:
    """Reject every `for` statement (comprehensions stay allowed)."""
    return [
        ("'for' loops are not allowed here (rule no-loops)", node)
        for node in ast.walk(tree)
        if isinstance(node, ast.For)
    ]


no_loops.rule_id = "no-loops"  # type: ignore[attr-defined]


def max_depth(limit: int):
    """A rule rejecting `if`/`for` blocks nested more than LIMIT deep."""
    if type(limit) is not int or limit < 0:
        raise ValueError(f"max_depth needs a non-negative int, not {limit!r}")

    def check_depth(tree: ast.Module) -> list:
        found = []
        stack: list[tuple[ast.AST, int]] = [(tree, 0)]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, _BLOCKS):
                depth += 1
                if depth > limit:  # report the outermost block past the limit, once
                    found.append(
                        (f"blocks nest {depth} deep; the limit is {limit} (rule max-depth)", node)
                    )
                    continue
            stack.extend((child, depth) for child in ast.iter_child_nodes(node))
        return found

    check_depth.rule_id = "max-depth"  # type: ignore[attr-defined]
    return check_depth


def max_calls(limit: int):
    """A rule rejecting programs with more than LIMIT call expressions."""
    if type(limit) is not int or limit < 0:
        raise ValueError(f"max_calls needs a non-negative int, not {limit!r}")

    def check_calls(tree: ast.Module) -> list:
        calls = sorted(
            (node for node in ast.walk(tree) if isinstance(node, ast.Call)),
            key=lambda node: (node.lineno, node.col_offset),
        )
        if len(calls) <= limit:
            return []
        return [
            (
                f"program makes {len(calls)} calls; the limit is {limit} (rule max-calls)",
                calls[limit],
            )
        ]

    check_calls.rule_id = "max-calls"  # type: ignore[attr-defined]
    return check_calls


def no_nested_calls(tree: ast.Module) -> list:
    """Reject a call passed directly as an argument of another call: name the intermediate value."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                if isinstance(arg, ast.Call):
                    found.append(
                        ("assign the inner call to a variable first (rule no-nested-calls)", arg)
                    )
    return found


no_nested_calls.rule_id = "no-nested-calls"  # type: ignore[attr-defined]

# The shipped rules, as the spec lists them.
SHIPPED = {
    "no-loops": "no_loops: no `for` statements",
    "max-depth": "max_depth(n): `if`/`for` blocks nest at most n deep",
    "max-calls": "max_calls(n): at most n call expressions",
    "no-nested-calls": "no_nested_calls: no call directly as an argument of another call",
}
