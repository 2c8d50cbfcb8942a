"""The extended level, the undefined-name rule and the rulebook: what each accepts and rejects."""

import pytest

from lackjail.lang import render, spec, validate
from lackjail.lang.grammar import EXCEPTION_NAMES
from lackjail.lang.rulebook import RULEBOOK

TOOLS = ("read_file",)
PARAMS = ("path",)
SIGNATURES = {"read_file": (("path", ("str",), True),)}  # read_file(path: str)


def rules(source, level="extended", **kw):
    kw.setdefault("tools", TOOLS)
    kw.setdefault("params", PARAMS)
    kw.setdefault("signatures", SIGNATURES)
    return sorted({e.rule for e in validate(source, language=level, **kw).errors})


def ok(source, level="extended"):
    result = validate(source, tools=TOOLS, params=PARAMS, language=level, signatures=SIGNATURES)
    assert result.valid, result.errors
    return result


def param_rules(flag: str) -> list[str]:
    """The rule ids a `--param NAME=VALUE` example trips, as `lackjail run` parses it."""
    from lackjail.checker import Checker
    from lackjail.cli.common import parse_params

    params = parse_params([flag.removeprefix("--param ")])
    return sorted({e.rule for e in Checker(kit=TOOLS).param_errors(params)})


def _boom(tree):
    raise RuntimeError("a broken custom rule")


def _validator_bug(monkeypatch):
    from lackjail.lang import validator

    def visit(*args):
        raise RuntimeError("a validator bug")

    monkeypatch.setattr(validator._Walker, "visit", visit)


# For each "described" rule: the program (and keywords) its rejected and accepted words describe.
DESCRIBED = {
    "input-type": (42, "x = 1", {}),
    "limit-parse": ("x = " + "not " * 5000 + "1", "x = not not 1", {}),
    "limit-source-bytes": ("#" * 65_537, "#" * 65_536, {}),
    "limit-nodes": ("x = [" + "1, " * 20_000 + "]", "x = [" + "1, " * 1_000 + "]", {}),
    "limit-depth": ("x = " + "[" * 150 + "]" * 150, "x = [[[]]]", {}),
    "limit-literal-len": ("x = '" + "a" * 32_769 + "'", "x = '" + "a" * 32_768 + "'", {}),
    "rule-error": ("x = 1", "x = 1", {"rules": (_boom,)}),
    "internal": ("x = 1", "x = 1", {}),
}


@pytest.mark.parametrize(("rule_id", "entry"), RULEBOOK.items())
def test_every_rule_has_examples_that_show_it(rule_id, entry, monkeypatch):
    """Every rule has a rejected and an accepted example; a program example is rejected with
    exactly that rule (and the accepted one passes), a --param example likewise, and the words
    of a described one hold for the program DESCRIBED builds from them."""
    description, rejected, accepted, level = entry
    assert description and isinstance(rejected, str) and isinstance(accepted, str)
    assert rejected.strip() and accepted.strip() and rejected != accepted
    if level == "param":
        assert param_rules(rejected) == [rule_id], rejected
        assert param_rules(accepted) == [], accepted
        return
    if level == "described":
        bad, good, options = DESCRIBED[rule_id]
        assert rules(good, "lackpy", **{k: v for k, v in options.items() if k != "rules"}) == []
        if rule_id == "internal":
            _validator_bug(monkeypatch)
        assert rules(bad, "lackpy", **options) == [rule_id], rejected
        return
    assert level in ("lackpy", "extended", "python")
    assert rule_id in rules(rejected, level), rejected
    ok(accepted, level)


