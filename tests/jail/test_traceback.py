"""A run error carries the program's call chain: its own frames only, capped, host-checked."""

import json

import pytest

from lackjail.api import Jail
from lackjail.pool.run import _errors_ok
from lackjail.protocol import MAX_FRAMES, MAX_FUNCTION

NESTED = """\
def inner(x):
    return 10 // x

def outer(y):
    return inner(y - 1)

outer(1)
"""


@pytest.fixture(scope="module")
def extended(require_nsjail, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ws")
    (folder / "here.txt").write_text("hi\n")
    with Jail(kit="readonly", workers=1, language="extended", workspace=folder) as j:
        yield j


def frames(result):
    return [(f["function"], f["line"], f.get("col")) for f in result.errors[0]["traceback"]]


@pytest.mark.nsjail
def test_the_chain_of_program_frames_outermost_first(extended):
    r = extended.run(NESTED)
    assert r.status == "error" and "ZeroDivisionError" in r.errors[0]["message"]
    assert frames(r) == [("<module>", 7, 1), ("outer", 5, 12), ("inner", 2, 12)]
    assert (r.errors[0]["line"], r.errors[0]["col"]) == (2, 12)  # the innermost frame


@pytest.mark.nsjail
def test_a_tool_error_shows_no_frame_of_lackjail(extended):
    program = "def load(p):\n    return read_file(p)\n\nload('missing.txt')"
    r = extended.run(program)
    assert r.status == "error" and r.errors[0]["message"].startswith("read_file:")
    assert frames(r) == [("<module>", 4, 1), ("load", 2, 12)]
    text = json.dumps(r.to_dict())
    assert "runner" not in text and "lackjail/" not in text and "site-packages" not in text


@pytest.mark.nsjail
def test_lackpy_level_lambda_frames(require_nsjail):
    with Jail(policy="default", workers=1) as jail:
        r = jail.run("xs = [2, 0, 1]\nys = sorted(xs, key=lambda x: 1 / x)\nys")
    assert r.status == "error"
    assert frames(r) == [("<module>", 2, 6), ("<lambda>", 2, 31)]


@pytest.mark.nsjail
def test_runaway_recursion_keeps_the_innermost_frames(extended):
    r = extended.run("def f(n):\n    return f(n + 1)\n\nf(0)")
    assert r.status == "error" and "RecursionError" in r.errors[0]["message"]
    chain = r.errors[0]["traceback"]
    assert len(chain) == MAX_FRAMES and r.errors[0]["traceback_omitted"] > 0
    assert {f["function"] for f in chain} == {"f"}  # the outer <module> frame is the one cut


@pytest.mark.nsjail
def test_a_long_function_name_is_cut_not_a_broken_result(extended):
    name = "f" * (MAX_FUNCTION + 50)
    r = extended.run(f"def {name}():\n    return 1 / 0\n\n{name}()")
    assert r.status == "error" and "ZeroDivisionError" in r.errors[0]["message"]
    assert r.errors[0]["traceback"][1]["function"] == "f" * MAX_FUNCTION


@pytest.mark.nsjail
def test_an_error_at_top_level_has_a_one_frame_chain(extended):
    r = extended.run("x = 1\ny = x / 0")
    assert frames(r) == [("<module>", 2, 5)]


@pytest.mark.nsjail
def test_a_frame_of_an_earlier_session_run_says_so(extended):
    """Its line is in the program that defined it: marked, never placed in this one."""
    with extended.session() as session:
        assert session.run("def helper(x):\n    y = 1\n    return 10 // x").ok
        r = session.run("z = 0\n\nhelper(z)")
    assert r.status == "error" and "ZeroDivisionError" in r.errors[0]["message"]
    assert r.errors[0]["traceback"] == [
        {"function": "<module>", "line": 3, "col": 1},
        {"function": "helper", "line": 3, "earlier": True},
    ]
    assert (r.errors[0]["line"], r.errors[0]["col"]) == (3, 1)  # the call in this run


def error(**extra):
    return [{"message": "boom", "line": 1, "col": 1, **extra}]


GOOD = [
    {"function": "f", "line": 2, "col": 3},
    {"function": "g", "line": 4},
    {"function": "h", "line": 9, "earlier": True},
]


@pytest.mark.parametrize(
    "bad",
    [
        error(traceback="f:2"),
        error(traceback=[{"function": "f", "line": 2, "col": 3, "file": "/etc/passwd"}]),
        error(traceback=[{"function": "f"}]),
        error(traceback=[{"function": 7, "line": 2}]),
        error(traceback=[{"function": "f", "line": True}]),
        error(traceback=[{"function": "f", "line": 2, "col": 1.5}]),
        error(traceback=[{"function": "x" * (MAX_FUNCTION + 1), "line": 2}]),
        error(traceback=[{"function": "f", "line": 2}] * (MAX_FRAMES + 1)),
        error(traceback=GOOD, traceback_omitted="many"),
        error(traceback=[["f", 2, 3]]),
        error(traceback=[{"function": "f", "line": 2, "earlier": False}]),
    ],
)
def test_the_host_refuses_a_malformed_traceback(bad):
    assert not _errors_ok(bad)


@pytest.mark.parametrize(
    ("errors", "status"),
    [
        (error(traceback=GOOD, traceback_omitted=3), "error"),
        (error(traceback=[{"function": "f", "line": "2"}]), "malformed"),
        (error(traceback=[{"function": "x" * 10_000, "line": 1}]), "malformed"),
    ],
)
def test_a_hostile_jail_s_traceback_fails_only_that_run(tmp_path, errors, status):
    from fakejail import fake_jail, run_on

    steps = [["spawn", 1], ["ready", 1], ["read_run", 1], ["result_errors", [1, errors]]]
    with fake_jail(tmp_path, steps) as jail:
        outcome = run_on(jail)
    if status == "error":
        assert (outcome.status, outcome.errors, outcome.retire) == ("error", errors, False)
    else:
        assert outcome.status == "error" and outcome.retire
        assert outcome.errors == [{"message": "the jail sent a malformed result"}]


def test_the_host_takes_a_well_formed_traceback():
    assert _errors_ok(error(traceback=GOOD, traceback_omitted=3))
    assert _errors_ok(error(traceback=[]))


@pytest.mark.nsjail
def test_python_level_methods_and_no_frame_of_a_facade(require_nsjail):
    program = (
        "import json\n"
        "class Account:\n"
        "    def __init__(self, balance):\n"
        "        self.balance = balance\n"
        "    def load(self, text):\n"
        "        return json.loads(text)\n"
        "\n"
        "Account(1).load('{bad')\n"
    )
    with Jail(workers=1, language="python") as jail:
        r = jail.run(program)
    assert r.status == "error" and "JSONDecodeError" in r.errors[0]["message"]
    assert frames(r) == [("<module>", 8, 1), ("load", 6, 16)]  # json's own frames are not ours
