"""The caps: each is exact at its edge, and programs the defaults accept compile safely."""

import subprocess
import sys

import pytest

from lackjail.lang import ProgramLimits, validate


def test_defaults():
    limits = ProgramLimits()
    assert limits.max_source_bytes == 64 * 1024
    assert limits.max_int_digits is None  # the level's own
    assert [limits.int_digits(level) for level in ("lackpy", "extended", "python")] == [
        100,
        100,
        4300,
    ]
    assert ProgramLimits(max_int_digits=7).int_digits("python") == 7
    assert 1 <= limits.max_comprehension_depth <= 10  # well below the ~21 that crashes compile()
    with pytest.raises(AttributeError):
        limits.max_depth = 5


@pytest.mark.parametrize(
    "field, at_limit, over_limit",
    [
        ("max_source_bytes", "x = 1", "x = 12"),
        ("max_literal_len", "x = 'abc'", "x = 'abcd'"),
        ("max_literal_len", "x = [1, 2, 3]", "x = [1, 2, 3, 4]"),
        ("max_int_digits", "x = 999", "x = 1000"),
        (
            "max_comprehension_depth",
            "x = [[a for a in b] for b in [[1]]]",
            "x = [[[a for a in b] for b in c] for c in [[[1]]]]",
        ),
    ],
)
def test_edge_of_each_cap(field, at_limit, over_limit):
    value = {
        "max_source_bytes": 5,
        "max_literal_len": 3,
        "max_int_digits": 3,
        "max_comprehension_depth": 2,
    }[field]
    limits = ProgramLimits(**{field: value})
    assert validate(at_limit, limits=limits).valid
    result = validate(over_limit, limits=limits)
    assert not result.valid
    assert str(value) in result.errors[0].message  # the message names the limit


@pytest.mark.parametrize("level", ["lackpy", "extended", "python"])
def test_an_int_literal_may_be_as_long_as_the_levels_cap(level):
    """python takes the literals a script may hold (CPython parses up to 4,300 digits); the
    levels below keep 100, as before. A hex literal is held to the same cap."""
    cap = 4300 if level == "python" else 100
    assert validate("x = " + "9" * cap, language=level).valid
    for over in ("x = 1" + "0" * cap, "x = -1" + "0" * cap, "x = 0x" + "f" * (cap + 10)):
        (error,) = validate(over, language=level).errors
        assert (error.rule, error.line) == ("limit-int-digits", 1)
        assert error.message.endswith(f"the limit is {cap}"), error.message
    assert ProgramLimits().to_dict()["max_int_digits"] is None


def test_node_and_depth_caps_name_their_limit():
    nodes = validate(
        "x = [1, 2, 3]", limits=ProgramLimits(max_nodes=6)
    )  # Module Assign Name List Constant*3
    assert [e.rule for e in nodes.errors] == ["limit-nodes"] and "6" in nodes.errors[0].message
    assert validate("x = [1, 2, 3]", limits=ProgramLimits(max_nodes=7)).valid
    depth = validate("x = -(-(-1))", limits=ProgramLimits(max_depth=4))
    assert [e.rule for e in depth.errors] == ["limit-depth"] and "4" in depth.errors[0].message
    assert validate("x = -(-(-1))", limits=ProgramLimits(max_depth=6)).valid


def test_walk_stops_at_the_first_size_cap():
    result = validate("x = [" + "1, " * 50 + "]", limits=ProgramLimits(max_nodes=20))
    assert [e.rule for e in result.errors] == ["limit-nodes"]


def _deepest(make, limit=300):
    """The largest n for which make(n) is still accepted under the default limits."""
    best = None
    for n in range(1, limit):
        if not validate(make(n)).valid:
            break
        best = make(n)
    assert best is not None
    return best


SHAPES = {
    "list comprehensions in elt": lambda n: "x = " + "[" * n + "1" + " for a in b]" * n,
    "comprehensions in iter": lambda n: "x = " + "[a for a in " * n + "b" + "]" * n,
    "key lambdas": lambda n: "x = " + "sorted(a, key=lambda a: " * n + "a" + ")" * n,
    "dict comprehensions": lambda n: "x = " + "{a: " * n + "1" + " for a in b}" * n,
    "sums": lambda n: "x = " + "+".join(["1"] * n),
    "calls": lambda n: "x = " + "len(" * n + "1" + ")" * n,
    "attributes": lambda n: "x = a" + ".b" * n,
    "unary": lambda n: "x = " + "-" * n + "1",
    "conditionals": lambda n: "x = " + "1 if a else " * n + "1",
    "blocks": lambda n: "".join(" " * i + "if x:\n" for i in range(n)) + " " * n + "y = 1\n",
}
# the names the shapes read, bound first (an unbound read is an error of its own)
SHAPES = {k: (lambda make: lambda n: "a = b = x = [1]\n" + make(n))(v) for k, v in SHAPES.items()}


@pytest.mark.slow
def test_programs_at_the_limits_compile_without_crashing():
    # Compiling is the jail's job; this checks the default caps keep it safe.
    programs = [_deepest(make) for make in SHAPES.values()]
    code = (
        "import sys\nfor p in sys.stdin.read().split('\\0'):\n"
        "    compile(p, '<p>', 'exec')\nprint('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input="\0".join(programs),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info[:3] != (3, 12, 1), reason="documents a CPython 3.12.1 crash")
def test_why_comprehension_nesting_has_its_own_cap():
    program = "x = " + "[" * 21 + "1" + " for a in b]" * 21
    assert not validate(program).valid
    done = subprocess.run(
        [sys.executable, "-c", f"compile({program!r}, '<p>', 'exec')"],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode < 0  # killed by a signal (SIGSEGV)
