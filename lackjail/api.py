"""The library call: `Jail` (and its asyncio twin) runs lackpy programs.

    with lackjail.Jail(policy="default", workers=2, tools=[lookup]) as jail:
        result = jail.run("x = len([1, 2, 3])\\nx", timeout=2)
        with jail.session() as s:       # runs that keep their state
            s.run("rows = lookup('a')")
            s.run("len(rows)")

The controller validates first (a rejected program never reaches a jail),
resolves the kit, lends the program to a pooled jail (a session's own jail for
a session's run), answers its tool calls through the kit's session (which
writes the trace), and builds the Result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lackjail import fanout, lang
from lackjail.checker import Checker
from lackjail.errors import ArgumentError
from lackjail.policy import MAX_WORKERS, Limits, Policy, PolicyError, load_policy, positive_number
from lackjail.pool import Pool, Request
from lackjail.protocol import SEED_MAX
from lackjail.result import Result, stats
from lackjail.sessions import AsyncSession, Session, Sessions
from lackjail.signatures import takes
from lackjail.workspace.hostfs import Root

if TYPE_CHECKING:
    import asyncio

_DONE = object()  # the end of an AsyncJail.map

Program = str | bytes
Params = Mapping[str, Any]
Approver = Callable[[dict], bool]
# Tools given as Python callables: a list of named callables, or a dict of name -> callable.
Tools = Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]]


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
    """A pool of jails under one policy and kit; a context manager.

    POLICY: a bundled policy's name, a policy file, a dict or a Policy. KIT: a
    kit's name, a kit file, tool names or a Kit (see `lackjail.kit.resolve_kit`).
    TOOLS: Python callables as tools, a list of named callables or a dict of
    name -> callable (functions, closures, bound methods, lambdas by dict,
    `async def`); each one's signature and docstring make its spec.
    TOOL_LOOP: the event loop async tools are awaited on (default: a loop of
    the Jail's own). APPROVE(call) -> bool answers tools that need approval.
    PROCESSES: controller processes sharing the jails, "auto" (the policy's
    pool.processes, 0 by default: one on a small host, one per two jails on a
    many-core one) or a number; see `lackjail.shards`.
    """

    def __init__(
        self,
        policy: str | os.PathLike | Mapping[str, Any] | Policy | None = "default",
        kit: Any = None,
        workers: int | None = None,
        workspace: str | os.PathLike | None = None,
        mode: str | None = None,
        approve: Approver | None = None,
        isolation: str | None = None,
        extra_tools: Any = None,
        language: str | None = None,
        tools: Tools | None = None,
        tool_loop: asyncio.AbstractEventLoop | None = None,
        audience: str = "library",
        *,
        processes: int | str | None = None,
    ):
        self.policy: Policy = load_policy(policy)
        # opened once when tools may touch it: every run acts beneath this descriptor, whatever
        # the path names later (a Jail without tools needs no workspace: it may run in `/`)
        tooled = kit is not None or bool(extra_tools) or bool(tools)
        # a Root passed in (a server's, shared by its jails) is that very folder, not reopened
        opened = workspace if isinstance(workspace, Root) else None
        self._root = (opened or Root(workspace)) if tooled else None
        self.workspace = (
            self._root.path if self._root is not None else os.path.abspath(workspace or os.getcwd())
        )
        self.approve = approve
        self._callables = None  # the provider of TOOLS, which may own an event loop
        self.kit = self._resolve_kit(kit, extra_tools, tools, tool_loop)
        # AUDIENCE: how a rejection names a higher level ("cli", "mcp" or "library")
        self.checker = Checker(self.policy, self.kit, language, audience=audience)
        self._audience = audience
        # what every run sends about the kit: computed once per Jail
        self._host_tools = list(self.kit.host_tools) if self.kit is not None else []
        self._jail_tools = (
            {k: list(v) for k, v in self.kit.jail_tools.items()} if self.kit is not None else {}
        )
        self.pool = self._open_pool(workers, mode, isolation, processes)
        self._sessions = Sessions(self.policy.pool.max_sessions)

    def _open_pool(self, workers, mode, isolation, processes):
        """The Pool of this process, or (PROCESSES > 1) the shards sharing the jails."""
        from lackjail import shards

        if workers is not None and not 0 <= workers <= MAX_WORKERS:
            raise ArgumentError(
                f"workers must be between 1 and {MAX_WORKERS} (0 or None: the policy's "
                f"pool.workers), not {workers}"
            )
        size = workers or self.policy.pool.worker_count
        if processes is None or processes == "auto":
            count = shards.processes_for(
                self.policy.pool.processes, size, key="policy key 'pool.processes'"
            )
        else:
            count = shards.processes_for(processes, size)
        if count > 1:
            from lackjail.shards.parent import Shards

            return Shards(self, count, size, mode, isolation)
        return Pool(
            self.policy,
            workers=workers,
            mode=mode,
            isolation_level=isolation,
            python_level=self.checker.language == "python",
        )

    @property
    def processes(self) -> int:
        """How many controller processes run this Jail's jails (1: this process alone)."""
        return self.pool.count if self._sharded else 1

    @property
    def _sharded(self) -> bool:
        return not isinstance(self.pool, Pool)

    @property
    def isolation(self) -> str:
        """The isolation level this Jail's runs get (`nsjail`, `landlock`, `seccomp`)."""
        return self.pool.isolation

    @property
    def root(self) -> Root | None:
        """The workspace folder this Jail opened once (its tools act beneath it); None for a
        Jail without tools, which opens no workspace."""
        return self._root

    @property
    def mode(self) -> str:
        """`fresh` (a new process per run) or `reuse` (a process serves many runs)."""
        return self.pool.mode

    @property
    def workers(self) -> int:
        """How many jails the pool keeps (`workers=`, or the policy's pool.workers)."""
        return self.pool.size

    def wait_ready(self, timeout: float = 10.0) -> bool:
        """Block until every worker has started and is idle (for benchmarks); False on timeout."""
        return self.pool.wait_full(timeout)

    def __enter__(self) -> Jail:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End every session, then the pool (runs in flight end `killed`)."""
        self._sessions.close()
        self.pool.close()
        if self._callables is not None:
            self._callables.close()
        # The workspace's descriptor is not closed here but with the last reference to it: a
        # tool call abandoned at its timeout may still use it, and a closed descriptor's
        # number can come back naming anything another open gets.

    def check(
        self, program: Program, params: Params | Iterable[str] | None = None
    ) -> lang.ValidationResult:
        """Validate PROGRAM (and PARAMS: values or names) as this jail will; runs nothing."""
        return self.checker.check(program, params)

    def _prepared(
        self,
        program: Program,
        params: Params | None = None,
        *,
        timeout: float | None = None,
        cpu_s: float | None = None,
        memory_mb: int | None = None,
        seed: int | None = None,
        dry_run: bool = False,
        approve: Approver | None = None,
    ) -> Callable[[Callable | None], Result]:
        """The run that `run` and `stream` make of their arguments, as RUN(emit); its limits and
        seed are checked here, before anything runs."""
        limits = self._limits(timeout, cpu_s, memory_mb)
        seed = self._seed(seed)
        return lambda emit: self._run(
            program, params, dry_run=dry_run, approve=approve, emit=emit, limits=limits, seed=seed
        )

    @takes(_prepared)
    def run(self, *args: Any, **kwargs: Any) -> Result:
        """Validate and run PROGRAM (str or bytes); never raises for what the program does.

        TIMEOUT (wall-clock seconds), CPU_S and MEMORY_MB tighten the policy's
        limits for this run; a looser value is a PolicyError. SEED seeds the
        program's `random` (the python level's) so that a run can be repeated.
        """
        return self._prepared(*args, **kwargs)(None)

    @takes(_prepared)
    def stream(self, *args: Any, **kwargs: Any) -> Iterator[dict | Result]:
        """Yield events as they happen: output and tool-call dicts, and last the Result."""
        return _streamed(self._prepared(*args, **kwargs))

    def session(self, idle_timeout_s: float | None = None) -> Session:
        """A session: runs that keep what they bind for the next, in a jail of their own.

        IDLE_TIMEOUT_S: close it when left idle this long (default: the policy's
        pool.session_idle_s). Raises SessionError when the Jail already has its
        policy's pool.max_sessions open.
        """
        return Session(self, idle_timeout_s)

    def delegate(
        self,
        intent: str,
        params: Params | None = None,
        *,
        run: bool = True,
        config: Any = None,
        root: str | os.PathLike | None = None,
    ) -> Any:
        """Write a program for INTENT (templates, rules, then models), validate it, run it here."""
        from lackjail import infer

        return infer.delegate(self, intent, params, run=run, config=config, root=root)

    # -- many programs (lackjail.fanout runs them; `lackjail batch` builds on these) --

    def map(
        self,
        programs: Iterable[Program | tuple[Program, Params | None]],
        params: Params | None = None,
        *,
        concurrency: int | None = None,
        window: int | None = None,
        timeout: float | None = None,
        cpu_s: float | None = None,
        memory_mb: int | None = None,
    ) -> Iterator[Result]:
        """Run many programs, keeping every jail busy; yield their Results in input order.

        PROGRAMS: an iterable (read lazily) of program texts, or of
        `(program, params)` pairs whose params override PARAMS key by key.
        At most WINDOW programs are taken and not yet yielded. An exception
        (the pool closed, no jail free in time) stops the map: it is raised
        at that program's place, after every earlier Result, with a note
        naming the program's index. TIMEOUT, CPU_S and MEMORY_MB tighten
        each run's limits (checked before any program runs).
        """
        limits = self._limits(timeout, cpu_s, memory_mb)
        return self._map(programs, params, concurrency, window, limits)

    def _map(self, programs, params, concurrency, window, limits) -> Iterator[Result]:
        concurrency = self._map_concurrency() if concurrency is None else concurrency
        if self._sharded:
            from lackjail.shards import fanout as sharded

            finished = sharded.fan_out(
                lambda job, on_done: self._submit(
                    *program_and_params(job, params), limits=limits, on_done=on_done, hold=True
                ),
                programs,
                concurrency,
                window,
                ordered=True,
                flush=self.pool.flush,
            )
        else:
            finished = fanout.fan_out(
                lambda job: self._run(*program_and_params(job, params), limits=limits),
                programs,
                concurrency,
                window,
                ordered=True,
            )
        for done in finished:
            if done.error is not None:
                where = "reading the programs" if done.index < 0 else f"program #{done.index}"
                done.error.add_note(f"lackjail: Jail.map stopped at {where}")
                raise done.error
            yield done.value

    def as_completed(
        self,
        jobs: Iterable[tuple[Any, Program, Params | None]],
        *,
        concurrency: int | None = None,
        window: int | None = None,
        dry_run: bool = False,
    ) -> Iterator[tuple[Any, Result]]:
        """Run `(key, program, params)` jobs; yield `(key, Result)` as each finishes (with
        DRY_RUN, each run's writes are its Result's diff, never made).

        Every job yields exactly once: an exception while running one (the
        pool failed, not the program) becomes a `killed` Result naming it.
        """
        concurrency = self._map_concurrency() if concurrency is None else concurrency
        if self._sharded:
            from lackjail.shards import fanout as sharded

            finished = sharded.fan_out(
                lambda job, on_done: self._submit(
                    job[1], job[2], dry_run=dry_run, on_done=on_done, hold=True
                ),
                jobs,
                concurrency,
                window,
                flush=self.pool.flush,
            )
        else:
            finished = fanout.fan_out(
                lambda job: self.run(job[1], job[2], dry_run=dry_run), jobs, concurrency, window
            )
        for done in finished:
            if done.index < 0 and done.error is not None:  # the jobs' iterator failed
                raise done.error
            if isinstance(done.error, Exception):
                why = f"lackjail could not run this program: {done.error}"
                yield done.job[0], Result.killed(why)
            elif done.error is not None:
                raise done.error
            else:
                yield done.job[0], done.value

    def _map_concurrency(self) -> int:
        # Fresh mode: one caller more than jails per jail: while a jail runs one program,
        # the controller prepares the next (validation, kit session). Reuse mode: one per
        # jail: a reused child answers at once, and more callers only contend for the one
        # interpreter's GIL (2 jails: ~5,960 runs/s from 2 callers, ~4,600 from 4).
        # Sharded: as many callers in each shard, and as many runs again waiting in its queue,
        # so that a caller that finishes finds the next run there, not a round trip away.
        callers = self.pool.size if self.pool.mode == "reuse" else 2 * self.pool.size
        return 2 * callers if self._sharded else callers

    def _limits(self, timeout, cpu_s, memory_mb) -> Limits:
        """The policy's limits, tightened by a call's; PolicyError for a looser or bad value."""
        limits = self.policy.limits
        if timeout is None and cpu_s is None and memory_mb is None:
            return limits
        changes = {}
        for arg, key, value in (
            ("timeout", "wall_s", timeout),
            ("cpu_s", "cpu_s", cpu_s),
            ("memory_mb", "memory_mb", memory_mb),
        ):
            if value is None:
                continue
            whole = key == "memory_mb"
            if not positive_number(value) or (whole and not isinstance(value, int)):
                kind = "a whole number of megabytes" if whole else "a positive number of seconds"
                raise PolicyError(f"{arg}= must be {kind}, not {value!r}")
            own = getattr(limits, key)
            if own and value > own:
                raise PolicyError(
                    f"{arg}={value:g} is looser than policy '{self.policy.name}' allows "
                    f"(limits.{key} = {own:g}); a run's limits can only tighten the policy's"
                )
            changes[key] = value
        return dataclasses.replace(limits, **changes)

    def _seed(self, seed) -> int | None:
        """A run's seed for `random`, checked: PolicyError unless it is None or a whole
        number that fits the wire, and unless this jail's level has `random` (python)."""
        if seed is None:
            return None
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
            raise PolicyError(
                f"seed= must be a whole number from 0 to 2**63 - 1, not {seed!r}"[:200]
            )
        if self.checker.language != "python":
            raise PolicyError(
                f"seed= seeds the `random` module, which only language 'python' has "
                f"(this jail's is {self.checker.language!r}); choose language 'python' or "
                "leave the seed out"
            )
        return seed

    def _run(
        self,
        program,
        params,
        *,
        dry_run: bool = False,
        approve=None,
        emit=None,
        limits: Limits | None = None,
        session: Session | None = None,
        seed: int | None = None,
    ) -> Result:
        if session is None and self._sharded:
            return self._submit(
                program,
                params,
                dry_run=dry_run,
                approve=approve,
                emit=emit,
                limits=limits,
                seed=seed,
            ).wait()
        started = time.perf_counter()
        params = dict(params or {})
        limits = limits or self.policy.limits
        defined, lost = session._begin() if session is not None else ((), "")
        mode = "session" if session is not None else self.pool.mode
        ran = ()
        try:
            check = self.checker.check(program, params, defined)
            if not check.valid:
                errors: list[Any] = [e.to_dict() for e in check.errors]
                result = Result("invalid", errors=errors, isolation=self.isolation, mode=mode)
            else:
                result = self._execute(
                    program, params, dry_run, approve, emit, limits, session, seed, check.modules
                )
                result.stats["wall_ms"] = round((time.perf_counter() - started) * 1000, 3)
                ran = (*check.variables, *params)
        finally:
            if session is not None:
                lost = session._end_run(ran) or lost
        if lost:
            note = f"the session's state was lost: {lost}; this run started clean"
            result.errors.insert(0, {"message": note})
        return result

    def _submit(self, program, params, *, limits=None, seed=None, **run):
        """Send one run to a shard (sharded Jails); its Task finishes with the Result. RUN:
        `Shards.submit`'s keywords (dry_run, approve, emit, on_done, hold)."""
        return self.pool.submit(
            program, dict(params or {}), limits or self.policy.limits, seed, **run
        )

    def _tool_session(self, approve, emit, dry_run):
        """The kit's ToolSession for one run: it checks, runs and records the run's tool calls."""
        return self.kit.session(
            self.policy,
            self._root,
            approve=approve or self.approve,
            on_event=(lambda e: emit({"event": "call", **e})) if emit else None,
            dry_run=dry_run,
        )

    @staticmethod
    def _settle_tools(tools, result: Result, dry_run: bool) -> None:
        """Keep or drop the run's writes (see `_settle`), and count its tool calls."""
        _settle(tools, result, dry_run)
        result.stats["tool_calls"] = len(result.trace)

    def _execute(
        self, program, params, dry_run, approve, emit, limits, session, seed, modules
    ) -> Result:
        """Run a validated PROGRAM on a pooled jail, or on SESSION's own; MODULES: the
        python level's facade modules it needs (its validation's `modules`)."""
        source = lang.decode_source(program)  # exactly the text the validator checked
        tools = None
        if self.kit is not None and self.kit.specs:  # a kit without tools has nothing to call
            tools = self._tool_session(approve, emit, dry_run)
        output: list[str] = []

        def on_output(text):
            output.append(text)
            if emit:
                emit({"event": "output", "text": text})

        request = Request(
            source,
            params,
            self._host_tools,
            self._jail_tools,
            self.checker.language,
            session is not None,
            seed,
            modules,
        )
        execute = session._execute if session is not None else self.pool.execute
        try:
            outcome = execute(request, tools, on_output, limits)
            result = Result(
                outcome.status,
                outcome.value if outcome.status == "ok" else None,
                "".join(output),
                outcome.errors,
                isolation=self.isolation,
                mode="session" if session is not None else self.pool.mode,
                stats=stats(0.0, outcome.cpu_ms, outcome.max_rss_kb),
            )
            if tools is not None:
                self._settle_tools(tools, result, dry_run)
        finally:
            if tools is not None:
                tools.close()
        return result

    def _resolve_kit(self, kit, extra_tools, tools, tool_loop):
        if kit is None and not extra_tools and not tools:
            return None
        from lackjail.kit import resolve_kit

        resolved = resolve_kit(kit, workspace=self._root, extra_tools=extra_tools)
        if not tools:
            return resolved
        from lackjail.kit import Kit, Toolbox
        from lackjail.kit.tools.callables import CallableProvider, callable_specs  # asyncio

        box = Toolbox()  # the kit's, and this Jail's callables: a caller's toolbox stays as it was
        box.providers, box.tools, box.packs = (
            dict(resolved.toolbox.providers),
            dict(resolved.toolbox.tools),
            dict(resolved.toolbox.packs),
        )
        self._callables = CallableProvider(tool_loop)
        box.register_provider(self._callables)
        specs = callable_specs(tools, self._callables)
        base = Kit(
            resolved.name, resolved.description, resolved.specs, resolved.packs, resolved.docs, box
        )
        return resolve_kit(
            base, workspace=self._root, extra_tools=specs, toolbox=box, extra_label="tools="
        )