ACCEPTED = [
    # helper functions, defaults, keyword-only, *args/**kwargs, recursion, forward calls
    "def f(a, b=2, *rest, c=3, **kw):\n    return a + b + c + len(rest) + len(kw)\nf(1)",
    "def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\nfact(5)",
    "def main():\n    return helper() + 1\ndef helper():\n    return 1\nmain()",
    "def f():\n    return later\nlater = 1\nf()",
    "def f(x: int) -> list:\n    return [x]\nf(1)",
    "def f():\n    pass\nf()",
    "def f():\n    '''doc'''\n    return\nf()",
    # while, break, continue, else clauses
    "n = 0\nwhile n < 3:\n    n += 1\nn",
    "n = 0\nwhile True:\n    n += 1\n    if n > 3:\n        break\nn",
    "out = []\nfor i in range(5):\n    if i % 2:\n        continue\n    out.append(i)\n"
    "else:\n    pass",
    "while False:\n    pass\nelse:\n    x = 1",
    # try/except/else/finally, `as e`, raise, assert
    "try:\n    x = int('a')\nexcept ValueError as e:\n    x = str(e)\nelse:\n    x = 0\n"
    "finally:\n    y = 1",
    "try:\n    x = read_file(path)\nexcept ToolError as e:\n    x = e.args[0]",
    "try:\n    x = 1\nexcept (KeyError, IndexError):\n    x = 2",
    "try:\n    x = 1\nexcept Exception:\n    raise",
    "def f(x):\n    if x < 0:\n        raise ValueError(f'negative: {x}')\n    return x\nf(1)",
    "def f(x):\n    try:\n        return 1 / x\n    except ZeroDivisionError as err:\n"
    "        raise ValueError('zero') from err\nf(1)",
    "assert 1 < 2, 'math'",
    "e = isinstance(ValueError('x'), Exception)",
    # generator expressions, lambda anywhere, for over anything
    "total = sum(x * 2 for x in range(10))",
    "ok = any(len(s) > 2 for s in ['a', 'bbb'])",
    "g = (x + later for x in range(3))\nlater = 1\nlist(g)",
    "f = lambda x, y=1: x + y\nf(1)",
    "fs = [lambda: i for i in range(3)]\nfs[0]()",
    "d = {'a': 1}\nbest = max(d, key=d.get)",
    "for ch in 'abc':\n    print(ch)",
    "for k, v in {'a': 1}.items():\n    print(k, v)",
    # names bound later in the same loop, or conditionally
    "prev = None\nfor i in range(3):\n    if i:\n        print(prev)\n    prev = i",
    "for i in range(3):\n    if i > 0:\n        print(last)\n    last = i",
    "if len('a'):\n    x = 1\nelse:\n    pass\nprint(x)",
    "i = 0\nwhile i < 3:\n    if i:\n        print(seen)\n    seen = i\n    i += 1",
]


