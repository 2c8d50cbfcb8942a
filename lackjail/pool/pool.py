"""The pre-fork pool: N jails, lent to one run at a time.

Kept small on purpose (after gunicorn's arbiter): spawn jails, lend them,
retire the ones that misbehaved or served their share, replace them, and
shut down without leaving a process behind.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time

from lackjail.policy import Policy
from lackjail.pool import image as images
from lackjail.pool import isolation
from lackjail.pool.worker import Outcome, Worker, WorkerDied


class PoolError(RuntimeError):
    """The pool cannot serve: closed, full, or no jail could start."""


class Pool:
    """Jails for one policy. Thread-safe: many callers may run at once."""

    def __init__(
        self,
        policy: Policy,
        workers: int | None = None,
        mode: str | None = None,
        isolation_level: str | None = None,
    ):
        self.policy = policy
        self.size = workers or policy.pool.worker_count
        self.mode = mode or policy.pool.mode
        self.runs_per_child = policy.pool.recycle_after if self.mode == "reuse" else 1
        self._limits = policy.limits
        self._cond = threading.Condition()
        self._idle: list[Worker] = []
        self._all: set[Worker] = set()
        self._waiters: collections.deque = (
            collections.deque()
        )  # (event, slot) of callers waiting, oldest first
        self._starting = 0
        self._closed = False
        self._ids = itertools.count(1)
        self._last_error = ""
        self.launcher = None
        started = time.monotonic()
        first = self._start_first(isolation_level or policy.isolation)
        self.cold_start_ms = (time.monotonic() - started) * 1000
        with self._cond:
            self._idle.append(first)
        for _ in range(self.size - 1):
            self._replace()

    def _start_first(self, demanded: str) -> Worker:
        """Start the first jail: nsjail when it works; the seccomp fallback only
        when the demanded level allows it. Sets the launcher the others use."""
        args = isolation.zygote_config(self._limits, self.mode, self.policy.pool.recycle_after)
        why = ""
        if demanded in ("nsjail", "any"):
            try:
                self.launcher = isolation.nsjail_launcher(args)
                return self._spawn()
            except (isolation.IsolationError, images.ImageError, WorkerDied, OSError) as exc:
                why = str(exc)
                self._close_launcher()
            if demanded == "nsjail":
                raise isolation.IsolationError(
                    f"policy '{self.policy.name}' requires nsjail isolation, which this host cannot provide: {why} "
                    "(run 'lackjail doctor'; set isolation = \"any\" to allow the seccomp fallback)"
                )
        self.launcher = isolation.seccomp_launcher(args)
        try:
            return self._spawn()
        except (WorkerDied, OSError) as exc:
            self._close_launcher()
            raise PoolError(
                f"no jail could start: {exc}" + (f" (nsjail: {why})" if why else "")
            ) from None

    @property
    def isolation(self) -> str:
        return self.launcher.level

    # -- jails ----------------------------------------------------------

    def _spawn(self) -> Worker:
        limits = {
            "output_bytes": self._limits.output_bytes,
            "cpu_s": self._limits.cpu_s,
            "memory_mb": self._limits.memory_mb,
        }
        worker = Worker(
            self.launcher.argv, self.launcher.env, limits, self.runs_per_child, next(self._ids)
        )
        with self._cond:
            self._all.add(worker)
        try:
            worker.wait_ready(self.policy.pool.start_timeout_s)
        except WorkerDied as exc:
            self._discard(worker)
            self._last_error = str(exc)
            raise
        return worker

    def _replace(self) -> None:
        """Start a jail in the background and add it to the idle set when ready."""
        with self._cond:
            if self._closed:
                return
            self._starting += 1

        def start():
            worker, pause = None, 0.05
            while worker is None and not self._closed:
                try:
                    worker = self._spawn()
                except (
                    WorkerDied,
                    OSError,
                ) as exc:  # keep trying, backing off: the pool must return to N
                    self._last_error = str(exc)
                    time.sleep(pause)
                    pause = min(pause * 2, 2.0)
            with self._cond:
                self._starting -= 1
            if worker is not None:
                self._offer(worker)

        threading.Thread(target=start, name="lackjail-spawn", daemon=True).start()

    def _discard(self, worker: Worker) -> None:
        worker.kill()
        with self._cond:
            self._all.discard(worker)

    # -- lending --------------------------------------------------------

    def _acquire(self, timeout: float) -> Worker:
        """A free jail; callers that must wait are served first come, first served."""
        with self._cond:
            if self._closed:
                raise PoolError("the jail pool is closed")
            if self._idle and not self._waiters:
                return self._idle.pop()
            if len(self._waiters) >= self.policy.pool.queue:
                raise PoolError(
                    f"the run queue is full ({self.policy.pool.queue} waiting); retry later"
                )
            ticket = (threading.Event(), [])
            self._waiters.append(ticket)
            short = not self._starting and len(self._all) < self.size
        if short:
            self._replace()
        ready, slot = ticket
        ready.wait(timeout)
        with self._cond:
            if slot:
                return slot[0]
            self._waiters.remove(ticket)
            if self._closed:
                raise PoolError("the jail pool is closed")
            raise PoolError(f"no jail became free within {timeout:g} s{self._why()}")

    def _offer(self, worker: Worker) -> None:
        """Hand a free jail to the longest waiting caller, or keep it idle."""
        with self._cond:
            if self._closed:
                self._discard(worker)
                return
            if self._waiters:
                ready, slot = self._waiters.popleft()
                slot.append(worker)
                ready.set()
            else:
                self._idle.append(worker)
            self._cond.notify_all()

    def _why(self) -> str:
        return f" (last start error: {self._last_error})" if self._last_error else ""

    def _release(self, worker: Worker, retire: bool) -> None:
        if retire or worker.runs >= self.policy.pool.recycle_after:
            self._discard(worker)
            self._replace()
            return
        self._offer(worker)

    def execute(self, run: dict, on_call, on_output, wall_s: float | None = None) -> Outcome:
        """Run one frame on a free jail; waits (bounded) when all are busy."""
        wall = wall_s or self._limits.wall_s
        worker = self._acquire_healthy(self.policy.pool.start_timeout_s + wall)
        retire = True
        try:
            try:
                worker.wait_ready(self.policy.pool.start_timeout_s)
            except WorkerDied as exc:
                return Outcome(
                    "killed",
                    errors=[{"message": f"the jail died before the run: {exc}"}],
                    retire=True,
                )
            outcome = worker.execute(run, wall, self.policy.pool.kill_grace_s, on_call, on_output)
            retire = outcome.retire
            return outcome
        finally:
            self._release(worker, retire)

    def _acquire_healthy(self, timeout: float) -> Worker:
        """A free jail that is still alive: a dead one is replaced, not handed a run."""
        for _ in range(self.size + 1):
            worker = self._acquire(timeout)
            if worker.healthy():
                return worker
            self._discard(worker)
            self._replace()
        return self._acquire(timeout)

    # -- health and shutdown --------------------------------------------

    def check(self) -> int:
        """Ping idle jails; replace those that do not answer. Returns how many answered."""
        with self._cond:
            idle, self._idle = self._idle, []
        healthy = 0
        for worker in idle:
            if worker.ping():
                healthy += 1
                self._offer(worker)
            else:
                self._discard(worker)
                self._replace()
        return healthy

    def wait_full(self, timeout: float = 10.0) -> bool:
        """Block until every jail is started and idle (used by benchmarks and tests)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._idle) < self.size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def pids(self) -> list[int]:
        with self._cond:
            return [w.pid for w in self._all if w.alive]

    def close(self) -> None:
        """Stop every jail and wait for the ones still starting; no process is left."""
        with self._cond:
            self._closed = True
            workers = list(self._all)
            self._idle = []
            for ready, _ in self._waiters:  # they wake to find no jail: "the pool is closed"
                ready.set()
            self._cond.notify_all()
        for worker in workers:
            worker.stop()
        deadline = time.monotonic() + 15
        with self._cond:
            while self._starting and time.monotonic() < deadline:
                self._cond.wait(0.05)
            leftovers = list(self._all)
            self._all.clear()
        for worker in leftovers:
            worker.kill()
        self._close_launcher()

    def _close_launcher(self) -> None:
        if self.launcher is not None:
            self.launcher.close()