def _streamed(run: Callable[[Callable], Result]) -> Iterator[dict | Result]:
    """The events RUN(emit) emits, as they come, then the Result it returns; RUN runs on a
    thread of its own, and what it raises is raised here."""
    events: queue.Queue = queue.Queue()

    def work():
        try:
            events.put(run(events.put))
        except BaseException as exc:  # delivered to the iterating thread, never lost
            events.put(exc)
        events.put(_DONE)

    thread = threading.Thread(target=work, name="lackjail-stream", daemon=True)
    thread.start()
    while (item := events.get()) is not _DONE:
        if isinstance(item, BaseException):
            raise item
        yield item
    thread.join()


async def _astreamed(stream: Callable[[], Iterator]) -> AsyncIterator:
    """The items of the iterator STREAM() makes, iterated on a thread, delivered to the loop."""
    import asyncio

    loop = asyncio.get_running_loop()
    events: asyncio.Queue = asyncio.Queue()

    def work():
        try:
            for event in stream():
                loop.call_soon_threadsafe(events.put_nowait, event)
        except BaseException as exc:
            loop.call_soon_threadsafe(events.put_nowait, exc)
        loop.call_soon_threadsafe(events.put_nowait, _DONE)

    task = loop.run_in_executor(None, work)
    while (item := await events.get()) is not _DONE:
        if isinstance(item, BaseException):
            raise item
        yield item
    await task


