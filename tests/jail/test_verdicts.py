"""Each verdict from the real jail, and the pool still serves afterwards."""

import os
import signal
import threading
import time

import psutil
import pytest
from procs import descendants

from lackjail import lang
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


def test_output_past_the_cap_keeps_its_first_part_and_says_it_was_cut(tight_jail):
    r = tight_jail.run("print('start ' + 'x' * 20000)\n1")
    assert r.status == "limit" and "cut at that limit" in r.errors[0]["message"]
    assert r.output == ("start " + "x" * 20000)[:10_000]
    _after(tight_jail)


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
    """The zygote (first python) of each jail in the pool; a child that ends while we look
    (one that just ran exits) is skipped."""
    out = []
    for pid in jail.pool.pids():
        procs = []
        try:
            kids = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for p in kids:
            try:
                if "python" in p.name():
                    procs.append((p.create_time(), p.pid, p))
            except psutil.NoSuchProcess:
                continue
        if procs:
            out.append(min(procs)[2])
    return out


def _busy_children(jail) -> int:
    """How many jails have a child that has spent CPU on a run (the loop below)."""
    busy = 0
    for zygote in _zygotes(jail):
        try:
            if any(sum(c.cpu_times()[:2]) >= 0.1 for c in zygote.children(recursive=True)):
                busy += 1
        except psutil.NoSuchProcess:
            pass
    return busy


def test_kill_zygote_mid_run(require_nsjail):
    """Both runs loop until their wall limit: the one whose zygote is killed is
    `killed`, the other ends as `timeout`; no figure here depends on speed."""
    base = load_policy("default")
    policy = base.replace(limits=base.limits.__class__(wall_s=6, cpu_s=60))
    with Jail(policy=policy, workers=2) as jail:
        assert jail.pool.wait_full()
        results = {}

        def endless(key):
            results[key] = jail.run("x = 0\nfor i in range(10000000000):\n    x += 1\nx")

        threads = [threading.Thread(target=endless, args=(k,)) for k in ("a", "b")]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while _busy_children(jail) < 2 and all(t.is_alive() for t in threads):
            assert time.monotonic() < deadline, "the two runs never started"
            time.sleep(0.02)
        victim = _zygotes(jail)[0]
        os.kill(victim.pid, signal.SIGKILL)
        for t in threads:
            t.join(60)
        statuses = sorted(r.status for r in results.values())
        assert statuses == ["killed", "timeout"], results
        assert jail.pool.wait_full(15)
        assert len(jail.pool.pids()) == 2
        _after(jail)


def test_no_process_left_behind(require_nsjail):
    before = descendants(zombies=True)
    with Jail(workers=2) as jail:
        jail.run("1")
        assert descendants(zombies=True) - before
    time.sleep(0.1)
    assert descendants(zombies=True) - before == set()


def test_no_process_left_after_error_inside_with(require_nsjail):
    before = descendants(zombies=True)
    with pytest.raises(RuntimeError):
        with Jail(workers=2) as jail:
            jail.run("1")
            raise RuntimeError("boom")
    time.sleep(0.1)
    assert descendants(zombies=True) - before == set()


def test_dead_idle_jail_is_replaced_not_handed_a_run(require_nsjail):
    with Jail(workers=1) as jail:
        assert jail.run("1").status == "ok"
        for zygote in _zygotes(jail):
            os.kill(zygote.pid, signal.SIGKILL)
        time.sleep(0.2)
        r = jail.run("2 + 2")
        assert (r.status, r.value) == ("ok", 4), r
        assert jail.pool.wait_full(15) and len(jail.pool.pids()) == 1


# Blocks nested deeper than CPython's compiler takes (20): the one program here the validator
# passes and only the compiler refuses, so the jail's own handling of that is what runs.
NESTED = "".join("    " * i + f"for a{i} in [1]:\n" for i in range(22)) + "    " * 22 + "x = 1\n"


def test_what_only_the_compiler_refuses_is_invalid_with_its_place_not_denied(require_nsjail):
    """CPython opens a program's "file" to quote the line of a SyntaxError it raises while
    compiling: without the child's audit hook that open is an openat the filter kills, and
    the run came back `denied`."""
    assert lang.validate(NESTED, language="extended").valid  # the layer under test is the jail's
    with Jail(workers=1, language="extended") as jail:
        r = jail.run(NESTED)
        assert r.status == "invalid", r
        (error,) = r.errors
        assert error["message"] == "too many statically nested blocks"
        assert error["line"] == 21 and error["col"] >= 1
        _after(jail)
