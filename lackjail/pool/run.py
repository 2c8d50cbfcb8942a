"""One run on one child: its frames, its deadline, its cancellation and its verdict.

A `Run` sends the request to a ready child over that child's own run channel,
answers its tool calls through the caller's tool handler, forwards its output,
cancels it at the deadline, and turns whatever happened into one `Outcome`.
A tool's verdict (`denied`, `limit`) is applied here and nowhere else. Only
this module and `jail_process` build frames on the controller's side.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lackjail import protocol
from lackjail.pool import relay
from lackjail.pool.jail_process import Child, JailDied, JailProcess, wait_fd

SIGNAL_VERDICTS = {
    signal.SIGXCPU: ("timeout", "CPU time limit of {cpu_s} s exceeded"),
    signal.SIGPROF: ("timeout", "CPU time limit of {cpu_s} s exceeded"),
    signal.SIGSYS: ("denied", "the program made a forbidden system call and was killed by seccomp"),
}
RUN_FRAMES = ("output", "call", "result")
UNREADY_FRAMES = ("ready", *RUN_FRAMES)  # a child lent before it said `ready` says it first
OUTPUT_SLACK = 65536  # output beyond the cap the jail may send before the controller kills it
MAX_ERRORS = 1000
ERROR_KEYS = ("message", "line", "col", "traceback", "traceback_omitted")
FRAME_KEYS = ({"function", "line"}, {"function", "line", "col", "earlier"})  # required, allowed


@dataclass(frozen=True)
class Request:
    """What to run: validated source, parameters, and the kit's tools by placement."""

    src: str
    params: dict
    tools: list = field(default_factory=list)  # answered by the tool handler
    jail_tools: dict = field(default_factory=dict)  # name -> [module, function], in the jail
    language: str = "lackpy"  # the level the jail validates at again
    session: bool = False  # the child keeps the run's globals for the session's next run
    seed: int | None = None  # seeds the program's `random` before the run (python level)
    # the python level's facade modules the run's child must have loaded (its imports)
    modules: tuple = ()


@dataclass
class Outcome:
    """What one run produced, as the controller observed it."""

    status: str
    value: object = None
    errors: list = field(default_factory=list)
    cpu_ms: float = 0.0
    max_rss_kb: int = 0
    retire: bool = False  # the jail must not serve another run
    # the child ended before it said `ready`: it never read the request, which another may run
    unstarted: bool = False


def _msg(text: str) -> dict:
    return {"message": text}


class _Abandoned(Exception):
    """The relay's tool call was taken by its watcher, who serves the run now."""


