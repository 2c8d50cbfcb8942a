"""Sessions: an agent's runs that share their state, in a jail of their own.

    with jail.session() as s:
        s.run("files = find_files('**/*.py')")
        s.run("[f for f in files if 'pkg' in f]")

What a run of a session binds (variables, functions, classes, and its
parameters) is there for the session's next run, and for nothing else: each
session is served by one child in a jail started for it alone (see
`lackjail.pool.session`), never by the pool that serves plain runs. The
controller validates each program knowing the names the session's earlier
runs bound, taken from its own validation of those programs, never from what
the jail reports. A Jail keeps at most `pool.max_sessions` open and closes one
left idle for `pool.session_idle_s` (or the session's own idle timeout).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lackjail.errors import ArgumentError
from lackjail.policy import positive_number
from lackjail.pool import PoolError
from lackjail.pool.jail_process import JailDied
from lackjail.signatures import takes

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping

    from lackjail.api import AsyncJail, Jail, Result
    from lackjail.pool.run import Outcome, Request


class SessionError(PoolError):
    """A session cannot serve: it is closed (by its caller, its idle timeout or its Jail), or
    its Jail has as many sessions open as its policy allows."""


class Session:
    """Runs that share their state; made by `Jail.session()`, a context manager."""

    def __init__(self, jail: Jail, idle_timeout_s: float | None = None):
        idle = jail.policy.pool.session_idle_s if idle_timeout_s is None else idle_timeout_s
        if not positive_number(idle):
            raise ArgumentError(
                f"idle_timeout_s must be a positive number of seconds, not {idle!r}"
            )
        self.idle_timeout_s = float(idle)
        self._jail = jail
        self._names: set[str] = set()
        self._defined: tuple[str, ...] = ()  # _names, sorted: what the validator is given
        self._running = threading.Lock()  # one run at a time: each sees the state the last left
        self._busy = True  # the reaper leaves a busy session alone (starting counts)
        self.last_used = time.monotonic()
        self.ended = ""  # why the session is closed, once it is
        jail._sessions.add(self)  # SessionError when the Jail has its maximum open
        try:
            self._jail_of_its_own = jail.pool.session_jail()
        except (JailDied, OSError) as exc:
            jail._sessions.remove(self)
            raise SessionError(f"the session's jail could not start: {exc}") from None
        except BaseException:
            jail._sessions.remove(self)
            raise
        self._busy = False

    @property
    def closed(self) -> bool:
        return bool(self.ended)

    @property
    def names(self) -> tuple[str, ...]:
        """The names the session's runs have bound so far (what the next run may use)."""
        return tuple(sorted(self._names))

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"closed: {self.ended}" if self.ended else f"{len(self._names)} names"
        return f"<lackjail.Session {state}>"

    def _prepared(
        self,
        program: str | bytes,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        cpu_s: float | None = None,
        memory_mb: int | None = None,
        seed: int | None = None,
        approve: Callable[[dict], bool] | None = None,
    ) -> Callable[[Callable | None], Result]:
        """The run that `run` and `stream` make of their arguments, as RUN(emit); its limits and
        seed are checked here, before anything runs."""
        limits = self._jail._limits(timeout, cpu_s, memory_mb)
        seed = self._jail._seed(seed)

        def run(emit):
            with self._running:
                return self._jail._run(
                    program,
                    params,
                    approve=approve,
                    emit=emit,
                    limits=limits,
                    session=self,
                    seed=seed,
                )

        return run

    @takes(_prepared)
    def run(self, *args: Any, **kwargs: Any) -> Result:
        """Run PROGRAM in the session's state; what it binds stays for the next run. PARAMS
        are bound as variables too. TIMEOUT, CPU_S and MEMORY_MB tighten the policy's limits
        for this run (MEMORY_MB bounds the whole session's memory while it runs); SEED seeds
        `random` before it (see Jail.run). Raises SessionError when the session is closed;
        never raises for what the program does."""
        return self._prepared(*args, **kwargs)(None)

    @takes(_prepared)
    def stream(self, *args: Any, **kwargs: Any) -> Iterator[dict | Result]:
        """As `run`, yielding events as they happen (output, tool calls); the last is the Result."""
        from lackjail.api import _streamed

        return _streamed(self._prepared(*args, **kwargs))

    def close(self) -> None:
        """End the session and its jail; its state is gone. Closing twice is harmless."""
        self._end("it was closed")

    # -- what Jail._run asks of a session (the run lock is held) ---------

    def _begin(self) -> tuple[tuple[str, ...], str]:
        """(the names earlier runs bound, why the state was lost since the last run or '')."""
        if self.ended:
            raise SessionError(f"the session is closed ({self.ended}); open a new one")
        self._busy = True
        lost = self._jail_of_its_own.take_lost()
        if lost:
            self._names.clear()
            self._defined = ()
        return self._defined, lost

    def _execute(self, request: Request, tool_handler, on_output, limits) -> Outcome:
        return self._jail_of_its_own.run(request, tool_handler, on_output, limits)

    def _end_run(self, bound: tuple[str, ...]) -> str:
        """Keep the names the run BOUND (none when it did not run); why the state was lost
        while it ran ('' when it was not: it is told to this run, and the next starts clean)."""
        lost = self._jail_of_its_own.take_lost_now()
        if lost:
            self._names.clear()
        if lost or not self._names.issuperset(bound):
            self._names.update(bound)
            self._defined = tuple(sorted(self._names))
        self._busy = False
        self.last_used = time.monotonic()  # later, never sooner: the reaper need not wake
        return lost

    def _end(self, why: str) -> None:
        if self.ended:
            return
        self.ended = why
        self._jail_of_its_own.close()
        self._jail._sessions.remove(self)