def program_and_params(job, shared) -> tuple:
    """(program, params) of one Jail.map item: a text, or a (program, params) pair (whose params
    are laid over SHARED)."""
    if isinstance(job, tuple):
        program, own = job
        return program, {**(shared or {}), **(own or {})}
    return job, shared


class AsyncJail:
    """The asyncio twin of Jail: the same pool, awaited from an event loop.

    Takes Jail's arguments; async tools are awaited on the loop that enters it.
    """

    @takes(Jail.__init__, drop=("tool_loop", "audience"))  # its own loop serves async tools
    def __init__(self, *args: Any, **kwargs: Any):
        bound = inspect.signature(AsyncJail.__init__).bind(self, *args, **kwargs)
        bound.apply_defaults()
        self._kwargs = {k: v for k, v in bound.arguments.items() if k != "self"}
        self.jail: Jail | None = None

    async def __aenter__(self) -> AsyncJail:
        import asyncio

        loop = asyncio.get_running_loop()
        self.jail = await asyncio.to_thread(lambda: Jail(**self._kwargs, tool_loop=loop))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        import asyncio

        if self.jail is not None:
            await asyncio.to_thread(self.jail.close)

    def _opened(self) -> Jail:
        if self.jail is None:
            raise RuntimeError("use AsyncJail as `async with lackjail.AsyncJail(...) as jail:`")
        return self.jail

    @takes(Jail.run)
    async def run(self, *args: Any, **kwargs: Any) -> Result:
        """See Jail.run."""
        import asyncio

        return await asyncio.to_thread(self._opened().run, *args, **kwargs)

    @takes(Jail.stream)
    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict | Result]:
        """Async iterator over the same events as Jail.stream; the last is the Result."""
        events = self._opened().stream(*args, **kwargs)  # a bad limit raises here, not in a thread
        async for event in _astreamed(lambda: events):
            yield event

    def session(self, idle_timeout_s: float | None = None) -> AsyncSession:
        """An AsyncSession (see Jail.session): `async with ajail.session() as s`."""
        return AsyncSession(self, idle_timeout_s)

    @takes(Jail.map)
    async def map(self, *args: Any, **kwargs: Any) -> AsyncIterator[Result]:
        """Async iterator over the same Results, in the same order, as Jail.map."""
        import asyncio

        mapped = self._opened().map(*args, **kwargs)
        loop = asyncio.get_running_loop()
        results: asyncio.Queue = asyncio.Queue(maxsize=1)  # the map's window is the buffer
        stopped = threading.Event()

        def deliver(item) -> bool:
            asyncio.run_coroutine_threadsafe(results.put(item), loop).result()
            return not stopped.is_set()

        def work():
            try:
                for result in mapped:
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