class Run:
    """One request on one child of one jail; `execute()` once."""

    def __init__(
        self,
        jail: JailProcess,
        child: Child,
        request: Request,
        tool_handler,
        on_output,
        limits,
        runs_per_child: int,
    ):
        self.jail, self.child, self.request = jail, child, request
        self.tool_handler, self.on_output = tool_handler, on_output
        self.limits, self.runs_per_child = limits, runs_per_child
        # a handler that can run a tool on the calling thread (a ToolSession) lets the run's
        # calls be served by a relay thread (relay.py); None: each call goes through the handler
        self._inline: Callable[..., Any] | None = getattr(tool_handler, "inline", None)
        self._watch: relay.Watch | None = None  # set while a relay thread serves the run
        self._revoked = False  # the caller was interrupted: the relay must let the run go
        self._calling: dict | None = None  # the call frame being answered
        self._spinner = protocol.Spin()  # how waits for the next call went, this run
        self.verdict: tuple | None = None  # a tool's (status, message): it wins
        # lent before it said `ready` (still warming up or confining itself): the request
        # waits in its channel, which it reads only once confined, after its `ready`
        self.unready = not child.ready
        self.expect = UNREADY_FRAMES if self.unready else RUN_FRAMES
        self.cancelled = False
        # why answers can no longer reach the child (it closed its end); what it already wrote
        # is still read, and a result among it still counts
        self.unanswerable = ""

    def execute(self, wall_s: float, kill_grace: float) -> Outcome:
        """See the run through; never raises for what the jail does."""
        jail, child = self.jail, self.child
        child.ready = False
        child.runs += 1
        jail.runs += 1
        jail.last_used = time.monotonic()
        # Never repeats in this jail: a result carrying another run's id is refused. Nothing
        # more is asked of it (the child reads the id in the run frame it answers), so a
        # counter, in 16 hex digits as the random ids were, not os.urandom per run.
        run_id = f"{jail.runs:016x}"
        deadline = time.monotonic() + wall_s
        try:
            self._limit_memory(deadline)
            r = self.request
            frame = protocol.make_run(
                run_id,
                r.src,
                r.params,
                r.tools,
                r.jail_tools,
                r.language,
                self.limits.cpu_s,
                self.limits.memory_mb,
                r.session,
                r.seed,
            )
            try:
                self._write(protocol.encode(frame), deadline)
            except JailDied:
                if not self.unready:
                    raise
                # it ended before it was confined: the loop reads its end and the zygote's report
            outcome = self._loop(run_id, deadline, wall_s, kill_grace)
        except protocol.ProtocolError as exc:
            outcome = Outcome(
                "error", errors=[_msg(f"the jail broke the protocol: {exc}")], retire=True
            )
        except JailDied as exc:
            if self.cancelled:
                outcome = self._timeout(wall_s)
            elif self.unready:
                outcome = Outcome(
                    "killed",
                    errors=[_msg(f"the jail ended before its child was ready ({exc})")],
                    retire=True,
                    unstarted=True,
                )
            else:
                outcome = Outcome(
                    "killed", errors=[_msg(f"the jail ended during the run ({exc})")], retire=True
                )
        if self.verdict:  # a tool stop wins even if the jail says ok (one layer need not hold)
            outcome.status, message = self.verdict
            outcome.errors = [_msg(message or outcome.status)]
            outcome.value = None
        keep = (
            not outcome.retire
            and child.done is None
            and child.runs < self.runs_per_child
            and protocol.keeps_child(outcome.status)
            and self.verdict is None
            # a python-level program can change its modules' classes: no other run sees them
            and (self.request.language != "python" or self.request.session)
        )
        if keep:
            child.ready = True
            child.cpu_ms += outcome.cpu_ms
        else:
            jail.drop(child)
        return outcome

    def _limit_memory(self, deadline: float) -> None:
        """Give the child this run's address-space limit when it is not the one it has: lower
        than the jail's for this run, or the jail's again after a run that lowered it."""
        jail, child = self.jail, self.child
        if not jail.memory_mb:
            return
        want = self.limits.memory_mb if self.limits.memory_mb < jail.memory_mb else 0
        if want != child.memory_mb and not jail.limit_memory(child, want, deadline):
            raise JailDied("the zygote did not set the child's memory limit for the run")

    def _timeout(self, wall_s: float) -> Outcome:
        if self.unready:  # the program never ran: not its timeout
            why = f"the jail's child was not ready within the wall-clock limit of {wall_s:g} s"
            return Outcome("killed", errors=[_msg(why)], retire=True)
        return Outcome(
            "timeout", errors=[_msg(f"wall-clock limit of {wall_s:g} s exceeded")], retire=True
        )

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.child.run_in, view) :]
            except BlockingIOError:
                if not wait_fd(self.child.run_in, select.POLLOUT, deadline):
                    raise JailDied("the child stopped reading its run channel") from None
            except BrokenPipeError:
                raise JailDied("the child closed its run channel") from None

    def _loop(self, run_id: str, deadline: float, wall_s: float, kill_grace: float) -> Outcome:
        jail, child = self.jail, self.child
        if child.poller is None:  # made once per child: a reused child's runs poll the same three
            child.poller = select.poll()
            for fd in (child.run_out, jail.ctrl.fileno(), jail.pidfd):
                child.poller.register(fd, select.POLLIN)
        self._poller = child.poller  # kept by the run when the child's is dropped
        self._output_budget = self.limits.output_bytes + OUTPUT_SLACK
        self._until, self._spin = deadline, False
        self._child_open = True
        self._jail_gone = ""  # why the zygote is gone, once it is
        args = (run_id, deadline, wall_s, kill_grace)
        outcome = self._serve(*args)
        while outcome is None:  # a call came: a relay serves on, until its end or a takeover
            outcome = self._relay(*args)
            if outcome is None:  # the relay's tool was taken at its timeout: serve on here
                outcome = self._serve(*args)
        return outcome

    def _serve(
        self, run_id: str, deadline: float, wall_s: float, kill_grace: float
    ) -> Outcome | None:
        """The run's frames until its end, on whichever thread serves it now (the caller's,
        or a relay's: the state it carries on is the Run's own). None: a call came that a
        relay is to serve (the caller's thread, with a handler that can run tools inline)."""
        jail, child = self.jail, self.child
        poller = self._poller
        while True:
            if self._revoked:
                raise _Abandoned
            while child.frames:
                frame = child.frames.pop(0)
                kind = frame["t"]
                if self.unready:
                    self._ready(frame)
                elif kind == "output":
                    self._output_budget -= len(frame["text"])
                    if self._output_budget < 0:
                        return Outcome(
                            "limit",
                            errors=[_msg("output exceeds its limit (the jail ignored the cap)")],
                            retire=True,
                        )
                    if self.on_output is not None:
                        self.on_output(frame["text"])
                elif kind == "call":
                    if self._inline is not None and self._watch is None:
                        child.frames.insert(0, frame)  # the relay answers it first
                        return None
                    self._answer(frame, deadline)
                    self._spin = True
                elif kind == "result":
                    return self._finished(frame, run_id)
                else:  # a second `ready`, decoded among the frames that followed the first
                    raise protocol.ProtocolError("a child said 'ready' during its run")
            if self._child_open and (child.done is not None or self._jail_gone):
                # the child (or its zygote) ended: what it wrote is in the pipe now
                while child.pump(self.expect):
                    pass
                self._child_open = False
                poller.unregister(child.run_out)
                child.poller = None
                if child.frames:
                    continue
            if self.unanswerable and not self._child_open:  # closed both ends without a result
                raise JailDied(self.unanswerable)
            if child.done is not None:
                return self._died(child.done, wall_s)
            if self._jail_gone:
                raise JailDied(self._jail_gone)
            timeout = self._until - time.monotonic()
            if timeout <= 0:
                if self.cancelled:  # the zygote did not end its child in time
                    return self._timeout(wall_s)
                jail.send_ctrl(protocol.make_cancel(child.gen))
                self.cancelled, self._until = True, time.monotonic() + kill_grace
                continue
            if self._watch is not None:  # a relay looks at `_revoked` at least this often
                timeout = min(timeout, relay.POLL_S)
            if self._spin:  # after a tool call: the program usually calls again or ends soon
                events = self._spinner.poll(poller.poll, timeout * 1000)
            else:  # programs compute: a spin would take the CPU they need
                events = poller.poll(timeout * 1000)
            self._spin = False
            if self._revoked:
                raise _Abandoned
            for fd, _ in events:
                if fd == child.run_out:
                    if self._child_open and child.pump(self.expect) is False:
                        self._child_open = False
                        poller.unregister(child.run_out)
                        child.poller = None
                elif self._jail_gone:
                    continue
                elif fd == jail.pidfd:
                    self._jail_gone = "the jail exited"
                else:
                    try:
                        jail.pump_ctrl()
                    except JailDied as exc:
                        self._jail_gone = str(exc)
                if self._jail_gone:
                    poller.unregister(jail.pidfd)
                    poller.unregister(jail.ctrl.fileno())
                    child.poller = None

    def _ready(self, frame: dict) -> None:
        """The first frame of a child lent before it was ready: its `ready`, and nothing else.
        What follows it in the same read was decoded as one of UNREADY_FRAMES: a second
        `ready` among it is refused where it is handled (as an unexpected frame)."""
        if frame["t"] != "ready" or frame["gen"] != self.child.gen:
            raise protocol.ProtocolError("a child lent before it was ready did not say so first")
        self.unready, self.expect = False, RUN_FRAMES

    def _relay(
        self, run_id: str, deadline: float, wall_s: float, kill_grace: float
    ) -> Outcome | None:
        """Serve the rest of the run on a relay thread, which runs each tool inline, and
        watch it from here: a tool still running at its deadline is taken from it and its call
        answered with the timeout (relay.py); None then: this thread serves the run on."""
        watch = self._watch = relay.Watch()
        done, left = threading.Event(), threading.Event()
        box: dict = {}

        def serve():
            try:
                box["outcome"] = self._serve(run_id, deadline, wall_s, kill_grace)
                done.set()
            except _Abandoned:
                pass  # the watcher serves the run now, or no one: nothing here is ours any more
            except BaseException as exc:  # raised where the run was asked for
                box["error"] = exc
                done.set()
            finally:
                left.set()

        relay.submit(serve)
        try:
            while not done.wait(watch.wait_s()):
                abandon = watch.take()
                if abandon is not None:
                    call = self._calling
                    assert call is not None  # a call is armed only while it is being answered
                    self._watch = None
                    self._reply(call, abandon(), deadline)
                    self._spin = True
                    return None
        except BaseException:
            # Interrupted here (KeyboardInterrupt): the jail is retired once this raises, its
            # descriptors closed and their numbers free for any other open. The relay lets go
            # first: it stops at its next look (POLL_S at most), or is inside a tool, after
            # which it touches nothing of the run.
            self._revoked = True
            while not left.wait(relay.POLL_S) and not watch.armed():
                pass
            raise
        if "error" in box:
            raise box["error"]
        return box["outcome"]

    def _answer(self, call: dict, deadline: float) -> None:
        """Answer a tool call. The handler gets the run's DEADLINE: a call still running then
        is abandoned and answered with a `timeout` verdict, so the run ends on time."""
        self._calling = call
        if self.tool_handler is None:
            out = None
        elif self._watch is not None and self._inline is not None:
            args = (call["tool"], call["args"], call["kwargs"], deadline, self._watch)
            out = self._inline(*args)
            if out is None or self._revoked:
                raise _Abandoned
        else:
            out = self.tool_handler(call["tool"], call["args"], call["kwargs"], deadline)
        self._reply(call, out, deadline)

    def _reply(self, call: dict, out, deadline: float) -> None:
        """Send the child OUT, the outcome of CALL (None: no tool handler)."""
        seq = call["seq"]
        if out is None:
            reply = protocol.make_return(
                seq, False, None, f"no tool named {call['tool']!r} in this kit", None
            )
        else:
            if out.verdict and self.verdict is None:
                error = out.error
                if out.verdict == "timeout":
                    error = f"wall-clock limit of {self.limits.wall_s:g} s exceeded: {error}"
                self.verdict = (out.verdict, error)
            reply = protocol.make_return(seq, bool(out.ok), out.value, out.error, out.verdict)
        try:
            data = protocol.encode(reply)
        except protocol.ProtocolError as exc:
            error = f"{call['tool']}: the result cannot be sent: {exc}"
            data = protocol.encode(protocol.make_return(seq, False, None, error, reply["stop"]))
        if self.unanswerable:
            return
        try:
            self._write(data, deadline)
        except JailDied as exc:
            self.unanswerable = str(exc)

    def _finished(self, frame: dict, run_id: str) -> Outcome:
        status, errors = frame["status"], frame["errors"]
        if frame["id"] != run_id or status not in protocol.STATUSES or not _errors_ok(errors):
            return Outcome("error", errors=[_msg("the jail sent a malformed result")], retire=True)
        return Outcome(status, frame["value"], errors, frame["cpu_ms"], frame["max_rss_kb"])

    def _died(self, done: dict, wall_s: float) -> Outcome:
        """The child ended without a result: the zygote's report says how."""
        sig, code = done["signal"], done["code"]
        if self.unready and not self.cancelled:  # before it was confined: it never read the run
            why = f"the jail's child ended before it was ready (exit code {code}, signal {sig})"
            return Outcome("killed", errors=[_msg(why)], unstarted=True)
        if self.cancelled:
            status, message = "timeout", f"wall-clock limit of {wall_s:g} s exceeded"
        elif sig in SIGNAL_VERDICTS:
            status, message = SIGNAL_VERDICTS[sig]
            message = message.format(cpu_s=self.limits.cpu_s)
        elif sig is not None:
            status, message = "killed", f"the run was killed by signal {sig}"
        else:
            status, message = "error", f"the run ended without a result (exit code {code})"
        cpu_ms = max(0.0, done["cpu_ms"] - self.child.cpu_ms)
        return Outcome(
            status, errors=[_msg(message)], cpu_ms=round(cpu_ms, 3), max_rss_kb=done["max_rss_kb"]
        )


def _errors_ok(errors) -> bool:
    """Each error from the jail is {message: str[, line: int, col: int][, traceback: frames,
    traceback_omitted: int]}, each frame {function: str, line: int[, col: int][, earlier:
    true]}, all capped."""
    if len(errors) > MAX_ERRORS:
        return False
    for e in errors:
        if not isinstance(e, dict) or not isinstance(e.get("message"), str):
            return False
        if any(k not in ERROR_KEYS for k in e):
            return False
        if any(k in e and (type(e[k]) is not int) for k in ("line", "col", "traceback_omitted")):
            return False
        if "traceback" in e and not _frames_ok(e["traceback"]):
            return False
    return True


def _frames_ok(frames) -> bool:
    if type(frames) is not list or len(frames) > protocol.MAX_FRAMES:
        return False
    for frame in frames:
        if type(frame) is not dict or not FRAME_KEYS[0] <= frame.keys() <= FRAME_KEYS[1]:
            return False
        name = frame["function"]
        if type(name) is not str or len(name) > protocol.MAX_FUNCTION:
            return False
        if any(type(frame[k]) is not int for k in ("line", "col") if k in frame):
            return False
        if "earlier" in frame and frame["earlier"] is not True:
            return False
    return True
