"""One jail as the controller sees it: a zygote process and its two channels.

Everything read here comes out of the jail and is hostile: frames are
decoded with the wire's caps and schemas, and any violation ends the run
with a clear error and retires the jail (the pool starts another).
"""

from __future__ import annotations

import os
import select
import signal
import tempfile
import time
from dataclasses import dataclass, field

from lackjail import protocol

SIGNAL_VERDICTS = {
    signal.SIGXCPU: ("timeout", "CPU time limit of {cpu_s} s exceeded"),
    signal.SIGSYS: ("denied", "the program made a forbidden system call and was killed by seccomp"),
}
SPIN_S = 0.0003  # how long the controller polls before it sleeps on a channel


class WorkerDied(RuntimeError):
    """The jail ended or could not start; the message says how."""


@dataclass
class Outcome:
    """What one run produced, as the controller observed it."""

    status: str
    value: object = None
    errors: list = field(default_factory=list)
    cpu_ms: float = 0.0
    max_rss_kb: int = 0
    retire: bool = False  # the jail must not serve another run


class Worker:
    """A started jail. Not thread-safe: the pool lends it to one run at a time."""

    def __init__(self, argv: list[str], env: dict, limits: dict, runs_per_child: int, ident: int):
        self.ident = ident
        self.limits = limits
        self.runs_per_child = runs_per_child
        self.gen = None  # generation of the child waiting for a run, once ready
        self.child_runs = 0
        self.runs = 0
        self.started = self.last_used = time.monotonic()
        self._log = tempfile.TemporaryFile()
        ctrl_in_r, self.ctrl_in = os.pipe()
        self.ctrl_out, ctrl_out_w = os.pipe()
        run_in_r, self.run_in = os.pipe()
        self.run_out, run_out_w = os.pipe()
        actions = [
            (os.POSIX_SPAWN_DUP2, ctrl_in_r, 0),
            (os.POSIX_SPAWN_DUP2, ctrl_out_w, 1),
            (os.POSIX_SPAWN_DUP2, self._log.fileno(), 2),
            (os.POSIX_SPAWN_DUP2, run_in_r, 3),
            (os.POSIX_SPAWN_DUP2, run_out_w, 4),
        ]
        try:
            self.pid = os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
        finally:
            for fd in (ctrl_in_r, ctrl_out_w, run_in_r, run_out_w):
                os.close(fd)
        for fd in (self.ctrl_in, self.ctrl_out, self.run_in, self.run_out):
            os.set_inheritable(fd, False)
            os.set_blocking(fd, False)
        self._ctrl_buf = protocol.FrameBuffer()
        self._run_buf = protocol.FrameBuffer()
        self._ctrl_frames: list = []
        self._run_frames: list = []
        self.alive = True

    # -- channels -------------------------------------------------------

    def _write(self, fd: int, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                if not self._wait(fd, select.POLLOUT, deadline):
                    raise TimeoutError("the jail stopped reading its channel")
            except BrokenPipeError:
                raise WorkerDied("the jail closed its channel") from None

    @staticmethod
    def _wait(fd: int, events: int, deadline: float) -> bool:
        poller = select.poll()
        poller.register(fd, events)
        return bool(poller.poll(max(0.0, deadline - time.monotonic()) * 1000))

    def _pump(self, fd: int, buf: protocol.FrameBuffer, out: list, expect) -> None:
        """Read what FD has and decode whole frames into OUT (ProtocolError on bad ones)."""
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            raise WorkerDied("the jail exited")
        buf.feed(data)
        out.extend(buf.frames(expect))

    def _next(self, deadline: float, expect_run=None, spin=False):
        """The next frame from either channel: ("ctrl"|"run", frame); None at the deadline.

        SPIN: poll for a moment before sleeping (right after answering a tool call).
        """
        while True:
            if self._run_frames:
                return "run", self._run_frames.pop(0)
            if self._ctrl_frames:
                return "ctrl", self._ctrl_frames.pop(0)
            poller = select.poll()
            poller.register(self.ctrl_out, select.POLLIN)
            if expect_run is not None:
                poller.register(self.run_out, select.POLLIN)
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                return None
            events = self._spin(poller) if spin else None
            spin = False
            for fd, _ in events or poller.poll(timeout * 1000):
                if fd == self.ctrl_out:
                    self._pump(fd, self._ctrl_buf, self._ctrl_frames, ("ready", "done", "pong"))
                else:
                    self._pump(fd, self._run_buf, self._run_frames, expect_run)

    @staticmethod
    def _spin(poller, spin_s: float = SPIN_S):
        """Poll without sleeping for a moment: a program that just got a tool's answer
        usually calls again or finishes within it, and a sleeping thread costs a
        wake-up (hundreds of microseconds on a VM). Only after a tool call: spinning
        while programs compute would take the CPU they need."""
        until = time.perf_counter() + spin_s
        while True:
            events = poller.poll(0)
            if events or time.perf_counter() > until:
                return events

    def send_ctrl(self, msg: dict) -> None:
        self._write(self.ctrl_in, protocol.encode(msg), time.monotonic() + 1.0)

    # -- lifecycle ------------------------------------------------------

    def wait_ready(self, timeout: float) -> None:
        """Block until a confined child is waiting for a run (WorkerDied otherwise)."""
        deadline = time.monotonic() + timeout
        while self.gen is None:
            try:
                item = self._next(deadline)
            except protocol.ProtocolError as exc:
                raise WorkerDied(f"the jail sent a bad control frame: {exc}") from None
            except WorkerDied as exc:
                self.reap_quietly()
                raise WorkerDied(f"{exc}{self.log_tail()}") from None
            if item is None:
                raise WorkerDied(f"the jail was not ready within {timeout:g} s{self.log_tail()}")
            _, frame = item
            if frame["t"] == "ready":
                self.gen, self.child_runs = frame["gen"], 0

    def healthy(self, idle_ping_s: float = 2.0) -> bool:
        """Alive, and (when it sat idle for a while) answering a ping."""
        if not self.alive:
            return False
        try:
            if os.waitpid(self.pid, os.WNOHANG)[0]:
                self.alive = False
                return False
        except ChildProcessError:
            self.alive = False
            return False
        if time.monotonic() - self.last_used > idle_ping_s:
            return self.ping()
        return True

    def ping(self, timeout: float = 1.0) -> bool:
        """Health check: the zygote answers a ping."""
        token = int(time.monotonic_ns() & 0x7FFFFFFF)
        try:
            self.send_ctrl(protocol.make_ping(token))
            deadline = time.monotonic() + timeout
            while True:
                item = self._next(deadline)
                if item is None:
                    return False
                frame = item[1]
                if frame["t"] == "pong" and frame["id"] == token:
                    return True
                if frame["t"] == "ready":
                    self.gen, self.child_runs = frame["gen"], 0
        except (WorkerDied, protocol.ProtocolError, TimeoutError):
            return False

    def reap_quietly(self) -> None:
        """Give the jail a moment to finish writing its log before we read it."""
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    self.alive = False
                    return
            except ChildProcessError:
                return
            time.sleep(0.005)

    def log_tail(self) -> str:
        """The jail's last stderr lines (nsjail's own messages), for start-up errors."""
        try:
            self._log.seek(0)
            lines = [
                line
                for line in self._log.read()[-4096:].decode("utf-8", "replace").splitlines()
                if "no version information available" not in line and line.strip()
            ]
        except (OSError, ValueError):
            return ""
        return (": " + " | ".join(lines[-3:])) if lines else ""

    def kill(self) -> None:
        """End the jail at once and reap it; safe to call twice."""
        if self.alive:
            self.alive = False
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.reap()

    def reap(self) -> None:
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        for fd in (self.ctrl_in, self.ctrl_out, self.run_in, self.run_out):
            try:
                os.close(fd)
            except OSError:
                pass
        self.ctrl_in = self.ctrl_out = self.run_in = self.run_out = -1
        self._log.close()

    def stop(self, grace: float = 0.5) -> None:
        """Ask the zygote to exit, then make sure it did."""
        if self.alive:
            try:
                self.send_ctrl(protocol.make_stop())
                deadline = time.monotonic() + grace
                while time.monotonic() < deadline:
                    pid, _ = os.waitpid(self.pid, os.WNOHANG)
                    if pid:
                        self.alive = False
                        break
                    time.sleep(0.002)
            except (WorkerDied, TimeoutError, OSError):
                pass
        self.kill()

    # -- one run --------------------------------------------------------

    def execute(self, run: dict, wall_s: float, kill_grace: float, on_call, on_output) -> Outcome:
        """Send RUN to the waiting child and see it through to an Outcome.

        ON_CALL(frame) -> return-frame dict answers a tool call; ON_OUTPUT(text)
        receives printed text as it arrives. Never raises for what the jail does.
        """
        gen = self.gen
        self.gen = None
        self.last_used = time.monotonic()
        self.runs += 1
        self.child_runs += 1
        deadline = until = time.monotonic() + wall_s
        output_budget = self.limits["output_bytes"] + 65536
        cancelled = answered = False
        try:
            self._write(self.run_in, protocol.encode(run), deadline)
            while True:
                item = self._next(until, ("output", "call", "result"), spin=answered)
                answered = False
                if item is None:
                    if cancelled:  # the zygote did not kill its child in time: end the jail
                        self.kill()
                        return Outcome(
                            "timeout",
                            errors=[_msg(f"wall-clock limit of {wall_s:g} s exceeded")],
                            retire=True,
                        )
                    self.send_ctrl(protocol.make_cancel(gen))
                    cancelled, until = True, time.monotonic() + kill_grace
                    continue
                channel, frame = item
                kind = frame["t"]
                if channel == "ctrl":
                    if kind == "done" and frame["gen"] == gen:
                        # The child writes its result before it exits: look once more.
                        self._pump(
                            self.run_out,
                            self._run_buf,
                            self._run_frames,
                            ("output", "call", "result"),
                        )
                        if self._run_frames:
                            self._ctrl_frames.insert(0, frame)
                            continue
                        return self._died(frame, cancelled, wall_s)
                    if kind == "ready":
                        self.gen, self.child_runs = frame["gen"], 0
                    continue
                if kind == "output":
                    output_budget -= len(frame["text"])
                    if output_budget < 0:
                        self.kill()
                        return Outcome(
                            "limit",
                            errors=[_msg("output exceeds its limit (the jail ignored the cap)")],
                            retire=True,
                        )
                    on_output(frame["text"])
                elif kind == "call":
                    reply = on_call(frame)
                    try:
                        data = protocol.encode(reply)
                    except protocol.ProtocolError as exc:
                        data = protocol.encode(
                            {
                                **reply,
                                "ok": False,
                                "value": None,
                                "error": f"{frame['tool']}: the result cannot be sent: {exc}",
                            }
                        )
                    self._write(self.run_in, data, deadline)
                    answered = True
                else:
                    return self._finished(frame, run["id"], gen)
        except protocol.ProtocolError as exc:
            self.kill()
            return Outcome(
                "error", errors=[_msg(f"the jail broke the protocol: {exc}")], retire=True
            )
        except (WorkerDied, TimeoutError) as exc:
            self.kill()
            if cancelled:
                return Outcome(
                    "timeout",
                    errors=[_msg(f"wall-clock limit of {wall_s:g} s exceeded")],
                    retire=True,
                )
            return Outcome(
                "killed", errors=[_msg(f"the jail ended during the run ({exc})")], retire=True
            )

    def _finished(self, frame: dict, run_id: str, gen: int) -> Outcome:
        status = frame["status"]
        errors = frame["errors"]
        if frame["id"] != run_id or status not in protocol.STATUSES or not _errors_ok(errors):
            self.kill()
            return Outcome("error", errors=[_msg("the jail sent a malformed result")], retire=True)
        keep = protocol.keeps_child(status) and self.child_runs < self.runs_per_child
        if keep:
            self.gen = gen
        return Outcome(status, frame["value"], errors, frame["cpu_ms"], frame["max_rss_kb"])

    def _died(self, done: dict, cancelled: bool, wall_s: float) -> Outcome:
        """The child ended without a result: the zygote's report says how."""
        sig, code = done["signal"], done["code"]
        if cancelled:
            status, message = "timeout", f"wall-clock limit of {wall_s:g} s exceeded"
        elif sig in SIGNAL_VERDICTS:
            status, message = SIGNAL_VERDICTS[sig]
            message = message.format(cpu_s=self.limits["cpu_s"])
        elif sig is not None:
            status, message = "killed", f"the run was killed by signal {sig}"
        else:
            status, message = "error", f"the run ended without a result (exit code {code})"
        return Outcome(
            status,
            errors=[_msg(message)],
            cpu_ms=done["cpu_ms"],
            max_rss_kb=done["max_rss_kb"],
            retire=True,
        )


def _msg(text: str) -> dict:
    return {"message": text}


def _errors_ok(errors) -> bool:
    """Each error from the jail is {message: str[, line: int, col: int]}."""
    for e in errors:
        if not isinstance(e, dict) or not isinstance(e.get("message"), str):
            return False
        if any(k not in ("message", "line", "col") for k in e):
            return False
        if any(
            k in e and not (isinstance(e[k], int) and not isinstance(e[k], bool))
            for k in ("line", "col")
        ):
            return False
    return len(errors) <= 1000
