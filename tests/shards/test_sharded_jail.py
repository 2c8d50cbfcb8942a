"""A Jail sharded over controller processes (`processes=2`), end to end in the real jail:
the same Results, tool calls answered by the caller's process, verdicts, streamed events,
a killed shard that fails only its own runs and is replaced, and a close that leaves no
process behind."""

import os
import signal
import threading
import time

import psutil
import pytest
from procs import descendants, describe, wait_no_leftovers

from lackjail.api import Jail
from lackjail.policy import load_policy

pytestmark = pytest.mark.nsjail

LOOP = "x = 0\nfor i in range(10000000000):\n    x += 1\nx"


def _policy(**limits):
    base = load_policy("default")
    return base.replace(limits=base.limits.__class__(**limits))


@pytest.fixture
def sharded(require_nsjail):
    with Jail(workers=2, processes=2) as jail:
        yield jail


def test_runs_map_and_as_completed_give_the_results_one_process_gives(sharded):
    assert sharded.processes == 2 and sharded.workers == 2
    assert sharded.isolation == "nsjail" and sharded.mode == "fresh"
    r = sharded.run("print('hi')\nx = len([1, 2, 3])\nx * n", {"n": 2})
    assert (r.status, r.value, r.output, r.isolation) == ("ok", 6, "hi\n", "nsjail")
    assert r.stats["wall_ms"] > 0 and r.stats["max_rss_kb"] > 0
    programs = [f"{i} + 1" for i in range(40)]
    assert [r.value for r in sharded.map(programs)] == list(range(1, 41))
    jobs = [(i, f"{i} * k", {"k": 3}) for i in range(20)]
    assert sorted((k, r.value) for k, r in sharded.as_completed(jobs)) == [
        (i, 3 * i) for i in range(20)
    ]
    # what the validator refuses never reaches a jail, with its place
    bad = sharded.run("x = ")
    assert bad.status == "invalid" and bad.errors[0]["line"] == 1
    unsafe = sharded.run("().__class__")
    assert unsafe.status == "invalid"
    # parameters that are not plain data are judged by the checker, as in one process
    odd = sharded.run("len(s)", {"s": {1, 2}})
    assert odd.status == "invalid" and "parameter 's'" in odd.errors[0]["message"]


def test_every_tool_call_runs_in_the_callers_process(require_nsjail):
    seen = []
    lock = threading.Lock()

    def remember(item: int) -> int:
        """Remember ITEM; how many are remembered."""
        with lock:
            seen.append(item)
            return len(seen)

    with Jail(workers=2, processes=2, tools=[remember]) as jail:
        results = list(jail.map([f"remember({i})\nremember({i} + 100)" for i in range(30)]))
        assert all(r.status == "ok" for r in results), results
        assert sorted(seen) == sorted([*range(30), *range(100, 130)])
        assert all([e["tool"] for e in r.trace] == ["remember"] * 2 for r in results)
        assert all(r.stats["tool_calls"] == 2 for r in results)
        # a call the kit's checks refuse never reaches the tool
        before = len(seen)
        r = jail.run("remember(word)", {"word": "not an int"})
        assert r.status == "error" and len(seen) == before, r
        assert r.trace and not r.trace[0]["ok"]


def test_streamed_events_come_in_order_and_end_with_the_result(require_nsjail):
    def double(x: int) -> int:
        """Twice X."""
        return 2 * x

    with Jail(workers=2, processes=2, tools=[double]) as jail:
        events = list(jail.stream("print('a')\ny = double(4)\nprint('b')\ny"))
    kinds = [e["event"] if isinstance(e, dict) else "result" for e in events]
    assert kinds == ["output", "call", "output", "result"], events
    assert events[1]["tool"] == "double" and events[1]["ok"]
    assert (events[-1].status, events[-1].value, events[-1].output) == ("ok", 8, "a\nb\n")


def test_verdicts_come_back_from_the_shards(require_nsjail):
    policy = _policy(wall_s=2.0, cpu_s=1, memory_mb=128)
    with Jail(policy=policy, workers=2, processes=2) as jail:
        memory = jail.run("x = 'a' * 500000000\nlen(x)")
        assert memory.status == "memory" and "128 MB" in memory.errors[0]["message"]
        cpu = jail.run(LOOP)
        assert cpu.status == "timeout", cpu
        wall = jail.run(LOOP, cpu_s=0.5, timeout=0.5)
        assert wall.status == "timeout", wall
        assert jail.run("sum([1, 2, 3])").value == 6


