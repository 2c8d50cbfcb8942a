"""lackjail.plain: the one definition of plain data, used by every layer."""

import pytest

from lackjail import plain, protocol


def test_plain_values_are_copied_with_exact_types():
    value = [None, True, 1, 1.5, "é", b"\x00", (1, 2), {"k": [2**64 - 1, -(2**63)]}]
    out = plain.copy(value, "v", 1 << 20)
    assert out == [None, True, 1, 1.5, "é", b"\x00", [1, 2], {"k": [2**64 - 1, -(2**63)]}]
    assert type(out[6]) is list and out[6] is not value[6]


@pytest.mark.parametrize(
    "value, message",
    [
        ({"a": [1, 2**64]}, "parameter 'n'['a'][1] is an integer wider than 64 bits"),
        ([-(2**63) - 1], "parameter 'n'[0] is an integer wider than 64 bits"),
        ({1: 2}, "parameter 'n' has a key of type int; dict keys must be str"),
        ([object()], "parameter 'n'[0] is of type object, which is not plain data"),
        ({1, 2}, "parameter 'n' is of type set, which is not plain data"),
        ("x" * 100, "parameter 'n' is larger than 64 bytes"),
    ],
)
def test_problem_names_the_place(value, message):
    assert plain.problem(value, "parameter 'n'", 64).startswith(message)


def test_one_depth_cap():
    deep = None
    for _ in range(plain.MAX_DEPTH):
        deep = [deep]
    assert plain.problem(deep, "v", 1 << 20) is None
    assert "deeper than 64 levels" in plain.problem([deep], "v", 1 << 20)
    cyclic = []
    cyclic.append(cyclic)
    assert "deeper" in plain.problem(cyclic, "v", 1 << 20)
    # the wire carries any plain value inside a frame
    protocol.decode(protocol.encode(protocol.make_call(1, "t", [deep], {}))[4:])


def test_lenient_copy_renders_what_plain_data_cannot_hold():
    out = plain.copy({1: {3}, (1, 2): 2**70, "r": range(2)}, "v", 1 << 20, lenient=True)
    assert out == {1: [3], "(1, 2)": str(2**70), "r": "range(0, 2)"}


def test_a_dict_key_wider_than_64_bits_comes_back_as_its_text():
    """It was kept as an int key, which the wire cannot carry: the run ended `limit`."""
    out = plain.copy({2**70: 1, -(2**64): 2, 5: 3}, "v", 1 << 20, lenient=True)
    assert out == {str(2**70): 1, str(-(2**64)): 2, 5: 3}
    frame = protocol.encode(protocol.make_result("r1", "ok", out, [], 1.0, 1))  # was: refused
    assert protocol.decode(frame[4:])["value"] == out


def test_lone_surrogates_become_escapes():
    assert plain.copy(["a\udcff"], "v", 100) == ["a\\udcff"]


def test_item_cap_counts_all_levels():
    with pytest.raises(plain.PlainError, match="more than 10 list/dict items") as info:
        plain.copy([[1] * 6, [1] * 6], "v", 1 << 20, max_items=10)
    assert info.value.kind == "limit"


def test_status_table():
    assert set(protocol.STATUSES) == {
        "ok",
        "invalid",
        "error",
        "timeout",
        "memory",
        "limit",
        "killed",
        "denied",
    }
    assert [protocol.exit_code(s) for s in ("ok", "invalid", "error", "denied")] == [0, 2, 1, 1]
    assert protocol.keeps_child("error") and not protocol.keeps_child("limit")


class Text(str):
    """A str subclass: its methods are the sender's, so it is never passed on as it is."""


CALLS = [
    ((), {}),
    ((1, "a", 1.5, True, None, b"\x00"), {"k": "v", "n": 2}),
    ((2**64 - 1, -(2**63)), {}),
    ((2**64,), {}),  # wider than 64 bits
    (("é\ud800",), {}),  # not ASCII, a lone surrogate
    ((Text("x"),), {}),
    (([1, (2, 3)], {"k": [4]}), {"nested": {"a": 1}}),
    ((1,), {1: 2}),  # a key that is not a str
    ((1,), {"é": 2}),
    (("x" * 40,), {}),  # the budget: 3 * 8 + 8 + 40 = 72 bytes
    (("x" * 41,), {}),
    ((1, 2, 3, 4), {}),  # the item cap: 2 + 4 items
    ((1, 2, 3, 4, 5), {}),
]


def _outcome(fn):
    try:
        return "ok", fn()
    except plain.PlainError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("args, kwargs", CALLS)
def test_a_call_s_arguments_copy_as_the_pair_of_them_would(args, kwargs):
    """copy_call's short way for calls of scalars gives what copy() gives for [args, kwargs]:
    the same copy (types exact, tuples as lists), or the same error, within the same size
    and item budgets."""
    long = _outcome(lambda: plain.copy([list(args), kwargs], "the call", 72, max_items=6))
    short = _outcome(lambda: plain.copy_call(args, kwargs, "the call", 72, max_items=6))
    assert short == long
    if short[0] == "ok":
        copied_args, copied_kwargs = short[1]
        assert type(copied_args) is list and copied_kwargs is not kwargs
        assert all(type(v) is not Text for v in copied_args)


@pytest.mark.parametrize("value", [0, 2**64 - 1, "text", b"\x01", 1.5, True, None])
def test_a_scalar_copies_as_itself_within_its_budget(value):
    assert plain.copy(value, "v", 64) is value
    with pytest.raises(plain.PlainError, match="larger than"):
        plain.copy(value if type(value) in (str, bytes) else [value] * 8, "v", 7)
