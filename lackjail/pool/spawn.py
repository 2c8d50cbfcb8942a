"""Starting a zygote's process (its control socket, its log, a session of its own) and ending
it. One place for the pool's jails and for a command's early jail (`pool.early`), which starts
before the pool's modules are imported: only the standard library here, and none of its slower
modules (typing, dataclasses)."""

from __future__ import annotations

import io
import os
import select
import signal
import socket
import subprocess
import time


def config_memfd(text: str) -> int:
    """nsjail's configuration TEXT in an anonymous file in memory, its descriptor returned
    (close-on-exec; pass it with pass_fds and name it /proc/self/fd/N): nothing on disk to
    clean up, nor for anyone to swap while nsjail opens it."""
    fd = os.memfd_create("lackjail-nsjail-config", os.MFD_CLOEXEC)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        os.close(fd)
        raise
    return fd


class Spawned:
    """A started zygote process: PROC, our end of its control socket CTRL (blocking as made),
    and LOG, the file its stderr (nsjail's own messages) goes to."""

    __slots__ = ("proc", "ctrl", "log")

    def __init__(self, proc: subprocess.Popen, ctrl: socket.socket, log: io.FileIO):
        self.proc, self.ctrl, self.log = proc, ctrl, log

    def kill(self) -> None:
        """End it (`kill_and_reap`) and close our ends."""
        kill_and_reap(self.proc)
        self.ctrl.close()
        self.log.close()


def kill_and_reap(proc: subprocess.Popen, wait_s: float = 10.0) -> None:
    """End PROC and its children: SIGKILL the children, wait until they have ended, then
    SIGKILL PROC's process group and reap PROC. Returns once all of them have ended (each wait
    at most WAIT_S, for a process the kernel cannot end at once).

    nsjail puts the zygote in a session of its own, which its process group does not reach;
    killed with nsjail only, the zygote would die of the parent-death signal after nsjail was
    reaped, and a caller that exits then would leave it behind for a moment. The zygote is
    its jail's pid namespace's first process: once it has ended, every process of the jail
    has (what is left of it, a zombie, init reaps). At the weaker levels PROC is the zygote
    and its children are the jail's children, which the same steps end."""
    _kill_children(proc.pid, wait_s)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def end_tree(pid: int, wait_s: float = 10.0) -> None:
    """`kill_and_reap` for our child PID known by its number only (a process about to exit at
    once ends the jails it started): its children, then its process group and itself, reaped."""
    _kill_children(pid, wait_s)
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:  # no group of its own, or gone
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _kill_children(pid: int, wait_s: float) -> None:
    """SIGKILL PID's children and wait until they have ended (at most WAIT_S)."""
    wait_ended(signal_children(pid), wait_s)


def signal_children(pid: int) -> list[int]:
    """SIGKILL PID's children now, without waiting; their pidfds, for `wait_ended`."""
    children = _child_pidfds(pid)
    for pidfd in children:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return children


def wait_ended(pidfds: list[int], wait_s: float = 10.0) -> None:
    """Wait until every process of PIDFDS has ended (at most WAIT_S), then close PIDFDS."""
    try:
        _wait_all(pidfds, time.monotonic() + wait_s)
    finally:
        for pidfd in pidfds:
            os.close(pidfd)


def _wait_all(pidfds: list[int], deadline: float) -> None:
    """Until every process of PIDFDS has ended, or DEADLINE (time.monotonic)."""
    poller = select.poll()
    for pidfd in pidfds:
        poller.register(pidfd, select.POLLIN)
    left = set(pidfds)
    while left and time.monotonic() < deadline:
        for fd, _ in poller.poll(max(0.0, deadline - time.monotonic()) * 1000):
            left.discard(fd)
            poller.unregister(fd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _child_pidfds(pid: int) -> list[int]:
    """Descriptors (pidfds) of PID's children now: those still its children once a descriptor
    is held, so none names a process that took a reaped child's number."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as fh:
            pids = [int(p) for p in fh.read().split()]
    except (OSError, ValueError):
        return []
    fds = {child: fd for child in pids if (fd := _pidfd(child)) is not None}
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as fh:
            still = {int(p) for p in fh.read().split()}
    except (OSError, ValueError):
        still = set()
    for child in [c for c in fds if c not in still]:
        os.close(fds.pop(child))
    return list(fds.values())


def spawn(argv: list, env: dict, pass_fds: tuple = ()) -> Spawned:
    """Start ARGV with ENV, its stdin and stdout one end of a new socket pair, its stderr an
    anonymous file in memory; PASS_FDS are left open in it (a configuration to read)."""
    log = open(os.memfd_create("lackjail-jail-log", os.MFD_CLOEXEC), "w+b", buffering=0)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # subprocess, not os.posix_spawn: both vfork, but only subprocess lets go of the
        # GIL until the exec, so a start under load does not stall every other thread
        # (the first run's caller among them) for the ~0.2-12 ms it takes (gh-104372)
        proc = subprocess.Popen(
            argv,
            stdin=theirs.fileno(),
            stdout=theirs.fileno(),
            stderr=log.fileno(),
            env=env,
            pass_fds=pass_fds,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError):
        ours.close()
        log.close()
        raise
    finally:
        theirs.close()
    return Spawned(proc, ours, log)
