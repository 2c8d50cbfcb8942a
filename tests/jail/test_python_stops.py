"""The python level allows a bare `except:`, `except BaseException:` and return/break/continue in
a `finally`: in the real jail, no stop verdict (time, memory, output) is swallowed by a program
that catches everything, and a name nothing binds or a module that is not there fails as in
CPython."""

import subprocess
import sys

import pytest

from lackjail.api import Jail
from lackjail.policy import load_policy


def _policy(**limits):
    base = load_policy("default")
    return base.replace(limits=base.limits.__class__(**limits))


@pytest.fixture(scope="module")
def jail(require_nsjail):
    """Memory and output verdicts: a wall clock far longer than any of these runs needs, so
    that a loaded machine never turns them into a timeout."""
    policy = _policy(wall_s=30.0, cpu_s=10, memory_mb=128, output_bytes=10_000)
    with Jail(policy=policy, workers=1, language="python") as j:
        yield j


@pytest.fixture(scope="module")
def one_second(require_nsjail):
    """Time verdicts: one second of wall clock (the CPU limit well above it)."""
    with Jail(policy=_policy(wall_s=1.0, cpu_s=30), workers=1, language="python") as j:
        yield j


@pytest.fixture(scope="module")
def one_cpu_second(require_nsjail):
    """The CPU limit (SIGPROF) ends the run, long before the wall clock."""
    with Jail(policy=_policy(wall_s=60.0, cpu_s=1), workers=1, language="python") as j:
        yield j


def _serves(jail):
    r = jail.run("sum([1, 2, 3])")
    assert (r.status, r.value) == ("ok", 6), r


SPINNERS = {
    "bare except": "while True:\n try:\n  while True: pass\n except:\n  pass",
    "except BaseException": (
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except BaseException:\n        pass"
    ),
    "finally continue": (
        "def spin():\n    while True:\n        try:\n            while True:\n"
        "                pass\n        finally:\n            continue\nspin()"
    ),
    "finally return": (
        "def spin():\n    try:\n        while True:\n            pass\n    finally:\n"
        "        return spin()\nwhile True:\n    spin()"
    ),
}


@pytest.mark.parametrize("source", SPINNERS.values(), ids=SPINNERS.keys())
def test_a_program_that_catches_everything_still_ends_at_the_wall_clock(one_second, source):
    r = one_second.run(source)
    assert r.status == "timeout" and "wall-clock" in r.errors[0]["message"], r
    _serves(one_second)


@pytest.mark.parametrize("source", SPINNERS.values(), ids=SPINNERS.keys())
def test_a_program_that_catches_everything_still_ends_at_its_cpu_limit(one_cpu_second, source):
    r = one_cpu_second.run(source)
    assert r.status == "timeout" and "CPU time" in r.errors[0]["message"], r
    _serves(one_cpu_second)


MEMORY_HOGS = {
    "bare except, looping": (
        "while True:\n    try:\n        x = 'a' * 500000000\n    except:\n        pass"
    ),
    "held memory": (
        "hoard = []\nwhile True:\n    try:\n        hoard.append('a' * 1000000)\n"
        "    except:\n        pass"
    ),
    "caught once, then a value": (
        "try:\n    x = 'a' * 500000000\nexcept MemoryError:\n    x = 'fine'\nx"
    ),
    "caught by except Exception": (
        "try:\n    x = bytearray(500000000)\nexcept Exception:\n    x = 'fine'\nx"
    ),
    "finally break": (
        "for i in range(10**9):\n    try:\n        x = 'a' * 500000000\n    finally:\n"
        "        break\n'fine'"
    ),
}


@pytest.mark.parametrize("source", MEMORY_HOGS.values(), ids=MEMORY_HOGS.keys())
def test_a_memory_error_ends_the_run_with_memory_whatever_catches_it(jail, source):
    r = jail.run(source)
    assert r.status == "memory" and r.value is None, r
    assert "128 MB" in r.errors[0]["message"]
    _serves(jail)


