"""A session's own jail: one zygote keeping one child that serves the session's runs in turn.

The child keeps the globals of each run for the next (the runner's session
mode), and serves nothing else: the jail is started for the session and never
lent by the pool, so no plain run and no other session reaches that state. The
child's rlimits bound the session as a whole (its memory holds every run's
state; each run gets its CPU and wall-clock limits for itself). When the child
ends (timeout, memory, a crash) the zygote forks a clean one, and `lost` says
why the state is gone; when the zygote itself ends, a new jail takes over.
"""

from __future__ import annotations

import threading
import time

from lackjail import protocol
from lackjail.pool import isolation
from lackjail.pool.jail_process import Child, JailDied, JailProcess
from lackjail.pool.run import Outcome, Request, Run

# Runs one session child may serve: enough that a session's state never ends by count.
SESSION_RUNS = 1_000_000


class SessionJail:
    """The jail of one session; `run` one request at a time, `close` from any thread."""

    def __init__(
        self,
        launcher,
        ident: int,
        max_frame: int,
        memory_mb: int,
        start_s: float,
        kill_grace_s: float,
    ):
        self._launcher, self._ident, self._max_frame = launcher, ident, max_frame
        self._memory_mb = memory_mb
        self._start_s, self._kill_grace_s = start_s, kill_grace_s
        self._running = threading.Lock()
        self.closed = False
        self.child: Child | None = None  # the child holding the state, once a run used it
        self.lost = ""  # why a run's end lost the state, until the next run takes it
        self.lost_now = ""  # why the state was gone when a run began, until that run takes it
        self.jail: JailProcess | None = self._start()

    def _start(self) -> JailProcess:
        jail = JailProcess(self._launcher, self._ident, self._max_frame)
        jail.memory_mb = self._memory_mb
        try:
            # A zygote forks its first child before it readies its heap for the children
            # (warm caches, immortal objects), to serve a pool's first run sooner; a session
            # serves all its runs from one child, so it lets that one go and takes the next.
            deadline = time.monotonic() + self._start_s
            jail.drop(jail.wait_ready_child(deadline))
            jail.wait_ready_child(deadline)
        except (JailDied, protocol.ProtocolError) as exc:
            jail.kill()
            raise JailDied(f"{exc}{jail.log_tail()}") from None
        return jail

    def _ready_child(self) -> tuple[JailProcess, Child]:
        """The session's jail and its child, ready for a run; a clean child (and `lost` saying
        why) when it ended, from a new jail when the zygote ended too."""
        if self.jail is not None:
            try:
                child = self.jail.wait_ready_child(time.monotonic() + self._start_s)
            except (JailDied, protocol.ProtocolError) as exc:
                self.jail.kill()
                self.jail = None
                if self.child is not None:
                    self.lost_now = f"its jail ended ({exc})"
        if self.jail is None:
            self.child = None
            self.jail = self._start()
            child = self.jail.wait_ready_child(time.monotonic() + self._start_s)
        if self.child is not None and child is not self.child:
            self.lost_now = "its process ended between runs"
        return self.jail, child

    def run(self, request: Request, tool_handler, on_output, limits) -> Outcome:
        """Run REQUEST on the session's child under LIMITS (see `Pool.execute`). Afterwards
        `lost` says why the state is gone when the run ended the child, `lost_now` why it was
        gone when the run began."""
        with self._running:
            if self.closed:
                return Outcome("killed", errors=[{"message": "the session is closed"}])
            try:
                jail, child = self._ready_child()
            except (JailDied, protocol.ProtocolError, OSError) as exc:
                self.child = None
                return Outcome(
                    "killed", errors=[{"message": f"the session's jail could not start: {exc}"}]
                )
            run = Run(jail, child, request, tool_handler, on_output, limits, SESSION_RUNS)
            outcome = run.execute(limits.wall_s, self._kill_grace_s)
            if child.gen in jail.children and not outcome.retire:
                self.child = child
            else:
                first = outcome.errors[0]["message"] if outcome.errors else outcome.status
                self.lost = f"the run before ended with '{outcome.status}' ({first})"
                self.child = None
                if outcome.retire:  # the zygote may be in a bad state too: a new jail next time
                    self._kill()
            if self.closed:
                self._kill()
            return outcome

    def _kill(self) -> None:
        if self.jail is not None:
            self.jail.kill()
            self.jail = None

    def take_lost(self) -> str:
        """Why the last run's end lost the state ('' when it did not); said once."""
        lost, self.lost = self.lost, ""
        return lost

    def take_lost_now(self) -> str:
        """Why the state was gone when the last run began ('' when it was not); said once."""
        lost, self.lost_now = self.lost_now, ""
        return lost

    def close(self) -> None:
        """End the jail; a run in flight ends `killed` and its thread reaps the jail."""
        self.closed = True
        if self._running.acquire(blocking=False):
            try:
                self._kill()
            finally:
                self._running.release()
        else:
            jail = self.jail  # the run's thread may drop it meanwhile: killing twice is harmless
            if jail is not None:
                jail.signal_kill()


class SessionJails:
    """Starts sessions' jails, and keeps one started ahead once sessions are in use: opening
    the next session then waits for no jail start (~30-100 ms, more under load)."""

    def __init__(self, launcher, max_frame: int, memory_mb: int, start_s: float, grace_s: float):
        self.launcher = launcher  # its owner closes it once every session jail has ended
        self._args = (launcher, 0, max_frame, memory_mb, start_s, grace_s)
        self._lock = threading.Lock()
        self._spare: SessionJail | None = None
        self._starting: threading.Thread | None = None
        self._closed = False

    def take(self) -> SessionJail:
        """A started session jail (the spare, else one started now); the next spare starts
        in the background. JailDied or OSError when none can start."""
        with self._lock:
            if self._closed:
                raise JailDied("the jail pool is closed")
            jail, self._spare = self._spare, None
        if jail is None:
            jail = SessionJail(*self._args)
        self._refill()
        return jail

    def _refill(self) -> None:
        with self._lock:
            if self._closed or self._spare is not None or self._starting is not None:
                return
            self._starting = threading.Thread(
                target=self._start_spare, name="lackjail-session-spare", daemon=True
            )
            self._starting.start()

    def _start_spare(self) -> None:
        try:
            jail = SessionJail(*self._args)
        except (JailDied, OSError):  # the next session starts its own, and says why it cannot
            jail = None
        with self._lock:
            self._starting = None
            if jail is not None and not self._closed:
                self._spare, jail = jail, None
        if jail is not None:
            jail.close()

    def close(self) -> None:
        """End the spare; a spare still starting is waited for, then ended."""
        with self._lock:
            self._closed = True
            spare, self._spare = self._spare, None
            starting = self._starting
        if starting is not None and starting is not threading.current_thread():
            starting.join()
        if spare is not None:
            spare.close()


def session_jails(level: str, policy, python_level: bool) -> SessionJails:
    """Session jails for a pool at isolation LEVEL under POLICY: zygotes that keep one child
    for every run of a session, at the level the pool's own jails run at, never a weaker one."""
    args = isolation.zygote_config(
        policy.limits, "reuse", SESSION_RUNS, spares=1, python_level=python_level, load_all=True
    )
    return SessionJails(
        isolation.launcher(level, args),
        protocol.max_frame(policy.limits.value_bytes),
        policy.limits.memory_mb,
        policy.pool.start_timeout_s,
        policy.pool.kill_grace_s,
    )
