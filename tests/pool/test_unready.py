"""A run written to a child that has not said `ready` yet: the child reads it once confined
(after its `ready`), a child that ends before its `ready` hands the run to a ready one, a
child lent so must say `ready` first and once, and a run that lowers the memory limit
still waits for a ready (confined) child, where the zygote sets that limit."""

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest
from fakejail import LIMITS, ROOT, fake_jail, fake_zygotes

from lackjail.pool.run import Request, Run


def _run_unready(jail):
    """One run on the jail's first child, taken before it said `ready`."""
    child = jail.wait_ready_child(time.monotonic() + 10, unready=True)
    run = Run(jail, child, Request("1", {}), None, None, LIMITS, 1)
    unready = run.unready
    return unready, run.execute(1.0, 0.2)


def test_a_run_written_before_ready_is_answered_after_it(tmp_path):
    # the fake child says nothing until the run is in its channel: it can only be lent unready
    steps = [["spawn", 1], ["read_run", 1], ["ready", 1], ["result", 1]]
    with fake_jail(tmp_path, steps) as jail:
        unready, outcome = _run_unready(jail)
    assert unready
    assert (outcome.status, outcome.value) == ("ok", 1), outcome.errors
    assert not outcome.unstarted and not outcome.retire


def test_a_child_lent_before_ready_must_say_ready_first(tmp_path):
    steps = [["spawn", 1], ["read_run", 1], ["result", 1]]
    with fake_jail(tmp_path, steps) as jail:
        unready, outcome = _run_unready(jail)
    assert unready
    assert outcome.status == "error" and outcome.retire
    assert "did not say so first" in outcome.errors[0]["message"]


def test_a_second_ready_during_the_run_breaks_the_protocol(tmp_path):
    steps = [["spawn", 1], ["read_run", 1], ["ready", 1], ["ready", 1], ["result", 1]]
    with fake_jail(tmp_path, steps) as jail:
        unready, outcome = _run_unready(jail)
    assert unready
    assert outcome.status == "error" and outcome.retire
    assert "protocol" in outcome.errors[0]["message"]


def test_a_ready_for_another_child_breaks_the_protocol(tmp_path):
    steps = [["spawn", 1], ["read_run", 1], ["write", [1, _ready_hex(2)]], ["result", 1]]
    with fake_jail(tmp_path, steps) as jail:
        unready, outcome = _run_unready(jail)
    assert unready
    assert outcome.status == "error" and outcome.retire


def _ready_hex(gen: int) -> str:
    from lackjail import protocol

    return protocol.encode(protocol.make_ready(gen)).hex()


def test_a_child_that_ends_before_ready_hands_its_run_to_a_ready_one(tmp_path, monkeypatch):
    """The pool lends child 2 before its `ready` (none is ready); it ends without one, so it
    never took the run (a real child reads its run only after its `ready`): the same run is
    served by the next child that says `ready`, not failed."""
    from lackjail.policy import load_policy
    from lackjail.pool import Pool
    from lackjail.pool import pool as pool_module

    first = [["spawn", 1], ["ready", 1], ["read_run", 1], ["result", 1]]
    # child 2 waits for the run, then ends (its channel closed, the zygote's report) unready
    second = [["spawn", 2], ["read_run", 2], ["close", 2], ["done", [2, 9]]]
    third = [["spawn", 3], ["ready", 3], ["read_run", 3], ["result", 3]]
    script = tmp_path / "steps.json"
    script.write_text(json.dumps(first + second + third))
    fake_zygotes(monkeypatch, script)
    monkeypatch.setattr(pool_module, "PING_EVERY_S", 3600.0)  # the fake answers no ping
    pool = Pool(load_policy("default"), workers=1, isolation_level="nsjail")
    try:
        one = pool.execute(Request("1", {}))
        two = pool.execute(Request("1", {}))
    finally:
        pool.close()
    assert (one.status, one.value) == ("ok", 1), one.errors
    assert (two.status, two.value) == ("ok", 3), two.errors


