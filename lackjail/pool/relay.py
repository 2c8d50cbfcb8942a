"""Relay threads: a run's tool calls served on the thread that runs the tools.

Handing each call to a tool thread and back costs two thread wake-ups per call,
more than the call's crossing and checks together on a VM. So at its first tool
call a run hands the rest of its serving to a relay thread, which reads the
child's frames and runs each tool inline, while the run's caller watches: a tool
still running at its deadline is abandoned (its thread keeps it, and ends or
returns here when it does), the caller answers that call with the timeout and
serves the run on. A run costs two wake-ups however many calls it makes.
"""

from __future__ import annotations

import os
import queue
import threading
import time

MAX_IDLE = 32  # relay threads kept waiting for the next run (one per run in flight)
POLL_S = 0.02  # how often a watching caller looks at the call its relay runs


class Watch:
    """The tool call a relay thread runs now, as its watcher sees it.

    The relay arms it before a tool runs and disarms it after; the watcher takes
    an armed call past its deadline. Exactly one of the two wins: a relay whose
    disarm finds the call taken must leave the run alone from then on.
    """

    __slots__ = ("_lock", "_deadline", "_abandon")

    def __init__(self):
        self._lock = threading.Lock()
        self._deadline = 0.0
        self._abandon = None

    def arm(self, deadline: float, abandon) -> None:
        """A tool runs until DEADLINE (time.monotonic); ABANDON() gives its call's outcome
        once it is taken."""
        with self._lock:
            self._deadline, self._abandon = deadline, abandon

    def disarm(self) -> bool:
        """The tool returned: True when its call is still the relay's to answer."""
        with self._lock:
            taken = self._abandon is None
            self._abandon = None
        return not taken

    def take(self):
        """ABANDON of an armed call past its deadline, which is the watcher's from now on;
        None when there is none."""
        with self._lock:
            abandon = self._abandon
            if abandon is None or time.monotonic() < self._deadline:
                return None
            self._abandon = None
        return abandon

    def armed(self) -> bool:
        """Is a tool running now (from its arm to its disarm, or until it is taken)?"""
        return self._abandon is not None

    def wait_s(self) -> float:
        """How long the watcher may sleep before it looks again."""
        left = self._deadline - time.monotonic() if self._abandon is not None else POLL_S
        return min(max(left, 0.0), POLL_S)


_idle: list = []  # the queues of relay threads waiting for a job
_idle_lock = threading.Lock()


def _forked() -> None:
    """In a forked child only the forking thread lives: the waiting relays' queues would
    take jobs that no thread runs."""
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forked)


def submit(job) -> None:
    """Run JOB() (which must not raise) on a waiting relay thread, or a new one."""
    with _idle_lock:
        jobs = _idle.pop() if _idle else None
    if jobs is None:
        jobs = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(jobs,), name="lackjail-relay", daemon=True).start()
    jobs.put(job)


def _serve(jobs: queue.SimpleQueue) -> None:
    while True:
        jobs.get()()
        with _idle_lock:
            if len(_idle) >= MAX_IDLE:
                return
            _idle.append(jobs)
