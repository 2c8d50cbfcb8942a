"""The Checker chooses a level only among the policy's, and a rejection names the higher level
that accepts the construct, worded for who reads it."""

import pytest

import lackjail
from lackjail.checker import Checker
from lackjail.policy import PolicyError, load_policy

DEF = "def f(x):\n    return x\n\nf(2)"
ONLY_LACKPY = {"name": "only", "languages": ["lackpy"]}


def messages(result):
    return [e.message for e in result.errors]


def test_a_level_the_policy_does_not_allow_is_refused():
    with pytest.raises(PolicyError) as caught:
        Checker(load_policy(ONLY_LACKPY), None, "extended")
    assert "not allowed by policy 'only'; it allows: lackpy" in str(caught.value)
    with pytest.raises(PolicyError):
        lackjail.Jail(policy=load_policy(ONLY_LACKPY), language="extended")  # before any jail


@pytest.mark.parametrize(
    ("audience", "hint"),
    [
        ("cli", "accepted at --language extended"),
        ("mcp", 'accepted with the language argument "extended"'),
        ("library", "accepted with language='extended'"),
    ],
)
def test_a_rejection_names_the_higher_level_that_accepts_it(audience, hint):
    result = Checker("default", None, audience=audience).check(DEF)
    assert not result.valid
    assert [(e.line, e.rule) for e in result.errors] == [
        (1, "forbidden-node"),
        (4, "unknown-call"),
    ]
    assert all(m.endswith(f"; {hint}") for m in messages(result))


def test_no_level_is_named_where_none_accepts_it_or_the_policy_allows_none():
    mixed = Checker("default", None, audience="cli").check("import os\nz = lambda q: q")
    assert not mixed.errors[0].message.endswith("extended")  # import: refused at every level
    assert mixed.errors[1].message.endswith("; accepted at --language extended")  # the lambda
    only = Checker(load_policy(ONLY_LACKPY), None, audience="cli").check(DEF)
    assert not only.valid and not any("accepted at" in m for m in messages(only))


def test_the_highest_level_names_none():
    from lackjail.lang import LANGUAGES

    top = Checker("default", None, LANGUAGES[-1], audience="cli")
    assert top.higher == ()
    assert not any("accepted at" in m for m in messages(top.check("import os")))


def test_lackjail_check_names_it_for_a_library_caller():
    result = lackjail.check(DEF)
    assert "accepted with language='extended'" in result.errors[0].message
    assert lackjail.check(DEF, language="extended").valid


def test_the_lowest_accepting_level_is_named_and_only_one_the_policy_allows():
    program = "import json\nclass Box:\n    pass\nwhile False:\n    pass\njson.dumps(1)"
    hints = [
        (e.line, e.message.rpartition("; ")[2])
        for e in Checker("default", None, audience="cli").check(program).errors
    ]
    assert (1, "accepted at --language python") in hints  # a facade import
    assert (2, "accepted at --language python") in hints  # a class
    assert (4, "accepted at --language extended") in hints  # while: extended is enough
    strict = Checker("strict", None, audience="cli").check(program)  # no python there
    assert not any("python" in e.message for e in strict.errors)
    assert any(e.message.endswith("accepted at --language extended") for e in strict.errors)
