"""The pool's start and its end: the first run does not wait for the other jails to be
created, and closing does not wait for a jail still starting."""

from __future__ import annotations

import sys
import threading
import time

import psutil
import pytest

from lackjail.api import Jail
from lackjail.pool import isolation
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


def test_closing_kills_jails_instead_of_asking_them_to_stop(require_nsjail, monkeypatch):
    """A zygote reads its control socket only once it has started, so a `stop` waits for
    that (closing right after the first run waited ~50 ms for the second jail); nothing runs
    in an idle or a starting jail: both are killed, and nothing of either is left. Here the
    second jail never starts at all."""
    never = isolation.Launcher("nsjail", [sys.executable, "-c", "import time; time.sleep(60)"], {})
    created, sent = [], []

    class SecondNeverStarts(pool_module.JailProcess):
        def __init__(self, launcher, *args, **kwargs):
            super().__init__(never if created else launcher, *args, **kwargs)
            created.append(self)

        def send_ctrl(self, msg):
            sent.append(msg["t"])
            super().send_ctrl(msg)

    monkeypatch.setattr(pool_module, "JailProcess", SecondNeverStarts)
    jail = Jail(workers=2)
    try:
        assert jail.run("x = 1 + 2\nx").value == 3
        deadline = time.monotonic() + 30
        while True:  # the supervisor has created the second jail; it is starting
            with jail.pool._cond:
                if jail.pool._starting:
                    break
            assert time.monotonic() < deadline, "the second jail was never created"
            time.sleep(0.01)
    finally:
        jail.close()
    first, second = created
    assert "stop" not in sent  # neither is asked to stop
    for jail in created:
        assert not jail.alive and not psutil.pid_exists(jail.pid)
