"""The crossing floor: what one round trip between two processes costs on this machine,
by how each side waits for the other, measured in the same run as the host tool call.

A host tool call is such a round trip (the child's `call`, the controller's answer) plus
the work on both sides: these figures say how much of a call no code of lackjail's can
remove, and how much waiting costs. Both sides are Python processes (as the jail and the
controller are), unpinned, with nothing between the read and the write: a pipe with each
side asleep in `read`; an eventfd pair, asleep; a pipe with each side spinning on a
non-blocking read (how a call crosses while both sides spin); a shared-memory flag both
sides spin on (no system call: the cost of moving a cache line, and of Python's loop);
and the pipe again carrying a real `call` frame and its `return`, encoded and decoded
as the child and the controller do (the controller's decoding strict), each side waiting
as a call's sides do (protocol.Spin: a short spin, then sleep): a host tool call with
nothing of the kit, the trace or the program in it.
A namespace changes none of this (a pipe into a jail is the same pipe), so the peer is a
plain forked process.
"""

from __future__ import annotations

import mmap
import os
import select
import statistics
import time

from lackjail import protocol
from lackjail.bench.figures import (
    CROSS_EVENTFD,
    CROSS_FRAMED,
    CROSS_PIPE_SLEEP,
    CROSS_PIPE_SPIN,
    CROSS_SHM_SPIN,
    Figures,
)

WARM = 50  # round trips before the measured ones
BUDGET_S = 2.0  # a variant stops early past this (two spinners sharing a CPU take turns slowly)
STOP = 255  # the shared-memory flag's value that ends its peer


def _pipe_peer(rfd, wfd):
    while True:
        try:
            data = os.read(rfd, 1)
        except BlockingIOError:  # the spinning variant
            continue
        if data in (b"", b"\0"):
            return
        os.write(wfd, data)


def _pipe_trip(rfd, wfd):
    os.write(wfd, b"x")
    while True:
        try:
            return os.read(rfd, 1)
        except BlockingIOError:
            continue


def _read_frame(rfd, buf, expect, spin):
    """The next frame on RFD (non-blocking), waited for as a tool call's answer is: SPIN
    (protocol.Spin) polls for a while, then sleeps."""
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    while True:
        frame = next(buf.frames(expect), None)
        if frame is not None:
            return frame
        spin.poll(poller.poll)
        try:
            buf.feed(os.read(rfd, 1 << 16))
        except BlockingIOError:
            continue


def _framed_peer(rfd, wfd):
    """The controller's side: a strictly decoded `call`, answered with a `return`."""
    buf, spin = protocol.FrameBuffer(), protocol.Spin()
    while True:
        try:
            call = _read_frame(rfd, buf, ("call",), spin)
        except protocol.ProtocolError:  # the host's stop
            return
        answer = protocol.make_return(call["seq"], True, call["args"][0], None, None)
        os.write(wfd, protocol.encode(answer))


class _FramedTrip:
    """The child's side: a `call` frame out, its `return` in (decoded as the child does)."""

    def __init__(self):
        self.seq = 0
        self.buf = protocol.FrameBuffer(trusted=True)
        self.spin = protocol.Spin()

    def __call__(self, rfd, wfd):
        self.seq += 1
        os.write(wfd, protocol.encode(protocol.make_call(self.seq, "echo", [self.seq], {})))
        _read_frame(rfd, self.buf, ("return",), self.spin)


def _eventfd_peer(rfd, wfd):
    while os.eventfd_read(rfd) == 1:
        os.eventfd_write(wfd, 1)


def _eventfd_trip(rfd, wfd):
    os.eventfd_write(wfd, 1)
    os.eventfd_read(rfd)


def _shm_peer(flag, _):
    seen = 0
    while True:
        while flag[0] == seen:  # nothing new from the host yet
            pass
        seen = flag[0]
        if seen == STOP:
            return
        flag[1] = seen  # the answer


class _ShmTrip:
    """The host's side of the flag: byte 0 carries its sequence number, byte 1 the echo."""

    def __init__(self):
        self.seq = 0

    def __call__(self, flag, _):
        self.seq = self.seq % 250 + 1
        flag[0] = self.seq
        while flag[1] != self.seq:
            pass


def _median_trip(n, trip, peer, host_ends, peer_ends, stop) -> float:
    """The median of N round trips (us); PEER answers in a forked process."""
    pid = os.fork()
    if pid == 0:
        try:
            peer(*peer_ends)
        finally:
            os._exit(0)
    samples = []
    until = time.perf_counter() + BUDGET_S
    try:
        for _ in range(n + WARM):
            t = time.perf_counter()
            trip(*host_ends)
            samples.append((time.perf_counter() - t) * 1e6)
            if t > until:
                break
    finally:
        stop()
        os.waitpid(pid, 0)
    return statistics.median(samples[WARM:] or samples)


def _pipes(n, blocking, trip=_pipe_trip, peer=_pipe_peer) -> float:
    to_r, to_w = os.pipe()
    back_r, back_w = os.pipe()
    for fd in (to_r, back_r):
        os.set_blocking(fd, blocking)

    def stop():
        os.write(to_w, b"\0\0\0\0q")  # a byte for the bare peer, a bad frame for the framed one
        for fd in (to_r, to_w, back_r, back_w):
            os.close(fd)

    return _median_trip(n, trip, peer, (back_r, to_w), (to_r, back_w), stop)


def _eventfds(n) -> float:
    to, back = os.eventfd(0), os.eventfd(0)

    def stop():
        os.eventfd_write(to, 2)
        os.close(to)
        os.close(back)

    return _median_trip(n, _eventfd_trip, _eventfd_peer, (back, to), (to, back), stop)


def _shared_flag(n) -> float:
    flag = mmap.mmap(-1, mmap.PAGESIZE)  # shared: the forked peer sees the same page
    try:
        return _median_trip(
            n, _ShmTrip(), _shm_peer, (flag, None), (flag, None), lambda: flag.__setitem__(0, STOP)
        )
    finally:
        flag.close()


def crossing_figures(n=2000) -> Figures:
    """The median round trip (us) between two processes for each way of waiting."""
    figures = Figures()
    figures[CROSS_PIPE_SLEEP] = _pipes(n, blocking=True)
    figures[CROSS_PIPE_SPIN] = _pipes(n, blocking=False)
    figures[CROSS_FRAMED] = _pipes(n, blocking=False, trip=_FramedTrip(), peer=_framed_peer)
    figures[CROSS_EVENTFD] = _eventfds(n)
    if (os.cpu_count() or 1) > 1:  # two spinners on one CPU would only take turns
        figures[CROSS_SHM_SPIN] = _shared_flag(n)
    else:
        figures.missing(CROSS_SHM_SPIN, "this machine has one CPU")
    return figures
