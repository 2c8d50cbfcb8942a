"""Closing a pool: the supervisor stops idle jails, kills lent ones and reaps every jail.

When `close` returns, no process of the pool is left, not even a zombie: reaping is the
supervisor's job alone, so a closing caller never races a run for a jail's exit status.
"""

from __future__ import annotations

import threading
import time

import psutil
import pytest
from procs import jail_processes

from lackjail.api import Jail
from lackjail.kit.calls.session import CallOutcome
from lackjail.policy import load_policy
from lackjail.pool import Pool, PoolError
from lackjail.pool.run import Request

pytestmark = pytest.mark.nsjail

ENDLESS = "x = 0\nfor i in range(10000000000):\n    x += 1\nx"


def _children() -> set[int]:
    """Our direct children, zombies included (a zombie is one nobody reaped)."""
    return {p.pid for p in psutil.Process().children()}


def _policy():
    base = load_policy("default")
    return base.replace(limits=base.limits.__class__(wall_s=60, cpu_s=60))


def _runs_started(jail, n: int) -> bool:
    busy = 0
    for _, _, kids in jail_processes(jail):
        try:
            busy += any(sum(psutil.Process(k).cpu_times()[:2]) >= 0.1 for k in kids)
        except psutil.NoSuchProcess:
            pass
    return busy >= n


def test_close_during_runs_kills_them_and_reaps_every_jail(require_nsjail):
    before = _children()
    jail = Jail(policy=_policy(), workers=2)
    assert jail.pool.wait_full(30)
    results = {}
    threads = [
        threading.Thread(target=lambda k=k: results.__setitem__(k, jail.run(ENDLESS)))
        for k in ("a", "b")
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while not _runs_started(jail, 2):
        assert time.monotonic() < deadline, "the runs never started"
        time.sleep(0.02)
    jail.close()
    assert _children() - before == set()  # at once: close waited for the reaping
    for t in threads:
        t.join(30)
    assert sorted(r.status for r in results.values()) == ["killed", "killed"], results
    with pytest.raises(PoolError, match="closed"):
        jail.pool.execute(Request("1", {}))


def _gone(pids, timeout: float = 30) -> bool:
    """Have all PIDS ended (or become zombies) within TIMEOUT?"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = 0
        for pid in pids:
            try:
                alive += psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.02)
    return False


def test_a_tool_that_closes_its_own_pool_does_not_hang_it(require_nsjail):
    """The calling thread holds a lent jail, so close cannot wait for its reaping; the jail
    is killed before close returns, the run ends `killed`, and the supervisor reaps the jail
    when the run gives it back."""
    before = _children()
    pool = Pool(_policy(), workers=1)
    closed = []

    def handler(tool, args, kwargs, deadline=None):
        jail_pids = {p.pid for p in psutil.Process().children(recursive=True)} - before
        pool.close()
        closed.append(_gone(jail_pids))  # killed already: its processes end without us
        return CallOutcome(True, 1)

    outcome = pool.execute(Request("t()", {}, tools=["t"]), handler)
    assert closed == [True]
    assert outcome.status == "killed", outcome
    pool._supervisor.join(30)
    assert not pool._supervisor.is_alive()
    assert _children() - before == set()
