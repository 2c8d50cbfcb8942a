"""The library call: `Jail` (and its asyncio twin) runs lackpy programs.

    with lackjail.Jail(policy="default", workers=2) as jail:
        result = jail.run("x = len([1, 2, 3])\\nx")

The controller validates first (a rejected program never reaches a jail),
resolves the kit, lends the program to a pooled jail, answers its tool calls
through the kit's session (which writes the trace), and builds the Result.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
import time
from dataclasses import asdict, dataclass, field

from lackjail import fanout, lang, protocol
from lackjail.checker import Checker
from lackjail.policy import Policy, load_policy
from lackjail.pool import Pool, Request

_DONE = object()  # the end of an AsyncJail.map


@dataclass
class Result:
    """What a run produced; `to_dict()` is the `--json` contract of DESIGN.md."""

    status: str
    value: object = None
    output: str = ""
    errors: list = field(default_factory=list)
    trace: list = field(default_factory=list)
    isolation: str = ""
    mode: str = ""
    stats: dict = field(default_factory=dict)
    written: list = field(default_factory=list)
    diff: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def exit_code(self) -> int:
        return protocol.exit_code(self.status)

    def to_dict(self) -> dict:
        return asdict(self)


def _invalid(errors, isolation="", mode="") -> Result:
    return Result(
        "invalid",
        errors=errors,
        isolation=isolation,
        mode=mode,
        stats={"wall_ms": 0.0, "cpu_ms": 0.0, "max_rss_kb": 0, "tool_calls": 0},
    )


def _settle(session, result: Result, dry_run: bool) -> None:
    """Keep the run's staged writes (a dry run shows them as a diff) if it ended ok, else drop
    them; a commit that fails makes the run an error that says what it left changed."""
    from lackjail.kit import CommitError

    result.trace = list(session.trace)
    if result.status != "ok":
        session.rollback()
    elif dry_run:
        result.diff = session.diff()
        session.rollback()
    else:
        try:
            result.written = session.commit()
        except CommitError as exc:  # the run did not do what it said
            result.status, result.value = "error", None
            result.written = exc.written  # what a failed undo left changed
            result.errors = [{"message": f"the run's writes could not be committed: {exc}"}]


class Jail:
    """A pool of jails under one policy and kit; a context manager."""

    def __init__(
        self,
        policy="default",
        kit=None,
        workers: int | None = None,
        workspace=None,
        mode: str | None = None,
        approve=None,
        isolation: str | None = None,
        extra_tools=None,
        language: str | None = None,
        audience: str = "library",
    ):
        self.policy: Policy = load_policy(policy)
        self.workspace = os.path.abspath(workspace or os.getcwd())
        self.approve = approve
        self.kit = _resolve_kit(kit, self.workspace, extra_tools)
        # AUDIENCE: how a rejection names a higher level ("cli", "mcp" or "library")
        self.checker = Checker(self.policy, self.kit, language, audience=audience)
        # what every run sends about the kit: computed once per Jail
        self._host_tools = list(self.kit.host_tools) if self.kit is not None else []
        self._jail_tools = (
            {k: list(v) for k, v in self.kit.jail_tools.items()} if self.kit is not None else {}
        )
        self.pool = Pool(self.policy, workers=workers, mode=mode, isolation_level=isolation)

    @property
    def isolation(self) -> str:
        return self.pool.isolation

    def __enter__(self) -> Jail:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.pool.close()

    def check(self, program, params=None) -> lang.ValidationResult:
        """Validate PROGRAM (and PARAMS: values or names) as this jail will; runs nothing."""
        return self.checker.check(program, params)

    def run(self, program, params=None, *, dry_run: bool = False, approve=None) -> Result:
        """Validate and run PROGRAM (str or bytes); never raises for what the program does."""
        return self._run(program, params, dry_run, approve, emit=None)

    def stream(self, program, params=None, *, dry_run: bool = False, approve=None):
        """Yield events as they happen: output, trace entries, and last the result."""
        events: queue.Queue = queue.Queue()

        def work():
            try:
                result = self._run(program, params, dry_run, approve, emit=events.put)
                events.put({"event": "result", **result.to_dict()})
            except BaseException as exc:  # delivered to the iterating thread, never lost
                events.put(exc)
            events.put(None)

        thread = threading.Thread(target=work, name="lackjail-stream", daemon=True)
        thread.start()
        while True:
            item = events.get()
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
        thread.join()

    def delegate(self, intent, params=None, *, run=True, config=None, root=None):
        """Write a program for INTENT (templates, rules, then models), validate it, run it here."""
        from lackjail import infer

        return infer.delegate(self, intent, params, run=run, config=config, root=root)

    # -- many programs (lackjail.fanout runs them; `lackjail batch` builds on these) --

    def map(self, programs, params=None, *, concurrency: int | None = None, window=None):
        """Run many programs, keeping every jail busy; yield their Results in input order.

        PROGRAMS: an iterable (read lazily) of program texts, or of
        `(program, params)` pairs whose params override PARAMS key by key.
        At most WINDOW programs are taken and not yet yielded. An exception
        (the pool closed, no jail free in time) stops the map: it is raised
        at that program's place, after every earlier Result, with a note
        naming the program's index.
        """
        for done in fanout.fan_out(
            lambda job: self.run(*_job(job, params)),
            programs,
            self._map_concurrency() if concurrency is None else concurrency,
            window,
            ordered=True,
        ):
            if done.error is not None:
                where = "reading the programs" if done.index < 0 else f"program #{done.index}"
                done.error.add_note(f"lackjail: Jail.map stopped at {where}")
                raise done.error
            yield done.value

    def as_completed(self, jobs, *, concurrency: int | None = None, window=None):
        """Run `(key, program, params)` jobs; yield `(key, Result)` as each finishes.

        Every job yields exactly once: an exception while running one (the
        pool failed, not the program) becomes a `killed` Result naming it.
        """
        for done in fanout.fan_out(
            lambda job: self.run(job[1], job[2]),
            jobs,
            self._map_concurrency() if concurrency is None else concurrency,
            window,
        ):
            if done.index < 0:
                raise done.error
            if isinstance(done.error, Exception):
                yield done.job[0], _killed(f"lackjail could not run this program: {done.error}")
            elif done.error is not None:
                raise done.error
            else:
                yield done.job[0], done.value

    def _map_concurrency(self) -> int:
        # One caller more than jails per jail: while a jail runs one program,
        # the controller prepares the next (validation, kit session).
        return 2 * self.pool.size

    def _run(self, program, params, dry_run, approve, emit) -> Result:
        started = time.perf_counter()
        params = dict(params or {})
        mode = self.pool.mode
        check = self.checker.check(program, params)
        if not check.valid:
            return _invalid([e.to_dict() for e in check.errors], self.isolation, mode)
        source = lang.decode_source(program)  # exactly the text the validator checked
        session = None
        if self.kit is not None:
            session = self.kit.session(
                self.policy,
                self.workspace,
                approve=approve or self.approve,
                on_event=(lambda e: emit({"event": "call", **e})) if emit else None,
                dry_run=dry_run,
            )
        output: list[str] = []

        def on_output(text):
            output.append(text)
            if emit:
                emit({"event": "output", "text": text})

        request = Request(source, params, self._host_tools, self._jail_tools, self.checker.language)
        try:
            outcome = self.pool.execute(
                request, session.call if session is not None else None, on_output
            )
            result = Result(
                outcome.status,
                outcome.value if outcome.status == "ok" else None,
                "".join(output),
                outcome.errors,
                isolation=self.isolation,
                mode=mode,
            )
            if session is not None:
                _settle(session, result, dry_run)
        finally:
            if session is not None:
                session.close()
        result.stats = {
            "wall_ms": round((time.perf_counter() - started) * 1000, 3),
            "cpu_ms": outcome.cpu_ms,
            "max_rss_kb": outcome.max_rss_kb,
            "tool_calls": len(result.trace),
        }
        return result


def _job(job, shared) -> tuple:
    """(program, params) of one Jail.map item: a text, or a (program, params) pair."""
    if isinstance(job, tuple):
        program, own = job
        return program, {**(shared or {}), **(own or {})}
    return job, shared


def _killed(message: str) -> Result:
    return Result(
        "killed",
        errors=[{"message": message}],
        stats={"wall_ms": 0.0, "cpu_ms": 0.0, "max_rss_kb": 0, "tool_calls": 0},
    )


def _resolve_kit(kit, workspace, extra_tools):
    if kit is None and not extra_tools:
        return None
    from lackjail.kit import resolve_kit

    return resolve_kit(kit, workspace=workspace, extra_tools=extra_tools)


class AsyncJail:
    """The asyncio twin of Jail: the same pool, awaited from an event loop."""

    def __init__(self, *args, **kwargs):
        self._args, self._kwargs = args, kwargs
        self.jail: Jail | None = None

    async def __aenter__(self) -> AsyncJail:
        self.jail = await asyncio.to_thread(Jail, *self._args, **self._kwargs)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self.jail is not None:
            await asyncio.to_thread(self.jail.close)

    async def run(self, program, params=None, **kwargs) -> Result:
        return await asyncio.to_thread(self.jail.run, program, params, **kwargs)

    async def stream(self, program, params=None, **kwargs):
        """Async iterator over the same events as Jail.stream."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()

        def work():
            try:
                for event in self.jail.stream(program, params, **kwargs):
                    loop.call_soon_threadsafe(events.put_nowait, event)
            except BaseException as exc:
                loop.call_soon_threadsafe(events.put_nowait, exc)
            loop.call_soon_threadsafe(events.put_nowait, None)

        task = loop.run_in_executor(None, work)
        while True:
            item = await events.get()
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
        await task

    async def map(self, programs, params=None, **kwargs):
        """Async iterator over the same Results, in the same order, as Jail.map."""
        loop = asyncio.get_running_loop()
        results: asyncio.Queue = asyncio.Queue(maxsize=1)  # the map's window is the buffer
        stopped = threading.Event()

        def deliver(item) -> bool:
            asyncio.run_coroutine_threadsafe(results.put(item), loop).result()
            return not stopped.is_set()

        def work():
            try:
                for result in self.jail.map(programs, params, **kwargs):
                    if not deliver(result):
                        return
            except BaseException as exc:
                deliver(exc)
            deliver(_DONE)

        task = loop.run_in_executor(None, work)
        try:
            while (item := await results.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stopped.set()
            while not task.done():  # let a thread blocked on a full queue leave
                with contextlib.suppress(asyncio.QueueEmpty):
                    results.get_nowait()
                await asyncio.sleep(0.01)