@pytest.mark.parametrize("source", ACCEPTED)
def test_extended_accepts(source):
    ok(source)


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("import os", "forbidden-node"),
        ("from os import path", "forbidden-node"),
        ("class A:\n    x = 1", "forbidden-node"),
        ("x = 1\ndef f():\n    global x\n    x = 2", "forbidden-node"),
        ("def f():\n    x = 1\n    def g():\n        nonlocal x\n        x = 2", "forbidden-node"),
        ("def f():\n    yield 1", "forbidden-node"),
        ("def f():\n    yield from [1]", "forbidden-node"),
        ("async def f():\n    await g()", "forbidden-node"),
        ("with read_file(path) as f:\n    x = 1", "forbidden-node"),
        ("x = [1]\ndel x", "forbidden-node"),
        ("if (n := 1):\n    pass", "forbidden-node"),
        ("try:\n    x = 1\nexcept* ValueError:\n    pass", "forbidden-node"),
        ("def f[T](x):\n    return x", "forbidden-node"),
        ("@staticmethod\ndef f():\n    return 1", "decorator"),
        ("try:\n    x = 1\nexcept:\n    pass", "except-class"),
        ("try:\n    x = 1\nexcept BaseException:\n    pass", "except-class"),
        ("try:\n    x = 1\nexcept KeyboardInterrupt:\n    pass", "except-class"),
        ("try:\n    x = 1\nexcept SystemExit:\n    pass", "except-class"),
        ("try:\n    x = 1\nexcept (ValueError, GeneratorExit):\n    pass", "except-class"),
        ("errs = (ValueError,)\ntry:\n    x = 1\nexcept errs:\n    pass", "except-class"),
        ("raise BaseException('x')", "undefined-name"),
        ("return 1", "misplaced-statement"),
        ("break", "misplaced-statement"),
        ("if True:\n    continue", "misplaced-statement"),
        ("for i in range(2):\n    def f():\n        continue", "misplaced-statement"),
        ("def f():\n    try:\n        return 1\n    finally:\n        return 2", "finally-exit"),
        ("while True:\n    try:\n        pass\n    finally:\n        break", "finally-exit"),
        ("def f():\n    return 1\nx = f.__code__", "dunder-attribute"),
        ("def f():\n    return 1\nx = f.__globals__", "dunder-attribute"),
        (
            "try:\n    x = 1 / 0\nexcept Exception as e:\n    t = e.__traceback__",
            "dunder-attribute",
        ),
        ("try:\n    x = 1 / 0\nexcept Exception as e:\n    t = e.tb_frame", "internal-attribute"),
        ("g = (x for x in [1])\nf = g.gi_frame", "internal-attribute"),
        ("g = (x for x in [1])\nf = g.gi_code", "internal-attribute"),
        ("def f():\n    return 1\nc = f.func_code", "internal-attribute"),
        ("x = '{0.__class__}'.format(1)", "format-attribute"),
        ("def len(x):\n    return 1", "rebind-builtin"),
        ("def read_file(x):\n    return 1", "rebind-tool"),
        ("ValueError = 1", "rebind-builtin"),
        ("def f(eval):\n    return eval", "forbidden-name"),
        ("def __f():\n    return 1", "dunder-name"),
        ("try:\n    x = 1\nexcept ValueError as __e:\n    pass", "dunder-name"),
        ("f = lambda: 1\nx = f.__closure__", "dunder-attribute"),
        ("x = [1] @ [2]", "forbidden-operator"),
    ],
)
def test_extended_still_rejects(source, rule):
    assert rule in rules(source), (source, rules(source))


def test_lackpy_stays_the_seed_grammar():
    for source in ACCEPTED:
        if "def " in source or "while" in source or "try" in source:
            assert "forbidden-node" in rules(source, "lackpy"), source
    assert rules("f = lambda x: x", "lackpy") == ["lambda-position"]
    assert rules("x = sum(x for x in range(3))", "lackpy") == ["forbidden-node"]
    assert rules("for ch in 'abc':\n    print(ch)", "lackpy") == ["for-iter"]
    assert "ValueError" in EXCEPTION_NAMES
    assert rules("x = ValueError", "lackpy") == ["undefined-name"]


@pytest.mark.parametrize(
    ("source", "alternative"),
    [
        ("n = 0\nwhile n < 3:\n    n += 1", "use for over range(...) or a tool's result"),
        ("def f(x):\n    return x", "use a lambda as key= or inline the code"),
        ("try:\n    x = 1\nexcept ValueError:\n    x = 2", "check the value first"),
        ("for x in [1, 2]:\n    print(x)", "name a literal first"),
        ("import os", "call a tool of the kit"),
    ],
)
def test_messages_name_the_alternative(source, alternative):
    messages = " ".join(e.message for e in validate(source).errors)
    assert alternative in messages


def test_hints_follow_unknown_and_undefined_names():
    hint = {"read_file": "the bundled kit 'readonly' has it"}
    for level in ("lackpy", "extended"):
        errors = validate("x = read_file('a')", language=level, hints=hint).errors
        assert errors and errors[0].message.endswith("; the bundled kit 'readonly' has it")


@pytest.mark.parametrize(
    ("source", "place"),
    [
        ("x = y + 1", (1, 5)),
        ("print(x)\nx = 1", (1, 7)),
        ("x = [y for y in z]", (1, 17)),
        ("x = [z for y in [1]]", (1, 6)),
        ("x = 1\nx += undefined", (2, 6)),
        ("n += 1", (1, 1)),
        ("for i in range(2):\n    pass\nprint(i2)", (3, 7)),
        ("try:\n    x = 1\nexcept ValueError as e:\n    pass\nprint(e)", (5, 7)),
        ("def f():\n    return g()", (2, 12)),
        ("f = lambda: nothing\n", (1, 13)),
        ("g = (x + nothing for x in [1])", (1, 10)),
        ("x = 1\ndef f(a=later):\n    return a\nlater = 2", (2, 9)),
        ("for i in range(3):\n    x = later_outside\nlater_outside = 1", (2, 9)),
    ],
)
def test_undefined_names_are_placed(source, place):
    errors = validate(source, language="extended").errors
    assert [(e.rule, e.line, e.col) for e in errors] == [("undefined-name", *place)], errors


def test_comprehension_targets_do_not_leak():
    assert rules("x = [y for y in range(3)]\nprint(y)") == ["undefined-name"]
    assert rules("x = [y for y in range(3)]\nprint(y)", "lackpy") == ["undefined-name"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a target that shadows a binding leaves it bound
        ("y = 1\nx = [y for y in range(3)]\nprint(y)", []),
        # every name of a tuple or starred target is unbound after
        ("x = [a for a, *b in [(1, 2)]]\nprint(b)", ["undefined-name"]),
        # the inner comprehension's target is the outer's: unbound only when the outer ends
        ("x = [[y for y in z] + [y] for y in [1] for z in [[2]]]", []),
        ("x = [[y for y in z] for z in [[2]]]\nprint(z)", ["undefined-name"]),
        # a read waiting in a loop is not bound by a comprehension's target
        ("for i in range(2):\n    print(x)\n    y = [x for x in [1]]", ["undefined-name"]),
        # a function body read later: the comprehension's target is not the function's name
        (
            "def f():\n    g = lambda: w\n    x = [w for w in [1]]\n    return g",
            ["undefined-name"],
        ),
        ("fs = [lambda: w for w in [1]]", []),
        ("g = (w for w in [1])\nprint(w)", ["undefined-name"]),
    ],
)
def test_comprehension_targets_are_bound_only_inside(source, expected):
    assert rules(source) == expected


def test_a_comprehension_first_iterable_is_read_outside():
    assert rules("x = [y for y in y]") == ["undefined-name"]
    assert rules("y = [1]\nx = [y for y in y]") == []


def test_spec_describes_the_level_in_force():
    lackpy, extended = spec("lackpy"), spec("extended")
    assert lackpy["language"] == "lackpy" and extended["language"] == "extended"
    assert "While" not in lackpy["nodes"] and "While" in extended["nodes"]
    assert extended["exceptions"] and not lackpy["exceptions"]
    constructs = {c["construct"] for c in extended["forbidden_constructs"]}
    assert "'import'" in constructs and "'while'" not in constructs
    text = render(extended)
    for rule_id in RULEBOOK:
        assert rule_id in text
    assert "rejected (extended): " in text and "ToolError" in text
    with pytest.raises(ValueError, match="unknown language level"):
        spec("cobol")


NESTED_BREAK = (
    "def f():\n    for x in []:\n        try:\n            pass\n        finally:\n"
    "            for y in []:\n                break"
)


def test_the_walk_is_total_on_odd_extended_trees():
    for source in [
        "def f(*, a):\n    return a\nf(a=1)",
        "def f(a, /, b):\n    return a\nf(1, 2)",
        "try:\n    pass\nfinally:\n    pass",
        "while x := 1:\n    pass",
        "raise",
        "lambda: (yield)",
        "def f():\n    return (lambda: (yield))",
        NESTED_BREAK,
    ]:
        validate(source, language="extended")  # never raises
    ok(NESTED_BREAK)  # breaking a loop inside the finally block swallows nothing
