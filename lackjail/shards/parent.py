"""The Jail's side of its shards: controller processes started, fed, answered, replaced, stopped.

Each run goes to the live shard with the fewest runs in flight, as a `run`
frame; its printed text (when streamed), its host tool calls and its result
come back as frames on that shard's channel, all shards' read by one thread. A
tool call is run here, on a thread of the tool pool, by the kit's own
ToolSession (its checks, timeouts, approval and trace, exactly as in one
process), and answered. A shard that ends fails only the runs it held, with
a `killed` Result that says so, and is started again. Sessions stay in this
process: their jails are started here, one per session, as a one-process
Jail's are.
"""

from __future__ import annotations

import itertools
import os
import selectors
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lackjail import protocol
from lackjail.errors import ArgumentError
from lackjail.policy import PolicyError
from lackjail.pool import IsolationError, PoolError
from lackjail.result import Result, stats
from lackjail.shards import wire

STOP_S = 10.0  # after the channel closes, how long a shard may take to stop its jails
RESTART_BACKOFF_S = (0.1, 5.0)  # between failed starts of a replacement: first, most
ROOT = str(Path(__file__).resolve().parents[2])  # the folder this lackjail is imported from
# A fresh interpreter (-I: no environment, no user site), importing this very lackjail.
BOOT = "import sys; sys.path.insert(0, sys.argv[2]); from lackjail.shards.shard import main; "
BOOT += "import os; os._exit(main(int(sys.argv[1])))"
FROM_SHARD = wire.FROM_SHARD - {"opened", "failed"}  # what a serving shard sends
ERRORS = {
    "PolicyError": PolicyError,
    "ArgumentError": ArgumentError,
    "IsolationError": IsolationError,
}


class Task:
    """One run (or `wait`) sent to a shard, until its answer: what the answer is turned into,
    and who is told."""

    __slots__ = (
        *("id", "shard", "emit", "approve", "dry_run", "tools", "started", "value", "error"),
        *("done", "on_done", "waiting"),
    )

    def __init__(self, emit=None, approve=None, dry_run=False, on_done=None, waiting=False):
        self.emit, self.approve, self.dry_run, self.on_done = emit, approve, dry_run, on_done
        self.waiting = waiting  # a `wait`, not a run: it finishes with True or False
        self.id = 0  # its frames' id, once sent
        self.shard: Shard | None = None  # the shard it was sent to
        self.tools = None  # the run's ToolSession, made at its first tool call
        self.started = time.perf_counter()
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = threading.Lock()
        self.done.acquire()  # released once, with the answer

    def finish(self, value=None, error=None) -> None:
        self.value, self.error = value, error
        self.done.release()
        if self.on_done is not None:
            self.on_done(self)

    def wait(self):
        self.done.acquire()
        if self.error is not None:
            raise self.error
        return self.value


