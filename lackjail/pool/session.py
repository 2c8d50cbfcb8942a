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
            jail.wait_ready_child(time.monotonic() + self._start_s)
        except (JailDied, protocol.ProtocolError) as exc:
            jail.kill()
            raise JailDied(f"{exc}{jail.log_tail()}") from None
        return jail

    def _ready_child(self) -> Child:
        """The session's child, ready for a run; a clean one (and `lost` saying why) when it
        ended, from a new jail when the zygote ended too."""
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
        return child

    def run(self, request: Request, tool_handler, on_output, limits) -> Outcome:
        """Run REQUEST on the session's child under LIMITS (see `Pool.execute`). Afterwards
        `lost` says why the state is gone when the run ended the child, `lost_now` why it was
        gone when the run began."""
        with self._running:
            if self.closed:
                return Outcome("killed", errors=[{"message": "the session is closed"}])
            try:
                child = self._ready_child()
            except (JailDied, protocol.ProtocolError, OSError) as exc:
                self.child = None
                return Outcome(
                    "killed", errors=[{"message": f"the session's jail could not start: {exc}"}]
                )
            run = Run(self.jail, child, request, tool_handler, on_output, limits, SESSION_RUNS)
            outcome = run.execute(limits.wall_s, self._kill_grace_s)
            if child.gen in self.jail.children and not outcome.retire:
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
