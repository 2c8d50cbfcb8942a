"""A run's Result and its stats: one shape, whoever makes it (a run, a refusal, a batch line)."""

import json

import lackjail
from lackjail import api
from lackjail.batch import invalid_result
from lackjail.cli.common import result_object
from lackjail.result import Result, stats

KEYS = ["status", "value", "output", "errors", "trace", "isolation", "mode", "stats", "written"]


def test_a_result_that_never_ran_has_every_key_and_zero_stats():
    made = Result.failed("invalid", "no such file", wall_ms=1.23456, trace=[{"tool": "x"}])
    out = made.to_dict()
    assert list(out)[: len(KEYS)] == KEYS and out["diff"] == ""
    assert out["errors"] == [{"message": "no such file"}]
    assert out["stats"] == {"wall_ms": 1.235, "cpu_ms": 0.0, "max_rss_kb": 0, "tool_calls": 1}
    assert json.loads(json.dumps(out)) == out


def test_the_front_ends_share_the_one_shape():
    assert invalid_result("bad line") == Result.failed("invalid", "bad line").to_dict()
    assert result_object("invalid", "bad") == Result.failed("invalid", "bad").to_dict()
    killed = Result.killed("the pool closed")
    assert killed.status == "killed" and killed.exit_code == 1 and not killed.ok
    assert killed.stats == stats() == Result("ok").stats


def test_result_is_one_class_wherever_it_is_imported_from():
    assert lackjail.Result is api.Result is Result
