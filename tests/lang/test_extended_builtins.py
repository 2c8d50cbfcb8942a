"""What the extended level adds to builtins and operators, and what it still refuses."""

import pytest

from lackjail.lang import LEVELS, validate


def rules(source, level="extended"):
    return sorted({e.rule for e in validate(source, language=level).errors})


@pytest.mark.parametrize(
    "source",
    [
        "x = 2 ** 8",
        "x = 2 ** -1",
        "x = {1, 2} | {3}",
        "x = {1, 2} & {2} ^ {5}",
        "x = (1 << 4) >> 1",
        "x = ~5",
        "n = 3\nn **= 2\nn |= 8",
        "x = repr([1, 'a'])",
        "x = list(map(str, [1, 2]))",
        "x = list(filter(lambda v: v > 1, [1, 2, 3]))",
        "x = divmod(17, 5)",
        "x = pow(2, 10, 1000)",
        "x = [chr(97), ord('a'), hex(255), oct(8), bin(5)]",
        "x = next(iter([1, 2]))",
        "x = next((v for v in [1, 2] if v > 1), None)",
        "x = frozenset([1, 1])",
        "x = '{}: {}'.format('a', 1)",
        "x = '{0} {1!r} {name:>8}'.format(1, 'b', name='c')",
        "x = '{:{}}'.format('a', 5)",
        "x = '{:.2f}%'.format(12.345)",
        "x = '{{literal}}'.format()",
    ],
)
def test_extended_accepts_what_models_write(source):
    assert rules(source) == [], source


@pytest.mark.parametrize(
    "source",
    [
        "x = 2 ** 8",
        "x = {1} | {2}",
        "x = ~1",
        "x = repr(1)",
        "x = list(map(str, [1]))",
        "x = divmod(7, 2)",
        "x = '{}'.format(1)",
    ],
)
def test_the_lackpy_level_stays_the_seed_grammar(source):
    assert rules(source, "lackpy"), source


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        # format fields that look up an attribute or an index, at any depth
        ("x = '{0.real}'.format(1)", "format-attribute"),
        ("x = '{0[0]}'.format([1])", "format-attribute"),
        ("x = '{:{0.real}}'.format(1)", "format-attribute"),
        ("x = '{a.b}'.format(a=1)", "format-attribute"),
        # a format string that is not a literal: its fields cannot be checked
        ("f = '{}'\nx = f.format(1)", "format-attribute"),
        ("x = ('{' + '0.real' + '}').format(1)", "format-attribute"),
        ("x = str.format('{0.real}', 1)", "format-attribute"),
        ("x = '{}'.format_map({})", "format-attribute"),
        ("x = '{0'.format(1)", "format-attribute"),  # not a valid format string
        # still forbidden names and operators
        ("x = getattr(1, 'real')", "forbidden-name"),
        ("x = list(map(getattr, [1], ['real']))", "forbidden-name"),
        ("x = type(1)", "forbidden-name"),
        ("x = [1] @ [2]", "forbidden-operator"),
        # a dunder string built with chr reaches no sink
        (
            "s = chr(95) * 2 + 'class' + chr(95) * 2\nx = ('{0.' + s + '}').format(1)",
            "format-attribute",
        ),
    ],
)
def test_extended_still_refuses(source, rule):
    assert rule in rules(source), (source, rules(source))


def test_messages_name_the_level_in_force():
    errors = validate("x = [1] @ [2]\ny = eval('1')", language="extended").errors
    assert [e.message for e in errors] == [
        "operator '@' is not allowed in the extended level",
        "'eval' is a forbidden name in the extended level",
    ]
    errors = validate("x = 2 ** 2", language="lackpy").errors
    assert errors[0].message == "operator '**' is not allowed in lackpy"


def test_each_level_names_its_builtins_operators_and_forbidden_names_once():
    lackpy, extended = LEVELS["lackpy"], LEVELS["extended"]
    assert set(lackpy.builtins) < set(extended.builtins)
    assert not set(extended.builtins) & extended.forbidden_names
    assert "repr" in lackpy.forbidden_names and "repr" not in extended.forbidden_names
    assert "**" in lackpy.forbidden_operators.values()
    assert set(extended.forbidden_operators.values()) == {"@"}
