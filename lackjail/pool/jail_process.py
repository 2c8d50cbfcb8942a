"""One jail as the controller sees it: the zygote process, its control socket,
and the run channels of the children it forked ahead.

Glossary: see `lackjail.worker.zygote` (jail, pool, zygote, child, worker).

This module keeps only the process and its channels: it spawns the zygote,
reads and writes frames without blocking, takes each child's run channel from
the `spawned` frame, and kills and reaps. What a run means is `run.Run`'s;
when jails start, end and are replaced is the supervisor's (`pool.Pool`).

Everything read here comes out of the jail and is hostile: frames are decoded
with the wire's caps and schemas, descriptors passed with `spawned` must be
the two ends of two pipes, and any violation is a ProtocolError or JailDied
(the owner kills the jail).
"""

from __future__ import annotations

import array
import fcntl
import os
import select
import signal
import socket
import stat
import threading
import time

from lackjail import protocol
from lackjail.errors import HostError
from lackjail.pool.spawn import Spawned, kill_and_reap, signal_children, spawn, wait_ended

CTRL_FRAMES = ("spawned", "done", "pong", "limited", "loaded")
MAX_PENDING_FDS = 8  # descriptors received ahead of their `spawned` frames
CMSG_SPACE = socket.CMSG_SPACE(MAX_PENDING_FDS * 4)
# A pipe's whole buffer: a bigger read returns no more, and costs a bigger allocation per read
# (os.read(fd, 1 << 20) of a 60-byte result: ~17 us, against ~1 us for 1 << 16).
READ_SIZE = 1 << 16


class JailDied(HostError, RuntimeError):
    """The jail ended or could not start; the message says how."""


class Child:
    """A child's run channel (the controller's ends) and what is known of it."""

    __slots__ = (
        "gen",
        "loads",
        "run_in",
        "run_out",
        "buf",
        "frames",
        "ready",
        "runs",
        "done",
        "cpu_ms",
        "memory_mb",
        "poller",
    )

    def __init__(self, gen: int, run_in: int, run_out: int, max_frame: int, loads: int = 0):
        self.gen, self.run_in, self.run_out = gen, run_in, run_out
        self.loads = loads  # its zygote's loads when it was forked: its facade modules
        self.buf = protocol.FrameBuffer(max_frame)
        self.frames: list = []
        self.ready = False  # said `ready`: confined and waiting for a run
        self.runs = 0
        self.done: dict | None = None  # the zygote's report once the child ended
        self.cpu_ms = 0.0  # CPU time of the runs it reported (reuse mode)
        self.memory_mb = 0  # its address-space limit when a run lowered it (0: the jail's)
        # what a run on it polls (`run.Run`), made by its first run
        self.poller: select.poll | None = None

    def pump(self, expect) -> bool | None:
        """Read what the channel holds into frames: True when something came,
        None when nothing is there now, False at end of file."""
        try:
            data = os.read(self.run_out, READ_SIZE)
        except BlockingIOError:
            return None
        if not data:
            return False
        self.buf.feed(data)
        self.frames.extend(self.buf.frames(expect))
        return True

    def is_quiet(self) -> bool:
        """Nothing unasked-for waits on the channel (a reused child between runs)."""
        if self.frames or self.buf.pending():
            return False
        try:
            os.read(self.run_out, 1)  # a byte, or end of file: either way not quiet
        except BlockingIOError:
            return True
        return False

    def close(self) -> None:
        for fd in (self.run_in, self.run_out):
            if fd >= 0:
                os.close(fd)
        self.run_in = self.run_out = -1