class Shard:
    """One controller process and its channel."""

    def __init__(self, index: int, workers: int, opening: dict):
        self.index, self.workers = index, workers
        self.tasks: dict[int, Task] = {}
        self.held: list[bytes] = []  # run frames held for one send (`Shards.flush`)
        self._sending = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", BOOT, str(theirs.fileno()), ROOT],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.sock = ours
        self.frames = wire.Frames()  # what the reader has of its channel
        self.send({**opening, "workers": workers})

    def opened(self, timeout: float) -> dict:
        """The shard's `opened` frame; the error its `failed` frame names, or a PoolError."""
        self.sock.settimeout(timeout)
        try:
            got: list[dict] = []
            while not got:  # nothing follows it until this process sends a run
                data = self.sock.recv(1 << 16)
                if not data:
                    raise EOFError("channel closed")
                got = self.frames.feed(data, frozenset({"opened", "failed"}))
            frame = got[0]
        except (EOFError, OSError, protocol.ProtocolError) as exc:
            raise PoolError(f"a controller process did not start: {exc}") from None
        finally:
            self.sock.settimeout(None)
        if frame["t"] == "failed":
            raise ERRORS.get(frame["kind"], PoolError)(frame["message"])
        return frame

    def send(self, msg: dict) -> None:
        data = wire.encode(msg)
        with self._sending:
            self.sock.sendall(data)

    def stop(self, wait_s: float) -> None:
        """End the channel (the shard stops its jails and exits); kill it past WAIT_S. The
        socket itself is closed by `release`, once no reader watches it."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def release(self) -> None:
        self.sock.close()

    def ended(self) -> str:
        """How the process ended, in words (it has, or is about to)."""
        try:
            code = self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            return "its channel broke"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


class Shards:
    """COUNT shards sharing WORKERS jails, for JAIL (its policy, kit, checker and tools)."""

    def __init__(self, jail, count: int, workers: int, mode, isolation):
        self._jail = jail
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._closed = False
        self._closing = threading.Event()  # set with _closed: ends a restart's pause
        self._live: list[Shard] = []
        self._starting: set[Shard] = set()  # replacements not yet serving
        self._restarts: list[threading.Thread] = []
        self.size, self.count = workers, count
        self._opening = {
            "t": "open",
            "policy": wire.policy_data(jail.policy),
            "kit": wire.kit_data(jail.kit),
            "mode": mode,
            "isolation": isolation,
            "language": jail.checker.language,
            "audience": jail._audience,
        }
        self._tooled = bool(jail.kit is not None and jail.kit.specs)
        self._start_s = jail.policy.pool.start_timeout_s
        self._tool_pool = ThreadPoolExecutor(workers + 4, thread_name_prefix="lackjail-shard-tool")
        self._session_jails = None
        shares = [workers // count + (i < workers % count) for i in range(count)]
        started: list[Shard] = []
        try:
            for index, share in enumerate(shares):
                started.append(Shard(index, share, self._opening))
            opened = [shard.opened(self._start_s + 30) for shard in started]
            levels = sorted({frame["isolation"] for frame in opened})
            if len(levels) > 1:  # one host, one policy: never, but never mixed silently
                raise PoolError(f"the controller processes started at different levels: {levels}")
        except BaseException:
            for shard in started:
                shard.stop(STOP_S)
                shard.release()
            self._tool_pool.shutdown(wait=False)
            raise
        self.isolation, self.mode = levels[0], opened[0]["mode"]
        # one thread reads every shard's channel (fewer threads for the interpreter's lock)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._adding: list[Shard] = []  # served, for the reader to watch
        for shard in started:
            self._serve(shard)
        self._reader = threading.Thread(target=self._read, name="lackjail-shards", daemon=True)
        self._reader.start()

    # -- runs -------------------------------------------------------------

    def submit(
        self,
        program,
        params,
        limits,
        seed,
        *,
        dry_run=False,
        approve=None,
        emit=None,
        on_done=None,
        hold=False,
    ) -> Task:
        """Send one run to the least busy shard; its Task finishes with the Result (or the
        error the pool raised). PoolError when the Jail is closed or no shard is running.
        HOLD: keep the frame until `flush`, which sends each shard's held frames at once."""
        task = Task(emit, approve, dry_run, on_done)
        if type(program) not in (str, bytes):  # the checker says why, as in one process
            task.finish(self._judged_here(program, params, ""))
            return task
        frame = {
            "t": "run",
            "id": next(self._ids),
            "src": program,
            "params": params,
            "limits": wire.limits_data(limits, self._jail.policy.limits),
            "seed": seed,
            "stream": emit is not None,
            "tools": self._tooled,
        }
        task.id = frame["id"]
        try:
            data = wire.encode(frame)
        except protocol.ProtocolError as exc:  # parameters the wire cannot carry
            task.finish(self._judged_here(program, params, f"the run cannot be sent: {exc}"))
            return task
        shard = self._take(task)
        with shard._sending:
            if hold:
                shard.held.append(data)
                return task
            try:
                shard.sock.sendall(data)
            except OSError:  # the shard ended: its reader fails the task
                pass
        return task

    def flush(self) -> None:
        """Send the frames `submit` held, one write per shard."""
        with self._lock:
            live = list(self._live)
        for shard in live:
            with shard._sending:
                if not shard.held:
                    continue
                data, shard.held = b"".join(shard.held), []
                try:
                    shard.sock.sendall(data)
                except OSError:  # the shard ended: its reader fails the tasks
                    pass

    def _judged_here(self, program, params, why: str) -> Result:
        """The Result of a run that cannot cross to a shard: the checker's verdict (a program
        that is not text, parameters that are not plain data), else an error saying WHY."""
        check = self._jail.checker.check(program, params)
        if check.valid:
            return Result.failed("error", why, isolation=self.isolation, mode=self.mode)
        errors: list[Any] = [e.to_dict() for e in check.errors]
        return Result("invalid", errors=errors, isolation=self.isolation, mode=self.mode)

    def _take(self, task: Task) -> Shard:
        deadline = time.monotonic() + self._start_s
        with self._lock:
            while not self._live:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    why = (
                        f"no controller process is running (none restarted in {self._start_s:g} s)"
                    )
                    raise PoolError("the jail pool is closed" if self._closed else why)
                self._lock.wait(left)
            shard = min(self._live, key=lambda s: len(s.tasks))
            task.shard = shard
            shard.tasks[task.id] = task
        return shard

    def _serve(self, shard: Shard) -> None:
        with self._lock:
            self._live.append(shard)
            self._adding.append(shard)
            self._lock.notify_all()
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except BlockingIOError:  # a wake-up is pending already
            pass

    def _read(self) -> None:
        """Read every shard's frames; a shard whose channel ends (or breaks the wire) is
        lost: its runs fail, another starts. At close: let every channel go."""
        selector = self._selector
        while True:
            with self._lock:
                adding, self._adding = self._adding, []
                closed = self._closed
            for shard in adding:
                selector.register(shard.sock, selectors.EVENT_READ, shard)
            if closed:
                break
            for key, _ in selector.select():
                shard = key.data
                if shard is None:
                    os.read(self._wake_r, 4096)
                    continue
                why = self._take_in(shard)
                if why is not None:
                    selector.unregister(shard.sock)
                    shard.release()
                    threading.Thread(target=self._lost, args=(shard, why), daemon=True).start()
        for key in list(selector.get_map().values()):
            if key.data is not None:
                key.data.release()
        selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _take_in(self, shard: Shard) -> str | None:
        """Read what SHARD sent and dispatch its whole frames; why its channel ended, if so."""
        try:
            data = shard.sock.recv(1 << 16)
        except OSError as exc:
            return str(exc)
        if not data:
            return "channel closed"
        try:
            frames = shard.frames.feed(data, FROM_SHARD)
        except protocol.ProtocolError as exc:
            shard.proc.kill()
            return f"it sent a malformed frame: {exc}"
        for frame in frames:
            task = shard.tasks.get(frame["id"])
            if task is not None:  # else a shard's fault: an answer to nothing it was sent
                self._dispatch(shard, task, frame)
        return None

    def _dispatch(self, shard: Shard, task: Task, frame: dict) -> None:
        kind = frame["t"]
        if kind == "output":
            if task.emit is not None:
                task.emit({"event": "output", "text": frame["text"]})
        elif kind == "call":
            self._tool_pool.submit(self._call, shard, task, frame)
        else:
            with self._lock:
                shard.tasks.pop(task.id, None)
            if kind == "waited":
                task.finish(frame["ok"])
            elif kind == "raised":
                task.finish(error=ERRORS.get(frame["kind"], PoolError)(frame["message"]))
            elif task.tools is not None:  # settling may write the workspace: not here
                self._tool_pool.submit(self._finish, task, frame)
            else:
                self._finish(task, frame)

    def _finish(self, task: Task, frame: dict) -> None:
        """Finish TASK with the Result of its `done` FRAME (or what making it raised, which
        a one-process run would have raised to its caller too)."""
        try:
            result = self._result(task, frame)
        except Exception as exc:
            task.finish(error=exc)
        else:
            task.finish(result)

    def _result(self, task: Task, frame: dict) -> Result:
        status = frame["status"]
        jail = self._jail
        if status == "invalid":
            result = Result(
                "invalid", errors=frame["errors"], isolation=self.isolation, mode=self.mode
            )
        else:
            result = Result(
                status,
                frame["value"],
                frame["output"],
                frame["errors"],
                isolation=self.isolation,
                mode=self.mode,
                stats=stats(0.0, frame["cpu_ms"], frame["max_rss_kb"]),
            )
            if self._tooled:
                tools = task.tools or jail._tool_session(task.approve, task.emit, task.dry_run)
                try:
                    jail._settle_tools(tools, result, task.dry_run)
                finally:
                    tools.close()
            result.stats["wall_ms"] = round((time.perf_counter() - task.started) * 1000, 3)
        return result

    def _call(self, shard: Shard, task: Task, frame: dict) -> None:
        """Answer one host tool call of TASK's run, with the kit's ToolSession of that run."""
        if task.tools is None:
            task.tools = self._jail._tool_session(task.approve, task.emit, task.dry_run)
        tool = frame["tool"]
        answer = {"t": "answer", "id": task.id, "ok": False, "value": None, "verdict": None}
        try:
            out = task.tools.call(tool, frame["args"], frame["kwargs"], frame["deadline"])
        except Exception as exc:  # the session never raises for a program; answered all the same
            answer["error"] = f"{tool}: the call failed in lackjail: {type(exc).__name__}: {exc}"
        else:
            answer.update(ok=bool(out.ok), value=out.value, error=out.error, verdict=out.verdict)
        try:
            data = wire.encode(answer)
        except protocol.ProtocolError as exc:
            answer.update(ok=False, value=None, error=f"{tool}: the result cannot be sent: {exc}")
            data = wire.encode(answer)
        try:
            with shard._sending:
                shard.sock.sendall(data)
        except OSError:  # the shard ended; its reader fails the run
            pass

    def _lost(self, shard: Shard, why: str) -> None:
        """SHARD ended: fail the runs it held, and (unless the Jail is closing) start another."""
        with self._lock:
            if shard in self._live:
                self._live.remove(shard)
            tasks, shard.tasks = shard.tasks, {}
            closed = self._closed
        if closed:
            message = "the Jail was closed before the run finished"
        else:
            message = (
                f"the controller process running it ended ({shard.ended()}"
                f"{': ' + why if why and why != 'channel closed' else ''}) before its result came; "
                "it is being started again"
            )
        for task in tasks.values():
            if task.tools is not None:
                task.tools.rollback()
                task.tools.close()
            wall = round((time.perf_counter() - task.started) * 1000, 3)
            if task.waiting:
                task.finish(False)
            else:
                task.finish(
                    Result.failed("killed", message, wall, isolation=self.isolation, mode=self.mode)
                )
        if not closed:
            restart = threading.Thread(target=self._restart, args=(shard,), daemon=True)
            with self._lock:
                self._restarts = [t for t in self._restarts if t.is_alive()] + [restart]
            restart.start()
        shard.stop(STOP_S)

    def _restart(self, old: Shard) -> None:
        """Start a shard in OLD's place (its share of the jails), again after a pause while
        starts fail, until one serves at this Jail's level or the Jail closes."""
        backoff = RESTART_BACKOFF_S[0]
        while True:
            shard: Shard | None = None
            with self._lock:
                if self._closed:
                    return
                try:
                    shard = Shard(old.index, old.workers, self._opening)
                    self._starting.add(shard)  # `close` stops it too
                except OSError:
                    pass
            if shard is not None:
                try:
                    same = shard.opened(self._start_s + 30)["isolation"] == self.isolation
                except Exception:  # whatever stopped it, the next try may not meet it
                    same = False
                with self._lock:
                    self._starting.discard(shard)
                    if same and not self._closed:
                        self._serve(shard)
                        return
                shard.stop(STOP_S)
                shard.release()
            if self._closing.wait(backoff):
                return
            backoff = min(backoff * 2, RESTART_BACKOFF_S[1])

    # -- the rest of a pool's surface ------------------------------------

    def wait_full(self, timeout: float = 10.0) -> bool:
        """Block until every shard's jails are started and idle; False on timeout."""
        with self._lock:
            live = list(self._live)
        if not live:
            return False
        tasks = []
        for shard in live:
            task = Task(waiting=True)
            task.id = next(self._ids)
            task.shard = shard
            with self._lock:
                shard.tasks[task.id] = task
            try:
                shard.send({"t": "wait", "id": task.id, "timeout": timeout})
            except OSError:
                pass
            tasks.append(task)
        return all(task.wait() is True for task in tasks)

    def pids(self) -> list[int]:
        """The shards' process ids (each one's jails are its own children)."""
        with self._lock:
            return [shard.proc.pid for shard in self._live]

    def session_jail(self):
        """A session's own jail, started in this process (see Pool.session_jail)."""
        from lackjail.pool.session import session_jails

        policy = self._jail.policy
        with self._lock:
            if self._closed:
                raise PoolError("the jail pool is closed")
            if self._session_jails is None:
                python_level = self._jail.checker.language == "python"
                self._session_jails = session_jails(self.isolation, policy, python_level)
            jails = self._session_jails
        return jails.take()

    def close(self) -> None:
        """Stop every shard (each stops its jails); runs in flight end `killed`. When it
        returns, no shard process is left."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._closing.set()
            live, self._live = list(self._live), []
            starting, restarts = list(self._starting), list(self._restarts)
            self._lock.notify_all()
        self._wake()  # the reader lets every channel go
        stoppers = [threading.Thread(target=s.stop, args=(STOP_S,)) for s in live + starting]
        for thread in stoppers:
            thread.start()
        for thread in stoppers + restarts + [self._reader]:
            thread.join()
        for shard in live:
            self._lost(shard, "")
        if self._session_jails is not None:
            self._session_jails.close()
            self._session_jails.launcher.close()
        self._tool_pool.shutdown(wait=False)