def test_sessions_keep_their_state(sharded):
    with sharded.session() as s:
        assert s.run("rows = [1, 2, 3]").status == "ok"
        assert s.run("len(rows)").value == 3
    assert sharded.run("rows").status == "invalid"  # a plain run sees nothing of it


def _jail_processes(pid):
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def test_a_killed_shard_fails_only_its_runs_and_is_replaced(require_nsjail):
    """Two runs loop until their wall limit, one on each shard: the one whose shard is killed
    is `killed` and says why, the other ends as `timeout`; a new shard takes its place, and
    the killed shard's jails do not outlive it."""
    with Jail(policy=_policy(wall_s=8, cpu_s=60), workers=2, processes=2) as jail:
        assert jail.wait_ready(30)
        results = {}

        def endless(key):
            results[key] = jail.run(LOOP)

        threads = [threading.Thread(target=endless, args=(k,)) for k in ("a", "b")]
        for t in threads:
            t.start()
        victim = jail.pool.pids()[0]
        deadline = time.monotonic() + 30
        while not _busy(victim):
            assert time.monotonic() < deadline, "no run started on the shard"
            time.sleep(0.02)
        orphans = _jail_processes(victim)
        os.kill(victim, signal.SIGKILL)
        for t in threads:
            t.join(60)
        by_status = {r.status: r for r in results.values()}
        assert sorted(by_status) == ["killed", "timeout"], results
        assert "controller process" in by_status["killed"].errors[0]["message"]
        deadline = time.monotonic() + 60
        while len(jail.pool.pids()) < 2 or victim in jail.pool.pids():
            assert time.monotonic() < deadline, "the shard was not replaced"
            time.sleep(0.05)
        assert jail.wait_ready(30)
        assert [r.value for r in jail.map(["1", "2", "3", "4"])] == [1, 2, 3, 4]
        _, alive = psutil.wait_procs(orphans, timeout=10)
        assert not alive, describe(p.pid for p in alive)


def _busy(shard_pid) -> bool:
    """Is a program running in one of the shard's jails (a child using CPU)?"""
    for proc in _jail_processes(shard_pid):
        try:
            if proc.cpu_times().user > 0.3:
                return True
        except psutil.NoSuchProcess:
            pass
    return False


def test_close_leaves_no_process(require_nsjail):
    before = descendants(zombies=True)
    with Jail(workers=2, processes=2) as jail:
        assert jail.run("1").value == 1
        shards = jail.pool.pids()
        inside = [p for pid in shards for p in _jail_processes(pid)]
        assert len(shards) == 2 and inside
    assert wait_no_leftovers(before) == set()
    _, alive = psutil.wait_procs(inside, timeout=5)
    assert not alive, describe(p.pid for p in alive)


def test_runs_in_flight_at_close_end_killed(require_nsjail):
    jail = Jail(policy=_policy(wall_s=20, cpu_s=60), workers=2, processes=2)
    results = []
    thread = threading.Thread(target=lambda: results.append(jail.run(LOOP)))
    thread.start()
    deadline = time.monotonic() + 30
    while not any(_busy(pid) for pid in jail.pool.pids()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    jail.close()
    thread.join(30)
    assert results and results[0].status == "killed", results


def test_runs_waiting_on_slow_tools_do_not_hold_up_the_others(require_nsjail):
    """Every caller of a shard may wait on a tool at once: the answers and the next runs
    still get through (a waiting run reads the channel when no one else does)."""

    def slow(x: int) -> int:
        """X, after a pause."""
        time.sleep(0.02)
        return x

    with Jail(workers=2, processes=2, tools=[slow]) as jail:
        programs = [f"slow({i}) + slow(1)" if i % 2 else f"{i}" for i in range(40)]
        results = list(jail.map(programs))
    failed = [(i, r.status, r.errors) for i, r in enumerate(results) if r.status != "ok"]
    assert not failed
    assert [r.value for r in results] == [i + 1 if i % 2 else i for i in range(40)]
    assert [len(r.trace) for r in results] == [2 if i % 2 else 0 for i in range(40)]


def test_auto_shards_on_a_many_core_host_and_not_on_a_small_one(require_nsjail, monkeypatch):
    monkeypatch.setattr("lackjail.shards.os.cpu_count", lambda: 16)
    with Jail(workers=3) as jail:  # auto: one process per two jails
        assert jail.processes == 2 and len(jail.pool.pids()) == 2
        assert [r.value for r in jail.map(["1", "2", "3"])] == [1, 2, 3]
    monkeypatch.setattr("lackjail.shards.os.cpu_count", lambda: 2)
    with Jail(workers=3) as jail:
        assert jail.processes == 1
