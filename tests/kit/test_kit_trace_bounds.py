"""The trace is bounded: one call's rendered arguments are cut (saying so), and a run whose
trace reaches its bound ends with the verdict `limit`; a program calling in a loop with huge
calls cannot grow the controller or its result without end."""

import json
import tracemalloc

import pytest

import lackjail
from lackjail.kit import resolve_kit
from lackjail.kit.calls import session as calls

MANY = list(range(90_000))  # fits the per-call item cap, so only the arity check refuses it


def test_a_call_refused_for_its_arity_keeps_only_a_few_kib_of_its_arguments(tmp_path):
    s = resolve_kit("files", workspace=tmp_path).session(workspace=tmp_path)
    out = s.call("read_file", MANY, {"k": "v" * 10_000, **{f"x{i}": i for i in range(5_000)}})
    assert not out.ok and "90000 were given" in out.error
    [entry] = s.trace
    shown = json.dumps(entry["args"]) + json.dumps(entry.get("kwargs", {}))
    assert len(shown) <= calls.TRACE_ARGS_CHARS + 200
    assert entry["args"][-1].startswith("…(+") and "more cut" in entry["args"][-1]
    assert entry["args"][:3] == [0, 1, 2]


def test_the_controller_keeps_a_few_kib_per_refused_call(tmp_path):
    """The red-team's loop grew the controller by ~870 MB: every refused call's arguments were
    kept in the trace. Now what stays is about one rendered entry per call."""
    s = resolve_kit("files", workspace=tmp_path).session(workspace=tmp_path)
    s.call("read_file", ["warm-up"], {})
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(30):
            assert not s.call("read_file", MANY, {}).ok
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(s.trace) == 31 and kept < 2 << 20, kept


def test_a_run_whose_trace_reaches_its_bound_ends_with_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(calls, "TRACE_MAX_BYTES", 200_000)
    s = resolve_kit("files", workspace=tmp_path).session(workspace=tmp_path)
    outcomes = [s.call("read_file", MANY, {}) for _ in range(200)]
    stopped = [o for o in outcomes if o.verdict == "limit"]
    assert stopped and "the trace of this run reached its bound" in stopped[0].error
    size = len(json.dumps(s.trace))
    assert size <= 200_000 + 2 * (calls.TRACE_ARGS_CHARS + 2 * calls.ENTRY_CHARS), size


@pytest.mark.nsjail
def test_the_try_except_loop_of_the_finding_stays_bounded(tmp_path, require_nsjail):
    """The red-team's program: a call with ~100,000 arguments, refused, caught and repeated.
    It grew the controller by ~870 MB and the result to 340 MiB; now its result stays within
    the trace's bound, and the run ends as `limit` when the bound is reached."""
    program = (
        "big = ['x' * 60] * 2000\n"
        "n = 0\n"
        "while n < 5000:\n"
        "    try:\n"
        "        read_file(*big)\n"
        "    except ToolError:\n"
        "        n = n + 1\n"
        "n\n"
    )
    with lackjail.Jail(kit="files", workers=1, workspace=tmp_path, language="extended") as jail:
        result = jail.run(program)
    assert result.status == "limit", result.errors
    assert "the trace of this run reached its bound" in result.errors[0]["message"]
    size = len(json.dumps(result.to_dict()))
    assert size <= calls.TRACE_MAX_BYTES * 1.1, size
    assert len(result.trace) < 5000
