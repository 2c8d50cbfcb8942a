"""The pool's start: the first run does not wait for the other jails to be created."""

from __future__ import annotations

import threading

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