OUTPUT_FLOODS = {
    "bare except": "while True:\n    try:\n        print('x' * 20000)\n    except:\n        pass",
    "finally continue": (
        "for i in range(10**9):\n    try:\n        print('x' * 20000)\n    finally:\n"
        "        continue"
    ),
    "__exit__ suppresses": (
        "class Quiet:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *exc):\n        return True\n"
        "while True:\n    with Quiet():\n        print('x' * 20000)"
    ),
    "caught, then a value": "try:\n    print('x' * 20000)\nexcept BaseException:\n    pass\n1",
}


@pytest.mark.parametrize("source", OUTPUT_FLOODS.values(), ids=OUTPUT_FLOODS.keys())
def test_the_output_limit_ends_the_run_whatever_catches_it(jail, source):
    r = jail.run(source)
    assert r.status == "limit" and "output exceeds" in r.errors[0]["message"], r
    assert r.value is None and r.output == "x" * 10_000
    _serves(jail)


def test_a_handler_that_catches_nothing_of_the_runners_runs_as_in_cpython(jail):
    r = jail.run(
        "out = []\nfor i in range(3):\n    try:\n        if i == 1:\n"
        "            raise KeyError(i)\n        out.append(i)\n    except:\n"
        "        out.append('caught')\n    finally:\n        continue\nout"
    )
    assert (r.status, r.value) == ("ok", [0, "caught", 2]), r


# A script's run in plain CPython, reporting `Type: message` as str() makes it (a traceback
# printed by CPython adds its "Did you mean" suggestions, which the exception does not hold).
SCRIPT = """\
import sys
src = open(sys.argv[1]).read()
script = {"__name__": "__main__", "__package__": None, "__spec__": None}
try:
    exec(compile(src, sys.argv[1], "exec"), script)
except BaseException as e:
    sys.stderr.write(f"{type(e).__name__}: {e}")
"""


def _cpython(source, folder):
    """What plain CPython says of SOURCE run as a script: its exception, `Type: message`, and
    its printed output."""
    script = folder / "program.py"
    script.write_text(source)
    done = subprocess.run(
        [sys.executable, "-I", "-c", SCRIPT, str(script)], capture_output=True, text=True
    )
    return done.stderr, done.stdout


FAILURES = [
    ("print('a')\nx = undefined + 1", 2, 5),
    ("def f():\n    return later_name\nprint(f())", 2, 12),
    ("class A:\n    x = 1\n    def f(self):\n        return x\nA().f()", 4, 16),
    ("import no_such_module_anywhere", 1, 1),
    ("from no_such_module_anywhere.sub import thing", 1, 1),
    ("from . import sibling", 1, 1),
    ("from .pkg import thing", 1, 1),
    ("raise SystemExit(3)", 1, 1),
    ("try:\n    x = 1 / 0\nexcept 123:\n    pass", 3, 1),
    # a recursion's end is raised where and as in CPython, the runner's watch on every raise
    # notwithstanding
    ("def f(n):\n    return f(n + 1)\nf(0)", 2, 12),
    ("def g(x):\n    return sorted([x], key=g)\ng(1)", 2, 12),
    ("class R:\n    def __repr__(self):\n        return repr(self)\nrepr(R())", 3, 16),
]


@pytest.mark.parametrize(("source", "line", "col"), FAILURES)
def test_what_fails_at_run_time_fails_as_in_cpython(jail, tmp_path, source, line, col):
    message, output = _cpython(source, tmp_path)
    r = jail.run(source)
    assert r.status == "error", r
    assert r.errors[0]["message"] == message
    assert (r.errors[0]["line"], r.errors[0]["col"]) == (line, col)
    assert r.output == output


def test_importing_a_missing_module_can_be_caught(jail):
    r = jail.run(
        "try:\n    import numpy as np\nexcept ImportError as e:\n    np = None\n    why = str(e)\n"
        "[np, why]"
    )
    assert (r.status, r.value) == ("ok", [None, "No module named 'numpy'"]), r