class JailProcess:
    """A started jail. Not thread-safe: one owner at a time (the supervisor
    while it is idle, a Run while it is lent)."""

    def __init__(self, launcher, ident: int, max_frame: int, spawned: Spawned | None = None):
        """Start LAUNCHER's zygote, or take SPAWNED, the process it would start, started
        already (a command's early jail: `pool.early`)."""
        self.ident = ident
        self.max_frame = max_frame
        self.children: dict[int, Child] = {}  # gen -> child whose channel we hold
        self.runs = 0
        self.started = self.last_used = time.monotonic()
        self.ping_token: int | None = None
        self.memory_mb = 0  # its children's address-space limit (0: not known, never lowered)
        self.ping_deadline = 0.0
        # the python level's facade modules its zygote had loaded after each number of loads
        # (a child's `loads`); a zygote that loads all at its start never hears of one
        self.module_sets: dict[int, frozenset] = {0: frozenset()}
        self.loads = 0
        self._load_token = 0
        self._loaded: dict | None = None  # the zygote's answer to the load in flight
        self._fds: list[int] = []
        self._buf = protocol.FrameBuffer()
        self._watched: list[int] = []  # the descriptors _watch_poll polls (see _watcher)
        self._watch_poll = select.poll()
        spawned = spawned or spawn(launcher.argv, launcher.env, launcher.pass_fds)
        self._proc, self._log = spawned.proc, spawned.log
        self.pid = self._proc.pid
        self.ctrl = spawned.ctrl
        self.ctrl.setblocking(False)
        self.pidfd = os.pidfd_open(self.pid)
        self.alive = True  # until its pidfd says it ended or its control socket closes
        self._reaped = False
        self._killing = threading.Lock()  # `signal_kill` (another thread) against `kill`
        self._signalled: list[int] = []  # pidfds of the zygotes `signal_kill` killed

    # -- the control socket ----------------------------------------------

    def send_ctrl(self, msg: dict) -> None:
        data = memoryview(protocol.encode(msg))
        deadline = time.monotonic() + 1.0
        while data:
            try:
                data = data[self.ctrl.send(data) :]
            except BlockingIOError:
                if not wait_fd(self.ctrl.fileno(), select.POLLOUT, deadline):
                    raise JailDied("the zygote stopped reading its control socket") from None
            except OSError as exc:
                raise JailDied(f"the control socket failed: {exc}") from None

    def pump_ctrl(self) -> list[dict]:
        """Read the control socket once (a poll found it readable): register spawned
        children, note their ends and pongs; returns the frames read, [] when nothing was
        there. A read ends at a message that carries descriptors; what follows, the next
        poll shows. Reading on until the socket was empty cost a failing recvmsg per report
        (~20-40 us of a fresh run). JailDied at end of file."""
        try:
            data, anc, flags, _ = self.ctrl.recvmsg(1 << 16, CMSG_SPACE, socket.MSG_CMSG_CLOEXEC)
        except BlockingIOError:
            return []
        except OSError as exc:
            raise JailDied(f"the control socket failed: {exc}") from None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                self._fds.extend(fds)
        if flags & socket.MSG_CTRUNC or len(self._fds) > MAX_PENDING_FDS:
            raise protocol.ProtocolError("the zygote sent more descriptors than children")
        if not data:
            self.alive = False  # a zygote exits when its socket closes; it can serve no more
            raise JailDied("the jail exited")
        self._buf.feed(data)
        frames = list(self._buf.frames(CTRL_FRAMES))
        for frame in frames:
            kind = frame["t"]
            if kind == "spawned":
                self._adopt(frame["gen"], frame["loads"])
            elif kind == "done":
                child = self.children.get(frame["gen"])
                if child is not None:
                    child.done = frame
            elif kind == "pong" and frame["id"] == self.ping_token:
                self.ping_token = None
            elif kind == "limited":
                child = self.children.get(frame["gen"])
                if child is not None and frame["ok"]:
                    child.memory_mb = frame["memory_mb"]
            elif kind == "loaded" and frame["id"] == self._load_token:
                self._loaded = frame
        return frames

    def _adopt(self, gen: int, loads: int) -> None:
        if len(self._fds) < 2:
            raise protocol.ProtocolError("a 'spawned' frame came without its run channel")
        run_in, run_out = self._fds.pop(0), self._fds.pop(0)
        child = Child(gen, run_in, run_out, self.max_frame, loads)
        if gen in self.children or not (_pipe_end(run_in, os.O_WRONLY) and _pipe_end(run_out, 0)):
            child.close()
            raise protocol.ProtocolError("a 'spawned' frame came with a bad run channel")
        self.children[gen] = child

    def limit_memory(self, child: Child, memory_mb: int, deadline: float) -> bool:
        """Have the zygote set CHILD's address space to MEMORY_MB for its next run (0: the
        jail's own limit); False when that was not done by DEADLINE."""
        self.send_ctrl(protocol.make_limit(child.gen, memory_mb))
        while child.memory_mb != memory_mb:
            if not wait_fd(self.ctrl.fileno(), select.POLLIN, deadline):
                return False
            for frame in self.pump_ctrl():
                if frame["t"] == "limited" and frame["gen"] == child.gen and not frame["ok"]:
                    return False
        return True

    @property
    def modules(self) -> frozenset:
        """The facade modules its zygote has loaded, as far as it said."""
        return self.module_sets[self.loads]

    def covers(self, child: Child, modules) -> bool:
        """Has CHILD every facade module of MODULES loaded?"""
        return not modules or self.module_sets.get(child.loads, frozenset()).issuperset(modules)

    def load(self, modules, deadline: float) -> None:
        """Have the zygote load the facade modules of MODULES it has not loaded, and wait for
        its answer until DEADLINE; the children forked before are gone then (the zygote ends
        them: they lack the new ones). JailDied when it refused or did not answer in time."""
        missing = sorted(set(modules) - self.modules)
        if not missing:
            return
        self._load_token = token = self._load_token + 1
        self._loaded = None
        self.send_ctrl(protocol.make_load(token, missing))
        while self._loaded is None:
            if not wait_fd(self.ctrl.fileno(), select.POLLIN, deadline):
                raise JailDied(f"the jail did not load {', '.join(missing)} in time")
            self.pump_ctrl()
        answer, self._loaded = self._loaded, None
        if answer["error"] is not None:
            raise JailDied(f"the jail could not load {', '.join(missing)}: {answer['error']}")
        self.module_sets[answer["loads"]] = self.modules.union(missing)
        self.loads = answer["loads"]
        for child in list(self.children.values()):
            if not self.covers(child, missing):
                self.drop(child)

    def ping(self) -> None:
        """Send a ping; `ping_token` goes back to None when the pong arrives."""
        self.ping_token = time.monotonic_ns() & 0x7FFFFFFF
        self.send_ctrl(protocol.make_ping(self.ping_token))

    # -- children ---------------------------------------------------------

    def ready_count(self, modules=()) -> int:
        """Its ready children that have MODULES (facade modules) loaded."""
        return sum(
            1
            for c in self.children.values()
            if c.ready and c.done is None and self.covers(c, modules)
        )

    def watch_fds(self) -> list[int]:
        """What can have news while no run holds the jail: its end (pidfd), its reports
        (control socket), the channels of children not ready yet (their `ready`, or their
        end) and of reused ready children (they must stay quiet between runs)."""
        fds = [self.pidfd, self.ctrl.fileno()]
        fds += [
            c.run_out for c in self.children.values() if c.run_out >= 0 and (not c.ready or c.runs)
        ]
        return fds

    def pump(self, readable) -> None:
        """Read what READABLE (descriptors of `watch_fds` a poll found readable) holds, and
        only that: the zygote's end, its reports, the `ready` of children not ready yet (and
        of children adopted just now, which no poll has seen). End of file or anything but
        `ready` on a child's channel retires that child; so does anything a reused ready
        child writes between runs. Called while no run holds a child."""
        if self.pidfd in readable:
            self.alive = False
        adopted: list = []
        if self.ctrl.fileno() in readable:
            adopted = [f["gen"] for f in self.pump_ctrl() if f["t"] == "spawned"]
            self.forget_ended()
        for child in list(self.children.values()):
            if child.run_out in readable or child.gen in adopted:
                if not child.ready:
                    self._pump_ready(child)
                elif child.runs and not child.is_quiet():  # the poll may be stale: read
                    self.drop(child)

    def _pump_ready(self, child: Child) -> None:
        alive = child.pump(("ready",)) is not False
        if child.frames:
            frame = child.frames.pop(0)
            if frame["gen"] != child.gen or child.frames:
                raise protocol.ProtocolError("a child said 'ready' for another child")
            child.ready = True
        elif not alive:
            self.drop(child)

    def drop(self, child: Child) -> None:
        """Forget a child: close our ends (it gets end of file and exits)."""
        child.close()
        self.children.pop(child.gen, None)

    def forget_ended(self) -> None:
        """Drop the children the zygote reported ended (called while no run holds one)."""
        for child in list(self.children.values()):
            if child.done is not None:
                self.drop(child)

    def take_ready(self, modules=()) -> Child | None:
        """The ready child adopted first that has MODULES (facade modules) loaded, if any. A
        reused child with anything read and not consumed broke the protocol: dropped (what
        its channel holds unread, `pump` found)."""
        for child in list(self.children.values()):
            if child.ready and child.done is None and self.covers(child, modules):
                if child.runs == 0 or not (child.frames or child.buf.pending()):
                    return child
                self.drop(child)
        return None

    def take_unready(self, modules=()) -> Child | None:
        """The child adopted first that has MODULES loaded and has not said `ready` yet (it
        is still warming up or confining itself), if any."""
        for child in self.children.values():
            if not child.ready and child.done is None and self.covers(child, modules):
                return child
        return None

    def wait_ready_child(self, deadline: float, modules=(), unready: bool = False) -> Child:
        """The ready child adopted first that has MODULES (the python level's facade
        modules) loaded; the zygote loads those it lacks first. Waits for one until
        DEADLINE. One poll of `watch_fds` says what there is to read (the first does not
        sleep): no read is made on the chance that something is there. With UNREADY, a
        child not ready yet is taken rather than waited for (its run is written at once and
        read once the child is confined: `run.Run`). JailDied when the jail has ended
        (`alive` then says so), could not load MODULES or had no child ready in time."""
        if not self.modules.issuperset(modules):
            self.load(modules, deadline)
        timeout_ms = 0.0
        while True:
            self.pump({fd for fd, _ in self._watcher().poll(timeout_ms)})
            if not self.alive:
                raise JailDied("the jail exited")
            child = self.take_ready(modules) or (self.take_unready(modules) if unready else None)
            if child is not None:
                return child
            timeout_ms = (deadline - time.monotonic()) * 1000
            if timeout_ms <= 0:
                raise JailDied("the jail had no child ready in time")

    def _watcher(self):
        """A poll object over `watch_fds`, made again only when they change (a reused child
        between runs, or a ready spare: the same three every run)."""
        fds = self.watch_fds()
        if fds != self._watched:
            self._watched, self._watch_poll = fds, select.poll()
            for fd in fds:
                self._watch_poll.register(fd, select.POLLIN)
        return self._watch_poll

    def answers_ping(self, deadline: float) -> bool:
        """Ping the zygote and wait for its answer until DEADLINE."""
        try:
            self.ping()
            while self.ping_token is not None:
                if not wait_fd(self.ctrl.fileno(), select.POLLIN, deadline):
                    return False
                self.pump_ctrl()
            return True
        except (JailDied, protocol.ProtocolError):
            return False

    # -- the process ------------------------------------------------------

    def kill(self) -> None:
        """End the jail at once, reap it (every process of it ended: `kill_and_reap`) and close
        everything; safe to call twice."""
        self.alive = False
        with self._killing:
            if not self._reaped:
                kill_and_reap(self._proc)  # the Popen reaps, so it never reaps behind our back
                self._reaped = True
            # a zygote `signal_kill` ended is no child of ours any more once nsjail is reaped:
            # waited for here, so that no process of the jail outlives this call
            signalled, self._signalled = self._signalled, []
        wait_ended(signalled)
        self.close()

    def signal_kill(self) -> None:
        """SIGKILL the jail's processes and nothing else, without waiting: whoever holds it
        sees it end (`kill` then waits until every one has ended). The zygote is killed
        first, by its pidfd: nsjail gives it a session of its own, which the group's kill
        misses, and with nsjail gone it would end only at the parent-death signal, maybe
        after this process had exited. Until the jail is reaped its pid (even as a zombie)
        keeps the group id ours alone."""
        with self._killing:
            if self._reaped:
                return
            self._signalled += signal_children(self.pid)
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self) -> None:
        for child in list(self.children.values()):
            self.drop(child)
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        self.ctrl.close()
        self._log.close()

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


def _pipe_end(fd: int, mode: int) -> bool:
    """Is FD a pipe opened for MODE (os.O_WRONLY, or 0 for reading)? If so, it is made
    non-blocking (the zygote sends it so: then no more system calls are made)."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        if flags & os.O_ACCMODE != mode:
            return False
        if not flags & os.O_NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        return True
    except OSError:
        return False


def wait_fd(fd: int, events: int, deadline: float) -> bool:
    """Wait until FD has EVENTS or DEADLINE (time.monotonic) passes."""
    poller = select.poll()
    poller.register(fd, events)
    return bool(poller.poll(max(0.0, deadline - time.monotonic()) * 1000))
