"""The pool's start: the first run does not wait for the other jails to be created."""

from __future__ import annotations

import threading

import psutil
import pytest

from lackjail.api import Jail
from lackjail.pool import pool as pool_module

pytestmark = pytest.mark.nsjail


def test_a_run_is_served_while_the_supervisor_creates_another_jail(require_nsjail, monkeypatch):
    """The supervisor creates jails without the pool's lock (creating one waits for nsjail's
    exec): a run borrows the first jail while the second is held inside its creation."""
    inside, release = threading.Event(), threading.Event()
    created = []

    class HeldJail(pool_module.JailProcess):
        def __init__(self, *args, **kwargs):
            if created:  # the first jail starts as usual; the second waits for the run
                inside.set()
                release.wait(60)
            created.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(pool_module, "JailProcess", HeldJail)
    with Jail(workers=2) as jail:
        try:
            assert inside.wait(30), "the supervisor never began creating the second jail"
            results = []
            runner = threading.Thread(target=lambda: results.append(jail.run("x = 1 + 2\nx")))
            runner.start()
            runner.join(30)  # a bound for a deadlock, not a timing margin: it takes ms
            assert results and results[0].value == 3, "the run waited for the jail's creation"
        finally:
            release.set()
        assert jail.pool.wait_full(30)
        assert len(jail.pool.pids()) == 2


def test_wait_full_returns_once_every_jail_has_all_its_spares_ready(require_nsjail):
    """The spares after a zygote's first child come after its start-up work (its heap
    readied for them): a pool that says it is full has done that work in every jail."""
    with Jail(workers=2) as jail:
        assert jail.pool.wait_full(30)
        spares = jail.policy.pool.spares
        with jail.pool._cond:
            assert [j.ready_count() for j in jail.pool._idle] == [spares, spares]
        zygotes = [psutil.Process(pid).children()[0] for pid in jail.pool.pids()]
        assert [len(z.children()) for z in zygotes] == [spares, spares]
        assert jail.run("x = 2 * 3\nx").value == 6
