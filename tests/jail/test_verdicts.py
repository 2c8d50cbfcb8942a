"""Each verdict from the real jail, and the pool still serves afterwards."""

import os
import signal
import threading
import time

import psutil
import pytest

from lackjail.api import Jail
from lackjail.policy import load_policy


def _after(jail):
    r = jail.run("sum([1, 2, 3])")
    assert (r.status, r.value) == ("ok", 6)


def test_memory_bomb(tight_jail):
    r = tight_jail.run("x = 'a' * 500000000\nlen(x)")
    assert r.status == "memory", r
    assert "128 MB" in r.errors[0]["message"]
    _after(tight_jail)


def test_cpu_loop_is_a_timeout(tight_jail):
    r = tight_jail.run("x = 0\nfor i in range(10000000000):\n    x += i\nx")
    assert r.status == "timeout", r
    assert r.exit_code == 1
    _after(tight_jail)


def test_wall_clock_timeout(require_nsjail):
    base = load_policy("default")
    policy = base.replace(limits=base.limits.__class__(wall_s=0.5, cpu_s=30))
    with Jail(policy=policy, workers=1) as jail:
        t = time.monotonic()
        r = jail.run("x = 0\nfor i in range(10000000000):\n    x += i\nx")
        took = time.monotonic() - t
        assert r.status == "timeout" and "wall-clock" in r.errors[0]["message"]
        assert took < 5
        _after(jail)


def test_output_flood(tight_jail):
    r = tight_jail.run("for i in range(1000000):\n    print('x' * 100)")
    assert r.status == "limit" and "output" in r.errors[0]["message"]
    assert len(r.output) <= 10_000
    _after(tight_jail)


def test_bad_program(tight_jail):
    r = tight_jail.run("while True:\n    pass")
    assert r.status == "invalid"
    _after(tight_jail)


def test_str_of_huge_int_is_an_error_not_a_hang(tight_jail):
    r = tight_jail.run("x = 10 * 1\ny = str(x * int('1' + '0' * 5000))")
    assert r.status == "error" and "digits" in r.errors[0]["message"]


def _zygotes(jail):
    """The zygote (first python) of each jail in the pool."""
    out = []
    for pid in jail.pool.pids():
        procs = sorted(
            (p for p in psutil.Process(pid).children(recursive=True) if "python" in p.name()),
            key=lambda p: p.create_time(),
        )
        if procs:
            out.append(procs[0])
    return out


def test_kill_zygote_mid_run(require_nsjail):
    base = load_policy("default")
    policy = base.replace(limits=base.limits.__class__(wall_s=60, cpu_s=60))
    with Jail(policy=policy, workers=2) as jail:
        assert jail.pool.wait_full()
        results = {}

        def slow(key):
            results[key] = jail.run("x = 0\nfor i in range(10000000):\n    x += 1\nx")

        threads = [threading.Thread(target=slow, args=(k,)) for k in ("a", "b")]
        for t in threads:
            t.start()
        time.sleep(0.5)  # both runs are busy now: each takes seconds
        victim = _zygotes(jail)[0]
        os.kill(victim.pid, signal.SIGKILL)
        for t in threads:
            t.join(30)
        statuses = sorted(r.status for r in results.values())
        assert statuses == ["killed", "ok"], results
        assert jail.pool.wait_full(15)
        assert len(jail.pool.pids()) == 2
        _after(jail)


def test_no_process_left_behind(require_nsjail):
    from tests.conftest import descendants

    before = descendants()
    with Jail(workers=2) as jail:
        jail.run("1")
        assert descendants() - before
    time.sleep(0.1)
    assert descendants() - before == set()


def test_no_process_left_after_error_inside_with(require_nsjail):
    from tests.conftest import descendants

    before = descendants()
    with pytest.raises(RuntimeError):
        with Jail(workers=2) as jail:
            jail.run("1")
            raise RuntimeError("boom")
    time.sleep(0.1)
    assert descendants() - before == set()


def test_dead_idle_jail_is_replaced_not_handed_a_run(require_nsjail):
    with Jail(workers=1) as jail:
        assert jail.run("1").status == "ok"
        for zygote in _zygotes(jail):
            os.kill(zygote.pid, signal.SIGKILL)
        time.sleep(0.2)
        r = jail.run("2 + 2")
        assert (r.status, r.value) == ("ok", 4), r
        assert jail.pool.wait_full(15) and len(jail.pool.pids()) == 1
