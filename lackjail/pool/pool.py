"""The pool: N jails for one policy, kept by one supervisor thread, lent to one run at a time.

After gunicorn's arbiter: the supervisor is the only code that spawns jails,
watches them start, reaps them (pidfd), pings idle ones, kills stuck and
retired ones, and brings the pool back to N with a backoff when starts fail.
Callers only borrow a jail and give it back; `execute` does both around one
`Run`. Two things happen outside the supervisor, on purpose: the constructor
starts the first jail (before there is a supervisor, so that a host that
cannot isolate fails the constructor), and a borrower reads the idle jails'
reports when none is known to have a child ready (what the supervisor would
read, read in-line: see `_read_idle`).

Every jail the pool holds has one state (`Held`), changed in one place
(`_move`, under the pool's lock): starting -> idle <-> lent (or pinged) ->
retired -> reaped; at close, idle and starting ones are closing. The words:
ARCHITECTURE.md.
"""

from __future__ import annotations

import itertools
import os
import select
import threading
import time
from dataclasses import dataclass

from lackjail import protocol
from lackjail.errors import ArgumentError, HostError
from lackjail.policy import MAX_WORKERS, Limits, Policy
from lackjail.pool import early, isolation
from lackjail.pool import image as images
from lackjail.pool.jail_process import Child, JailDied, JailProcess
from lackjail.pool.run import Outcome, Request, Run
from lackjail.pool.session import SessionJail, SessionJails, session_jails

PING_EVERY_S = 5.0  # an idle jail is pinged when it has been idle this long
PING_TIMEOUT_S = 1.0  # a jail that does not answer within this is stuck: killed, replaced
# Once no run has started or ended for this long, the supervisor reads the idle jails' reports
# (spares spawned, ready), so a run that comes after a pause finds them adopted. While runs
# come and go, the run that borrows a jail reads them: back to back, the supervisor's reads
# cost ~100 us of CPU per run (a thread woken on cold caches, the GIL and the pool's lock
# taken from under the caller) for what the caller reads in-line in ~30.
SETTLE_S = 0.003


class PoolError(HostError, RuntimeError):
    """The pool cannot serve: closed, full, or no jail could start."""


STATES = ("starting", "idle", "lent", "pinged", "retired", "closing")


@dataclass
class Held:
    """Where one jail stands: its state, when it got there (an order: `seq`), and what the
    state needs (a starting jail's deadline, a lent jail's borrower thread)."""

    state: str
    seq: int
    deadline: float = 0.0
    borrower: int = 0


