"""The shipped custom rules: each rejects what it names, at the right place, and passes the rest."""

import pytest

from lackjail.lang import custom_rules as rules
from lackjail.lang import validate


def placed(source, rule):
    return [(e.rule, e.line, e.col) for e in validate(source, rules=[rule]).errors]


def test_no_loops():
    assert placed("x = 1\nfor i in range(2):\n    x += i", rules.no_loops) == [("no-loops", 2, 1)]
    assert placed("x = [i for i in range(2)]", rules.no_loops) == []


def test_max_depth_counts_if_and_for_blocks():
    nested = "for a in range(3):\n    if a:\n        for c in range(a):\n            x = c"
    assert placed(nested, rules.max_depth(2)) == [("max-depth", 3, 9)]
    assert placed(nested, rules.max_depth(3)) == []
    assert placed("if len('a'):\n    x = 1\nelif len('b'):\n    x = 2", rules.max_depth(1)) == [
        ("max-depth", 3, 1)
    ]


def test_max_calls():
    assert placed("x = len('a')\ny = len('b')\nprint(x, y)", rules.max_calls(2)) == [
        ("max-calls", 3, 1)
    ]
    assert placed("x = len('a')\ny = len('b')", rules.max_calls(2)) == []
    message = validate("print(len('a'))", rules=[rules.max_calls(1)]).errors[0].message
    assert "2 calls" in message and "limit is 1" in message


def test_no_nested_calls():
    assert placed("print(len('a'))", rules.no_nested_calls) == [("no-nested-calls", 1, 7)]
    assert placed("x = 1\nprint(x, sep=str(1))", rules.no_nested_calls) == [
        ("no-nested-calls", 2, 14)
    ]
    assert placed("n = len('a')\nprint(n)", rules.no_nested_calls) == []


def test_rules_only_tighten():
    assert not validate("import os", rules=[rules.no_loops]).valid
    combined = validate(
        "for i in range(3):\n    print(len(str(i)))",
        rules=[rules.no_loops, rules.no_nested_calls, rules.max_calls(1)],
    )
    assert {e.rule for e in combined.errors} == {"no-loops", "no-nested-calls", "max-calls"}


@pytest.mark.parametrize("factory", [rules.max_depth, rules.max_calls])
def test_rule_factories_reject_bad_limits(factory):
    with pytest.raises(ValueError):
        factory(-1)
    with pytest.raises(ValueError):
        factory("3")
