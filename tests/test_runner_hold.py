"""The runner holds a run's stop verdict against a python-level program that catches everything
(a bare except, `finally: continue`, an `__exit__` that suppresses): the program's next line
raises it again; and a MemoryError is the run's verdict, caught or not. In this process, on
programs that stop by themselves if the hold fails (the real jail's tests are in
tests/jail/test_python_stops.py)."""

import sys

import pytest

from lackjail import protocol
from lackjail.worker import facades, runner

LIMITS = {
    "cpu_s": 0,
    "memory_mb": 0,
    "output_bytes": 1000,
    "value_bytes": 100_000,
    "runs_per_child": 1,
}


@pytest.fixture
def run(monkeypatch):
    """Run a python-level program here; the process's stdout and __main__ are put back."""
    facades.load()
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # a python-level run points it at its output
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])

    def run(source, **params):
        msg = protocol.make_run("t", source, params, [], {}, "python")
        return runner.run_one(runner._Sink, msg, LIMITS)

    yield run
    assert sys.monitoring.get_events(runner.MONITOR) == sys.monitoring.events.RAISE


CATCHERS = {
    "bare except": (
        "for i in range(10000):\n    try:\n        seen.append(i)\n        print('x' * 100)\n"
        "    except:\n        pass"
    ),
    "except BaseException, then a value": (
        "for i in range(10000):\n    try:\n        seen.append(i)\n        print('x' * 100)\n"
        "    except BaseException as stop:\n        continue\n'done'"
    ),
    "finally continue": (
        "def spin():\n    for i in range(10000):\n        try:\n            seen.append(i)\n"
        "            print('x' * 100)\n        finally:\n            continue\n    return 1\n"
        "spin()"
    ),
    "__exit__ suppresses": (
        "class Quiet:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return True\n"
        "for i in range(10000):\n    with Quiet():\n        seen.append(i)\n"
        "        print('x' * 100)"
    ),
}


@pytest.mark.parametrize("source", CATCHERS.values(), ids=CATCHERS.keys())
def test_a_caught_output_verdict_ends_the_program(run, source):
    seen = []
    result = run(source, seen=seen)
    assert result["status"] == "limit", result
    assert "output exceeds" in result["errors"][0]["message"]
    assert result["value"] is None
    # the tenth print reaches the 1000-byte cap; nothing of the program runs after it
    assert seen == list(range(10)), seen


MEMORY = {
    "caught by a bare except": "try:\n    x = 'a' * (2 ** 62)\nexcept:\n    x = 'fine'\nx",
    "caught by name": "try:\n    x = 'a' * (2 ** 62)\nexcept MemoryError:\n    x = 'fine'\nx",
    "in a loop": (
        "for i in range(10000):\n    try:\n        seen.append(i)\n        x = 'a' * (2 ** 62)\n"
        "    except:\n        pass"
    ),
}


@pytest.mark.parametrize("source", MEMORY.values(), ids=MEMORY.keys())
def test_a_memory_error_is_the_runs_verdict_caught_or_not(run, source):
    seen = []
    result = run(source, seen=seen)
    assert (result["status"], result["value"]) == ("memory", None), result
    assert len(seen) <= 1


def test_a_run_without_a_verdict_runs_its_handlers_as_cpython_does(run):
    result = run(
        "out = []\nfor i in range(3):\n    try:\n        if i == 1:\n"
        "            raise KeyError(i)\n        out.append(i)\n    except:\n"
        "        out.append('caught')\n    finally:\n        continue\n"
        "try:\n    raise SystemExit(2)\nexcept BaseException as e:\n    out.append(repr(e))\nout"
    )
    assert (result["status"], result["value"]) == ("ok", [0, "caught", 2, "SystemExit(2)"])
    # and the next run starts without a hold
    assert run("1 + 1")["value"] == 2


def test_a_memory_error_the_program_raises_itself_is_its_own(run):
    """Only the interpreter's MemoryError (an allocation refused) is the memory verdict."""
    import opcode

    assert runner._RAISE == opcode.opmap["RAISE_VARARGS"]
    result = run(
        "try:\n    raise MemoryError('out of memory')\nexcept MemoryError as e:\n    x = repr(e)\n"
        "class Mine(MemoryError):\n    pass\ntry:\n    raise Mine\nexcept BaseException:\n"
        "    pass\nx"
    )
    assert (result["status"], result["value"]) == ("ok", "MemoryError('out of memory')"), result
    result = run("raise MemoryError('mine')")
    assert result["status"] == "memory"  # uncaught, it ends the run as before


DEEP_PRINT = """\
import sys
def inner():
    print('x' * 2000)
def outer():
    sys.setrecursionlimit(LIMIT)
    try:
        inner()
    except BaseException as e:
        seen.append(type(e).__name__)
outer()
seen.append('ran on')
"""


@pytest.mark.parametrize("limit", range(3, 8))
def test_an_output_verdict_found_at_the_recursion_limit_is_kept(run, limit):
    """A print in the deepest frame the program's limit allows: the output verdict's Stop has
    no room for its own __init__ (its RecursionError was caught, the verdict lost, and the
    program ran on: a tool after it ran). The verdict is kept before Stop is made."""
    seen = []
    result = run(DEEP_PRINT.replace("LIMIT", str(limit)), seen=seen)
    if result["status"] == "ok":  # no room for the print's write at all: nothing written
        assert seen == ["RecursionError", "ran on"], (result, seen)
        return
    assert result["status"] == "limit", result
    assert "ran on" not in seen, seen