class Pool:
    """Jails for one policy. Thread-safe: many callers may run at once."""

    def __init__(
        self,
        policy: Policy,
        workers: int | None = None,
        mode: str | None = None,
        isolation_level: str | None = None,
        python_level: bool = False,
    ):
        if workers is not None and not 0 <= workers <= MAX_WORKERS:
            raise ArgumentError(
                f"workers must be between 1 and {MAX_WORKERS} (0 or None: the policy's "
                f"pool.workers), not {workers}"
            )
        self.policy = policy
        self.python_level = python_level  # its zygotes import the python level's modules
        self.size = workers or policy.pool.worker_count
        self.mode = mode or policy.pool.mode
        self.runs_per_child = policy.pool.recycle_after if self.mode == "reuse" else 1
        self.limits = policy.limits
        self.max_frame = protocol.max_frame(policy.limits.value_bytes)
        self._cond = threading.Condition()
        self._held: dict[JailProcess, Held] = {}  # every jail not yet reaped, and its state
        self._seq = itertools.count()
        self._lent_killed = threading.Event()  # closing: the lent jails have been killed
        self._waiters: list = []  # (event, slot), oldest first
        self._closed = False
        self._active_at = 0.0  # the latest borrow or give-back (time.monotonic)
        self._poke_when_quiet = False  # a long run is in flight: wake the supervisor at its end
        self._ids = itertools.count(1)
        self._last_error = ""
        self._backoff, self._next_start = 0.05, 0.0
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.launcher: isolation.Launcher | None = None
        # the zygotes of sessions' jails (session_jail)
        self._session_jails: SessionJails | None = None
        started = time.monotonic()
        first = self._start_first(isolation_level or policy.isolation, bool(isolation_level))
        self.cold_start_ms = (time.monotonic() - started) * 1000
        with self._cond:
            self._move(first, "idle")
        self._supervisor = threading.Thread(
            target=self._supervise, name="lackjail-supervisor", daemon=True
        )
        self._supervisor.start()

    @property
    def isolation(self) -> str:
        return self.launcher.level if self.launcher is not None else "none"

    # -- the jails' states ----------------------------------------------

    def _move(self, jail: JailProcess, state: str | None, **fields) -> None:
        """The one place a jail's state changes (lock held); None: reaped, the pool lets go of
        it. FIELDS: the new state's (deadline, borrower)."""
        if state is None:
            self._held.pop(jail, None)
            return
        assert state in STATES, state
        self._held.pop(jail, None)  # to the end: `_held` is in the order of the latest moves
        self._held[jail] = Held(state, next(self._seq), **fields)

    def _in(self, state: str) -> list[JailProcess]:
        """The jails in STATE, in the order they got there (lock held)."""
        return [jail for jail, held in self._held.items() if held.state == state]

    def _state(self, jail: JailProcess) -> str | None:
        held = self._held.get(jail)
        return held.state if held is not None else None

    @property
    def _idle(self) -> list[JailProcess]:
        """The idle jails, idle longest first."""
        return self._in("idle")

    @property
    def _starting(self) -> dict[JailProcess, float]:
        """The starting jails and their start deadlines."""
        return {jail: self._held[jail].deadline for jail in self._in("starting")}

    def _lent(self) -> dict[JailProcess, int]:
        """The lent jails and the threads running on them."""
        return {jail: self._held[jail].borrower for jail in self._in("lent")}

    # -- starting -------------------------------------------------------

    def _start_first(self, demanded: str, exact: bool) -> JailProcess:
        """Start the first jail and wait for it, at the strongest level this host has down
        to DEMANDED, the weakest the policy accepts (or at DEMANDED alone when EXACT; `any`:
        the strongest there is). Sets the launcher."""
        args = isolation.zygote_config(
            self.limits,
            self.mode,
            self.policy.pool.recycle_after,
            self.policy.pool.spares,
            python_level=self.python_level,
        )
        levels: tuple[str, ...] = isolation.LEVELS
        if demanded != "any":
            levels = (demanded,) if exact else levels[: levels.index(demanded) + 1]
        failures = []
        for level in levels:
            try:
                self.launcher = isolation.launcher(level, args)
                return self._start_now()
            except (isolation.IsolationError, images.ImageError, JailDied, OSError) as exc:
                failures.append((level, str(exc)))
                self._close_launcher()
                self.launcher = None
        why = "; ".join(f"{level}: {text}" for level, text in failures)
        if failures[0][0] == "nsjail":
            ok, cause = isolation.namespaces_status()
            why = why if ok else f"{cause}; {why}"
        if levels[-1] != "seccomp":
            weaker = isolation.LEVELS[isolation.LEVELS.index(levels[-1]) + 1]
            who = "this run" if exact else f"policy '{self.policy.name}'"
            raise isolation.IsolationError(
                f"{who} requires {levels[-1]} isolation"
                f"{' or stronger' if len(levels) > 1 else ''}, which this host cannot "
                f"provide: {why} (run 'lackjail doctor'; a policy with isolation = "
                f'"{weaker}" accepts the {weaker} level)'
            )
        raise PoolError(f"no jail could start: {why}")

    def _start_now(self) -> JailProcess:
        """The first jail, started (or the command's early jail, when it is exactly the one
        the launcher would start: `early.take`) and waited for."""
        spawned = early.take(self.launcher)
        jail = JailProcess(self.launcher, next(self._ids), self.max_frame, spawned)
        jail.memory_mb = self.limits.memory_mb
        try:
            jail.wait_ready_child(time.monotonic() + self.policy.pool.start_timeout_s)
        except (JailDied, protocol.ProtocolError) as exc:
            tail = jail.log_tail()  # before kill(), which closes the log
            jail.kill()
            raise JailDied(f"{exc}{tail}") from None
        return jail

    # -- the supervisor -------------------------------------------------

    def _supervise(self) -> None:
        """Spawn, watch starting jails, reap, ping idle ones, kill stuck and retired
        ones, keep N; until close()."""
        last_ping = time.monotonic()
        while True:
            with self._cond:
                if self._closed:
                    break
                self._kill_retired()
                missing = self._missing()
            self._spawn(missing)
            with self._cond:
                watched = {}
                for jail in self._in("starting"):
                    for fd in jail.watch_fds():
                        watched[fd] = jail
                quiet = self._quiet()
                for jail in self._in("idle"):
                    for fd in jail.watch_fds() if quiet else [jail.pidfd]:
                        watched[fd] = jail
                # a run in flight since SETTLE_S or more: the give-back wakes the supervisor
                self._poke_when_quiet = bool(self._lent()) and not self._active_since(SETTLE_S)
                timeout = self._next_timer()
            poller = select.poll()
            poller.register(self._wake_r, select.POLLIN)
            for fd in watched:
                poller.register(fd, select.POLLIN)
            events = poller.poll(timeout * 1000)
            readable: dict[JailProcess, set[int]] = {}
            for fd, _ in events:
                if fd == self._wake_r:
                    _drain(self._wake_r)
                else:
                    readable.setdefault(watched[fd], set()).add(fd)
            with self._cond:
                quiet = self._quiet()  # a run may have started since the poll began
                for jail, fds in readable.items():
                    state = self._state(jail)
                    if state == "starting":
                        self._pump_starting(jail, fds)
                    elif state == "idle" and (quiet or jail.pidfd in fds):
                        self._pump_idle(jail, fds if quiet else {jail.pidfd})
                self._check_start_deadlines()
            if time.monotonic() - last_ping >= PING_EVERY_S:
                last_ping = time.monotonic()
                self.ping_idle(idle_for=PING_EVERY_S)
        self._shut_down()

    def _shut_down(self) -> None:
        """Kill the idle and starting jails (nothing runs there; asking a zygote to stop waits
        for it to read its control socket, which a starting one does only once it has started:
        closing right after the first run waited for the second jail's start, ~50 ms, and a
        busy one for its next read) and the lent ones (their runs end as `killed` and give them
        back), reap each one given back; then the pool holds nothing, and no process of any of
        its jails is left (`JailProcess.kill`)."""
        with self._cond:
            idle = self._in("idle") + self._in("starting")
            for jail in idle:
                self._move(jail, "closing")
            lent = self._in("lent") + self._in("pinged")
        for jail in lent:
            jail.signal_kill()
        self._lent_killed.set()
        for jail in idle:
            jail.kill()
        with self._cond:
            for jail in idle:
                self._move(jail, None)
            while True:
                self._kill_retired()
                if not self._held:
                    break
                self._cond.wait(PING_TIMEOUT_S)
            self._close_launcher()
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)
            self._wake_r = self._wake_w = -1
            self._cond.notify_all()

    def _quiet(self) -> bool:
        """No run in flight, and none started or ended for SETTLE_S (lock held)."""
        return not self._lent() and not self._active_since(SETTLE_S)

    def _active_since(self, seconds: float) -> bool:
        return time.monotonic() - self._active_at < seconds

    def _next_timer(self) -> float:
        now = time.monotonic()
        times = [now + PING_EVERY_S, *self._starting.values()]
        if not self._poke_when_quiet and self._active_at + SETTLE_S > now:
            times.append(self._active_at + SETTLE_S)  # then, is the pool quiet?
        if len(self._held) < self.size:
            times.append(self._next_start)
        return max(0.0, min(times) - now)

    def _missing(self) -> int:
        """How many jails to start now: the pool is short of N and no backoff holds (lock
        held)."""
        if time.monotonic() < self._next_start:
            return 0
        return max(0, self.size - len(self._held))

    def _spawn(self, count: int) -> None:
        """Start COUNT jails, without the lock: creating a process waits for nsjail's exec
        (milliseconds on a busy machine), and a run borrowing a jail need not wait for that.
        Only the supervisor adds jails, so the count stays right."""
        for _ in range(count):
            try:
                jail = JailProcess(self.launcher, next(self._ids), self.max_frame)
            except OSError as exc:
                with self._cond:
                    self._failed(str(exc))
                return
            jail.memory_mb = self.limits.memory_mb
            with self._cond:
                deadline = time.monotonic() + self.policy.pool.start_timeout_s
                self._move(jail, "starting", deadline=deadline)

    def _pump_starting(self, jail: JailProcess, readable: set[int]) -> None:
        try:
            jail.pump(readable)
            if not jail.alive:
                raise JailDied("the jail exited")
        except (JailDied, protocol.ProtocolError) as exc:
            self._failed(f"{exc}{jail.log_tail()}")
            self._retire(jail)
            return
        if jail.ready_count():
            self._backoff = 0.05
            self._offer(jail)

    def _pump_idle(self, jail: JailProcess, readable: set[int]) -> None:
        """Read what an idle jail reports (children spawned, ready, ended) while it waits,
        so the run that borrows it finds its spares adopted; a jail that ended or broke the
        protocol is retired. READABLE: its descriptors the supervisor's poll found readable
        (a run may have borrowed and given back the jail since: `pump` allows for that)."""
        try:
            jail.pump(readable)
            if not jail.alive:
                raise JailDied("the jail exited while idle")
        except (JailDied, protocol.ProtocolError, OSError):
            self._retire(jail)

    def _check_start_deadlines(self) -> None:
        now = time.monotonic()
        for jail, deadline in self._starting.items():
            if now >= deadline:
                why = f"the jail was not ready within {self.policy.pool.start_timeout_s:g} s"
                self._failed(f"{why}{jail.log_tail()}")
                self._retire(jail)

    def _failed(self, why: str) -> None:
        """A start failed: remember why, and wait longer before the next one."""
        self._last_error = why
        self._next_start = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, 2.0)

    def _retire(self, jail: JailProcess) -> None:
        """Retire JAIL (lock held): the supervisor kills and reaps it."""
        self._move(jail, "retired")
        self._wake()

    def _kill_retired(self) -> None:
        for jail in self._in("retired"):
            jail.kill()
            self._move(jail, None)

    def _wake(self) -> None:
        """Wake the supervisor from its poll (lock held: the pipe closes under it)."""
        if self._wake_w < 0:
            return
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass

    def ping_idle(self, idle_for: float = 0.0) -> int:
        """Ping the jails idle for IDLE_FOR seconds or more; kill and replace those
        that do not answer within PING_TIMEOUT_S. Returns how many answered."""
        now = time.monotonic()
        with self._cond:
            jails = [j for j in self._in("idle") if now - j.last_used >= idle_for]
            for jail in jails:
                self._move(jail, "pinged")
        answered = 0
        for jail in jails:
            ok = jail.answers_ping(time.monotonic() + PING_TIMEOUT_S)
            answered += ok
            self._give_back(jail, retire=not ok)
        return answered

    # -- lending --------------------------------------------------------

    def _borrow(self, timeout: float, modules=()) -> JailProcess:
        """A free jail: the one with the most spares ready that have MODULES (the python
        level's facade modules) loaded (the supervisor reads their `ready` while the jail is
        idle; a jail still forking has fewer), else the one with the most spares ready (it
        loads MODULES first: once per jail, where waiting for a fork would be every run's),
        else the one used last; callers that must wait are served first come, first served.
        When no idle jail is known to have a ready child, what they reported is read first."""
        with self._cond:
            if self._closed:
                raise PoolError("the jail pool is closed")
            idle = self._in("idle")
            if len(idle) > 1 and not self._waiters:
                if not any(j.ready_count() for j in idle):
                    self._read_idle()
                    idle = self._in("idle")
            if idle and not self._waiters:
                # ties go to the jail used last: its child and memory are still in the caches
                jail = max(
                    reversed(idle),
                    key=(lambda j: (j.ready_count(modules), j.ready_count()))
                    if modules
                    else JailProcess.ready_count,
                )
                return self._lend(jail)
            if len(self._waiters) >= self.policy.pool.queue:
                raise PoolError(
                    f"the run queue is full ({self.policy.pool.queue} waiting); retry later"
                )
            ticket = (threading.Event(), [])
            self._waiters.append(ticket)
        ready, slot = ticket
        ready.wait(timeout)
        with self._cond:
            if slot:
                return self._lend(slot[0])
            self._waiters.remove(ticket)
            if self._closed:
                raise PoolError("the jail pool is closed")
            raise PoolError(f"no jail became free within {timeout:g} s{self._why()}")

    def _read_idle(self) -> None:
        """Read the idle jails' news now (lock held). The supervisor reads them only once the
        pool has been quiet SETTLE_S; back to back, the jail used last is often still
        forking while another has a spare ready whose report nobody has read, and lending
        the one used last made the run wait for a fork (~1 in 3 back-to-back runs, ~5 ms
        each). One poll over all of them; only jails with something to read are read."""
        watched = {fd: jail for jail in self._in("idle") for fd in jail.watch_fds()}
        poller = select.poll()
        for fd in watched:
            poller.register(fd, select.POLLIN)
        readable: dict[JailProcess, set[int]] = {}
        for fd, _ in poller.poll(0):
            readable.setdefault(watched[fd], set()).add(fd)
        for jail, fds in readable.items():
            self._pump_idle(jail, fds)

    def _lend(self, jail: JailProcess) -> JailProcess:
        self._active_at = time.monotonic()
        self._move(jail, "lent", borrower=threading.get_ident())
        return jail

    def _offer(self, jail: JailProcess) -> None:
        """Hand a free jail to the longest waiting caller (lent to it, which names itself
        when it wakes), or keep it idle (lock held)."""
        if self._waiters:
            ready, slot = self._waiters.pop(0)
            self._move(jail, "lent")
            slot.append(jail)
            ready.set()
        else:
            self._move(jail, "idle")
        self._cond.notify_all()

    def _give_back(self, jail: JailProcess, retire: bool) -> None:
        with self._cond:
            if self._closed:
                self._move(jail, "retired")  # the supervisor's shutdown reaps it
                self._cond.notify_all()
            elif retire or jail.runs >= self.policy.pool.recycle_after or not jail.alive:
                self._retire(jail)
            else:
                jail.last_used = time.monotonic()
                self._offer(jail)
            self._active_at = time.monotonic()
            if self._poke_when_quiet and not self._lent():
                self._poke_when_quiet = False
                self._wake()

    def _why(self) -> str:
        return f" (last start error: {self._last_error})" if self._last_error else ""

    def execute(
        self, request: Request, tool_handler=None, on_output=None, limits: Limits | None = None
    ) -> Outcome:
        """Run REQUEST on a free jail; waits (bounded) when all are busy.

        TOOL_HANDLER(tool, args, kwargs, deadline) answers a host tool call with
        an object that has `ok`, `value`, `error` and `verdict` (the kit's
        CallOutcome); a verdict ends the run with that status. ON_OUTPUT(text)
        receives printed text as it arrives. LIMITS: this run's, at most the
        policy's (wall_s, cpu_s and memory_mb may be tighter). Never raises for
        what the program or the jail does.
        """
        limits = limits or self.limits
        wall = limits.wall_s
        # A run may be written to a child that has not said `ready` yet rather than wait for
        # one: it reads the run once confined (no `ready` to wait for, no sleep on either
        # side, and a child that finds its run waiting skips its warm-up). Not when the run
        # lowers the memory limit: the zygote sets that on a child that is confined already.
        # A child that ends before it is ready never read the run: it goes to a ready child.
        unready = limits.memory_mb >= self.limits.memory_mb
        while True:
            try:
                jail, child = self._borrow_ready(
                    self.policy.pool.start_timeout_s, wall, request.modules, unready
                )
            except (JailDied, protocol.ProtocolError) as exc:
                return Outcome(
                    "killed",
                    errors=[{"message": f"the jail died before the run: {exc}"}],
                    retire=True,
                )
            retire = True
            try:
                run = Run(
                    jail, child, request, tool_handler, on_output, limits, self.runs_per_child
                )
                outcome = run.execute(wall, self.policy.pool.kill_grace_s)
                retire = outcome.retire
            finally:
                self._give_back(jail, retire)
            if not (outcome.unstarted and unready):
                return outcome
            unready = False

    def session_jail(self) -> SessionJail:
        """A jail of its own for one session, outside the pool's lending: its zygote keeps one
        child, which serves every run of the session (see `SessionJail`)."""
        with self._cond:
            if self._closed:
                raise PoolError("the jail pool is closed")
            if self._session_jails is None:
                self._session_jails = session_jails(self.isolation, self.policy, self.python_level)
            jails = self._session_jails
        return jails.take()

    def _borrow_ready(
        self, start_timeout: float, wall: float, modules=(), unready: bool = False
    ) -> tuple[JailProcess, Child]:
        """A jail lent to this run and its ready child, which has MODULES (the python level's
        facade modules) loaded (with UNREADY, a child not ready yet where none is). A jail
        found ended is retired and another borrowed, up to N+1 times (nothing of the run
        reached it); a jail that breaks the protocol, cannot load MODULES or has no child
        ready in time fails the run (JailDied, ProtocolError)."""
        attempts = self.size + 1
        while True:
            attempts -= 1
            jail = self._borrow(start_timeout + wall, modules)
            try:
                deadline = time.monotonic() + start_timeout
                return jail, jail.wait_ready_child(deadline, modules, unready)
            except (JailDied, protocol.ProtocolError):
                self._give_back(jail, retire=True)
                if jail.alive or not attempts:
                    raise

    # -- for tests, benchmarks and shutdown -----------------------------

    def wait_full(self, timeout: float = 10.0) -> bool:
        """Block until every jail is started and idle (used by benchmarks and tests)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._in("idle")) < self.size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def pids(self) -> list[int]:
        with self._cond:
            return [j.pid for j in self._held if j.alive]

    def close(self) -> None:
        """Stop every jail; runs in progress end as `killed`. When it returns no process is
        left, unless the calling thread itself is running a program on this pool (a tool
        closing its own Jail): that jail is already killed, and reaped when its run gives
        it back."""
        with self._cond:
            self._closed = True
            for ready, _ in self._waiters:  # they wake to find no jail: "the pool is closed"
                ready.set()
            self._cond.notify_all()
            self._wake()
            mine = threading.get_ident() in self._lent().values()
            session_jails = self._session_jails
        if session_jails is not None:  # the spare (sessions end their own jails)
            session_jails.close()
        if self._supervisor is threading.current_thread():
            return
        if mine:  # bounded by the supervisor's life: a dead one sets nothing
            while not self._lent_killed.wait(0.1) and self._supervisor.is_alive():
                pass
        else:
            self._supervisor.join()

    def _close_launcher(self) -> None:
        if self.launcher is not None:
            self.launcher.close()
        if self._session_jails is not None:
            self._session_jails.launcher.close()


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass
