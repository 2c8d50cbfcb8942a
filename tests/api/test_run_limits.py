"""Limits that hold: the wall-clock deadline ends a run even while a host tool runs, and
per-call limits only tighten the policy's, on run, stream, map and session runs."""

import asyncio
import time

import pytest

from lackjail.api import Jail, Result
from lackjail.policy import PolicyError, load_policy

pytestmark = pytest.mark.nsjail


def _policy(wall_s=2.0):
    base = load_policy("default")
    return base.replace(
        limits=base.limits.__class__(wall_s=wall_s, cpu_s=2, memory_mb=256),
        language="extended",
    )


def test_a_tool_that_outlasts_the_run_ends_it_on_time_and_keeps_nothing(require_nsjail, tmp_path):
    def sleepy(seconds: float) -> str:
        time.sleep(seconds)
        return "woke"

    with Jail(policy=_policy(2.0), workers=1, kit="files", workspace=tmp_path, tools=[sleepy]) as j:
        started = time.monotonic()
        r = j.run("write_file('out.txt', 'data')\nsleepy(6)")
        took = time.monotonic() - started
    assert r.status == "timeout", r.errors
    assert "wall-clock limit of 2 s exceeded" in r.errors[0]["message"]
    assert "sleepy" in r.errors[0]["message"]
    assert took < 5.5  # ends at its 2 s deadline, not after the tool's 6 s
    assert not (tmp_path / "out.txt").exists()  # the run's staged writes were rolled back
    assert r.trace[-1]["verdict"] == "timeout"


def test_an_async_tool_is_abandoned_at_the_deadline_too(require_nsjail):
    cancelled = []

    async def nap(seconds: float) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "woke"

    with Jail(policy=_policy(1.0), workers=1, tools=[nap]) as j:
        started = time.monotonic()
        r = j.run("nap(6)")
        took = time.monotonic() - started
        deadline = time.monotonic() + 5
        while not cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
    assert r.status == "timeout" and took < 5.5
    assert cancelled == [True]  # the coroutine was told to stop, not left running


def test_a_per_call_timeout_ends_the_run_sooner(require_nsjail):
    with Jail(policy=_policy(10.0), workers=1, tools={"wait": lambda s: time.sleep(s)}) as j:
        started = time.monotonic()
        r = j.run("wait(6)", timeout=1)
        took = time.monotonic() - started
    assert r.status == "timeout" and "wall-clock limit of 1 s" in r.errors[0]["message"]
    assert took < 5.5


def test_per_call_cpu_limit(require_nsjail):
    with Jail(policy=_policy(10.0), workers=1) as j:
        r = j.run("n = 0\nwhile True:\n    n = n + 1", cpu_s=0.5)
    assert r.status == "timeout" and "CPU time limit of 0.5 s" in r.errors[0]["message"]


def test_per_call_memory_limit_holds_for_that_run_only(require_nsjail):
    big = "x = [0] * 20000000\nlen(x)"  # ~160 MB: within the policy's 256, not within 100
    with Jail(policy=_policy(10.0), workers=1, mode="reuse") as j:
        tight = j.run(big, memory_mb=100)
        again = j.run(big)  # the same jail (one), its limit back to the policy's
    assert tight.status == "memory" and "memory limit of 100 MB" in tight.errors[0]["message"]
    assert (again.status, again.value) == ("ok", 20000000), again.errors


def test_limits_only_tighten(require_nsjail):
    with Jail(policy=_policy(2.0), workers=1) as j:
        for kwargs in ({"timeout": 5}, {"cpu_s": 3}, {"memory_mb": 1024}):
            with pytest.raises(PolicyError, match="looser than policy"):
                j.run("1", **kwargs)
        with pytest.raises(PolicyError, match="looser"):
            list(j.stream("1", timeout=60))
        with pytest.raises(PolicyError, match="looser"):
            j.map(["1"], timeout=60)
        with j.session() as s, pytest.raises(PolicyError, match="looser"):
            s.run("1", cpu_s=100)
        for bad in ({"timeout": 0}, {"timeout": float("nan")}, {"memory_mb": 1.5}):
            with pytest.raises(PolicyError, match="must be"):
                j.run("1", **bad)
        tight = j.run("1 + 1", timeout=0.5, cpu_s=1, memory_mb=128)
        assert (tight.status, tight.value) == ("ok", 2)
        assert [r.value for r in j.map(["1", "2"], timeout=1)] == [1, 2]


def test_stream_ends_with_a_result(require_nsjail):
    with Jail(workers=1) as j:
        events = list(j.stream("print('a')\n7", timeout=2))
    assert events[0] == {"event": "output", "text": "a\n"}
    assert isinstance(events[-1], Result) and events[-1].value == 7