class Sessions:
    """The open sessions of one Jail: at most MAX; a reaper thread closes idle ones."""

    def __init__(self, maximum: int):
        self.maximum = maximum
        self._open: set[Session] = set()
        self._cond = threading.Condition()
        self._reaper: threading.Thread | None = None
        self._closed = False

    def add(self, session: Session) -> None:
        with self._cond:
            if self._closed:
                raise SessionError("the Jail is closed")
            if len(self._open) >= self.maximum:
                raise SessionError(
                    f"this Jail has {len(self._open)} sessions open, its policy's maximum "
                    "(pool.max_sessions); close one (session.close()) or raise the maximum"
                )
            self._open.add(session)
            if self._reaper is None:
                self._reaper = threading.Thread(
                    target=self._reap, name="lackjail-sessions", daemon=True
                )
                self._reaper.start()
            self._cond.notify_all()

    def remove(self, session: Session) -> None:
        with self._cond:
            self._open.discard(session)
            self._cond.notify_all()

    def close(self) -> None:
        """Close every session (their runs in flight end `killed`) and stop the reaper."""
        with self._cond:
            self._closed = True
            sessions = list(self._open)
            self._cond.notify_all()
        for session in sessions:
            session._end("its Jail was closed")
        if self._reaper is not None and self._reaper is not threading.current_thread():
            self._reaper.join()

    def _reap(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                now = time.monotonic()
                # a busy session is idle from its run's end at the soonest: not before now
                due = {s: (now if s._busy else s.last_used) + s.idle_timeout_s for s in self._open}
                expired = [s for s, when in due.items() if when <= now]
                if not expired:
                    wait = min(min(due.values()) - now, threading.TIMEOUT_MAX) if due else None
                    self._cond.wait(wait)
                    continue
            for session in expired:
                if not session._running.acquire(blocking=False):  # a run just began
                    time.sleep(0.01)  # it marks the session busy at once
                    continue
                try:
                    if time.monotonic() - session.last_used >= session.idle_timeout_s:
                        session._end(f"it was idle for more than {session.idle_timeout_s:g} s")
                finally:
                    session._running.release()


class AsyncSession:
    """The asyncio twin of Session, made by `AsyncJail.session()`: `async with` it."""

    def __init__(self, ajail: AsyncJail, idle_timeout_s: float | None = None):
        self._ajail = ajail
        self.idle_timeout_s = idle_timeout_s
        self.session: Session | None = None

    async def open(self) -> AsyncSession:
        """Start the session's jail (done by `async with` and the first run)."""
        if self.session is None:
            jail = self._ajail._opened()
            from asyncio import to_thread

            self.session = await to_thread(jail.session, self.idle_timeout_s)
        return self

    async def __aenter__(self) -> AsyncSession:
        return await self.open()

    async def _session(self) -> Session:
        await self.open()
        assert self.session is not None  # open() made it
        return self.session

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self.session is not None:
            from asyncio import to_thread

            await to_thread(self.session.close)

    @property
    def names(self) -> tuple[str, ...]:
        return self.session.names if self.session is not None else ()

    @takes(Session.run)
    async def run(self, *args: Any, **kwargs: Any) -> Result:
        """See Session.run."""
        session = await self._session()
        from asyncio import to_thread

        return await to_thread(session.run, *args, **kwargs)

    @takes(Session.stream)
    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict | Result]:
        """See Session.stream."""
        from lackjail.api import _astreamed

        session = await self._session()
        events = session.stream(*args, **kwargs)  # a bad limit raises here, not in a thread
        async for event in _astreamed(lambda: events):
            yield event