def test_a_run_that_lowers_the_memory_limit_waits_for_a_ready_child(monkeypatch, tmp_path):
    """The zygote sets a run's lower memory limit on a confined child: a child not yet
    confined would set the jail's own limit over it. So such a run is never lent one."""
    from lackjail.policy import load_policy
    from lackjail.pool import Pool
    from lackjail.pool import pool as pool_module

    steps = [["spawn", 1], ["ready", 1], ["read_run", 1], ["result", 1], ["sleep", 30]]
    script = tmp_path / "steps.json"
    script.write_text(json.dumps(steps))
    fake_zygotes(monkeypatch, script)
    monkeypatch.setattr(pool_module, "PING_EVERY_S", 3600.0)
    asked = []
    pool = Pool(load_policy("default"), workers=1, isolation_level="nsjail")
    real = pool._borrow_ready

    def borrow(start_timeout, wall, modules=(), unready=False):
        asked.append(unready)
        return real(start_timeout, wall, modules, unready)

    monkeypatch.setattr(pool, "_borrow_ready", borrow)
    lower = dataclasses.replace(pool.limits, memory_mb=64, wall_s=0.5)
    try:
        pool.execute(Request("1", {}), limits=lower)  # the fake sets no limit: it fails
        pool.execute(Request("1", {}), limits=pool.limits)
    finally:
        pool.close()
    assert asked == [False, True]


# run_waiting() with the run channel's descriptor (3) a pipe, in a plain process
WAITING = """
import os, sys
sys.path.insert(0, ROOT)
from lackjail.worker import zygote
r, w = os.pipe()
os.dup2(r, zygote.RUN_IN)
print(zygote.run_waiting())
os.write(w, b"x")
print(zygote.run_waiting())
""".replace("ROOT", repr(str(ROOT)))


def test_a_child_knows_when_its_run_is_waiting():
    """What makes a child skip its warm-up: a run already in its channel (poll, no read)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-I", "-c", WAITING], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["False", "True"]


def _adopted_unready(process):
    """The first child the real zygote reports, adopted without reading its `ready`."""
    import select

    deadline = time.monotonic() + 30
    while not process.children:
        assert time.monotonic() < deadline, "the zygote never reported a child"
        poller = select.poll()
        poller.register(process.ctrl.fileno(), select.POLLIN)
        if poller.poll(1000):
            process.pump_ctrl()
    child = next(iter(process.children.values()))
    assert not child.ready
    return child


@pytest.mark.parametrize("kill_getrusage", [False, True])
def test_a_real_child_lent_before_ready_runs_the_program_confined(
    require_nsjail, monkeypatch, kill_getrusage
):
    """In the real jail: the run written to a child adopted before its `ready` is answered
    after it, and the program ran under the child's filter (one that kills getrusage, which
    every run calls, makes it `denied`)."""
    import pyseccomp as seccomp

    from lackjail.api import Jail
    from lackjail.pool import isolation
    from lackjail.pool.jail_process import JailProcess

    if kill_getrusage:
        flt = seccomp.SyscallFilter(seccomp.ALLOW)
        flt.add_rule(seccomp.KILL_PROCESS, "getrusage")
        read_fd, write_fd = os.pipe()
        with os.fdopen(read_fd, "rb") as src:
            with os.fdopen(write_fd, "wb") as out:
                flt.export_bpf(out)
            bpf = src.read()
        monkeypatch.setattr(isolation, "child_filter", lambda: bpf)
    with Jail(workers=1) as jail:
        process = JailProcess(jail.pool.launcher, 99, jail.pool.max_frame)
        try:
            child = _adopted_unready(process)
            run = Run(process, child, Request("x = len([1, 2, 3])\nx", {}), None, None, LIMITS, 1)
            outcome = run.execute(10.0, 1.0)
        finally:
            process.kill()
    if kill_getrusage:
        assert outcome.status == "denied", outcome
    else:
        assert (outcome.status, outcome.value) == ("ok", 3), outcome.errors
