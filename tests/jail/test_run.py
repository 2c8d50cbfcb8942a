"""Runs through the real jail: values, output, parameters, errors and the value's trip back."""

import asyncio

from lackjail.api import AsyncJail, Result


def test_trivial_program_value(jail):
    r = jail.run("x = len([1, 2, 3])\nx")
    assert (r.status, r.value, r.errors) == ("ok", 3, [])
    assert r.isolation == "nsjail"
    assert r.mode == "fresh"
    assert r.stats["wall_ms"] > 0 and r.stats["max_rss_kb"] > 0


def test_print_output_and_params(jail):
    r = jail.run("print('hello', name)\nn * 2", params={"name": "world", "n": 21})
    assert r.status == "ok"
    assert r.output == "hello world\n"
    assert r.value == 42


def test_no_final_expression_gives_none(jail):
    r = jail.run("x = 1")
    assert r.status == "ok" and r.value is None


def test_runtime_error_has_line_and_col(jail):
    r = jail.run("x = 1\ny = x / 0")
    assert r.status == "error"
    assert r.errors[0]["line"] == 2
    assert r.errors[0]["col"] == 5
    assert "ZeroDivisionError" in r.errors[0]["message"]


def test_error_in_the_last_expression_has_its_line_and_col(jail):
    """The last expression becomes the value's assignment, placed where the expression is."""
    r = jail.run("x = 1\n[x,\n 1 / 0]")
    assert r.status == "error" and "ZeroDivisionError" in r.errors[0]["message"]
    assert (r.errors[0]["line"], r.errors[0]["col"]) == (3, 2)
    assert jail.run("x = 2\n[x,\n x * 3]").value == [2, 6]


def test_runtime_error_col_counts_characters_from_one(jail):
    r = jail.run("x = 1\ny = ['\u00e9\u00e9', x / 0]")  # 'éé' is 4 bytes, 2 characters
    assert (r.errors[0]["line"], r.errors[0]["col"]) == (2, 12)


def test_invalid_program_never_reaches_the_jail(jail):
    r = jail.run("import os\nos.system('id')")
    assert r.status == "invalid" and r.exit_code == 2
    assert r.errors[0]["line"] == 1


def test_bad_parameter_names_are_rejected(jail):
    assert jail.run("1", params={"len": 3}).status == "invalid"
    assert jail.run("1", params={"_x": 3}).status == "invalid"
    assert jail.run("1", params={"a b": 3}).status == "invalid"
    assert jail.run("1", params={"x": object()}).status == "invalid"


def test_fresh_state_per_run(jail):
    jail.run("d = {'a': 1}\nd")
    r = jail.run("d")
    assert r.status == "invalid" or (r.status == "error" and "NameError" in r.errors[0]["message"])


def test_deep_value_is_a_limit_not_a_crash(jail):
    r = jail.run("x = []\nfor i in range(1000000):\n    x = [x]\nx")
    assert r.status == "limit"
    assert "deeper" in r.errors[0]["message"]
    assert jail.run("1 + 1").value == 2


def test_cyclic_value_is_a_limit(jail):
    r = jail.run("x = []\nx.append(x)\nx")
    assert r.status == "limit"


def test_huge_string_value_is_a_limit(jail):
    r = jail.run("'a' * 20000000")
    assert r.status in ("limit", "memory")
    assert r.errors and r.errors[0]["message"]


def test_big_int_value_comes_back_as_text(jail):
    r = jail.run("10 * 10000000000000000000000")
    assert r.status == "ok" and r.value == "100000000000000000000000"


def test_plain_types_round_trip(jail):
    r = jail.run("[None, True, 1.5, 'é', b'\\x00\\xff', (1, 2), {'k': [1]}]")
    assert r.value == [None, True, 1.5, "é", b"\x00\xff", [1, 2], {"k": [1]}]


def test_non_plain_value_becomes_repr(jail):
    r = jail.run("range(3)")
    assert r.status == "ok" and r.value == "range(0, 3)"


def test_stream_yields_output_then_result(jail):
    events = list(jail.stream("print('a')\nprint('b')\n7"))
    assert isinstance(events[-1], Result) and events[-1].value == 7
    assert "".join(e["text"] for e in events[:-1] if e["event"] == "output") == "a\nb\n"


def test_async_twin(require_nsjail):
    async def main():
        async with AsyncJail(workers=1) as jail:
            results = await asyncio.gather(*(jail.run(f"{i} * 2") for i in range(5)))
            events = [e async for e in jail.stream("print('x')\n1")]
            return [r.value for r in results], events

    values, events = asyncio.run(main())
    assert values == [0, 2, 4, 6, 8]
    assert events[0] == {"event": "output", "text": "x\n"}
    assert isinstance(events[-1], Result) and events[-1].value == 1


def test_reuse_mode_says_so(require_nsjail):
    from lackjail.api import Jail

    with Jail(workers=1, mode="reuse") as jail:
        results = [jail.run(f"{i} + 1") for i in range(5)]
    assert [r.value for r in results] == [1, 2, 3, 4, 5]
    assert {r.mode for r in results} == {"reuse"}


def test_a_reused_child_validates_again_a_program_whose_code_it_kept(require_nsjail):
    """A reused child keeps its own verdict and code of a program only for the same text,
    names and level: the same text sent without the names it uses, or at a level that
    forbids it, is rejected by the jail itself (the pool sends it unchecked here), and the
    kept code runs with each run's own parameters."""
    from lackjail.policy import load_policy
    from lackjail.pool import Pool, Request

    program = "def double(v):\n    return v * 2\nx = double(n)\nx"
    pool = Pool(load_policy("default"), workers=1, mode="reuse")
    try:
        runs = [
            pool.execute(Request(program, {"n": 4}, language="extended")),
            pool.execute(Request(program, {"n": 5}, language="extended")),
            pool.execute(Request(program, {}, language="extended")),
            pool.execute(Request(program, {"n": 6}, language="lackpy")),
            pool.execute(Request(program, {"n": 7}, language="extended")),
        ]
    finally:
        pool.close()
    assert [r.status for r in runs] == ["ok", "ok", "invalid", "invalid", "ok"]
    assert [runs[0].value, runs[1].value, runs[4].value] == [8, 10, 14]
    assert "'n'" in runs[2].errors[0]["message"]
    assert runs[3].errors[0]["line"] == 1


def test_a_reused_child_gives_each_run_of_the_same_program_a_fresh_namespace(require_nsjail):
    from lackjail.api import Jail

    program = "seen = [len(items)]\nfor i in items:\n    seen.append(i)\nseen"
    with Jail(workers=1, mode="reuse") as jail:
        first = jail.run(program, params={"items": [1, 2]})
        second = jail.run(program, params={"items": [3]})
    assert (first.value, second.value) == ([2, 1, 2], [1, 3])
