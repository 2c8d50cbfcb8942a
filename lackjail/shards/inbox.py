"""A shard's channel from the Jail, read by the very threads that serve its runs.

One of them at a time holds the reader's role (leader and followers): it reads
frames until a run comes, gives the role to the next and runs that run itself,
so no hand-off to another thread lies between a run's frame and its start. A
run's tool handler waiting for the Jail's answer takes the role too when no one
holds it (every caller may be waiting on a tool at once); runs it reads meanwhile
wait in a queue for the next free caller, answers for other runs are handed to
them.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from lackjail import protocol
from lackjail.shards import wire

EXPECT = wire.TO_SHARD - {"open"}


class Inbox:
    def __init__(self, reader, on_wait: Callable[[dict], None]):
        self._reader = reader
        self._on_wait = on_wait  # called (by the reader) with each `wait` frame
        self._cond = threading.Condition()
        self._reading = False  # a thread holds the reader's role
        self._runs: deque = deque()  # run frames read by a tool handler, for the next caller
        self._answers: dict[int, dict | None] = {}  # run id -> its answer, once it came
        self.ended = False

    def next_run(self) -> dict | None:
        """The next run frame, read by this thread if no other reads; None at the end."""
        with self._cond:
            while True:
                if self._runs:
                    self._pass_on()
                    return self._runs.popleft()
                if self.ended:
                    return None
                if not self._reading:
                    self._reading = True
                    break
                self._cond.wait()
        return self._read(None)

    def expect(self, rid: int) -> None:
        """Run RID has sent a tool call: keep its answer when another thread reads it."""
        with self._cond:
            self._answers[rid] = None

    def forget(self, rid: int) -> None:
        with self._cond:
            self._answers.pop(rid, None)

    def answer(self, rid: int, until: float) -> dict | None:
        """Run RID's answer (see `expect`); None at the end, or past UNTIL (a monotonic time)
        while another thread holds the reader's role."""
        try:
            while True:
                with self._cond:
                    while True:
                        got = self._answers.get(rid)
                        if got is not None or self.ended:
                            self._pass_on()
                            return got
                        if not self._reading:
                            self._reading = True
                            break
                        left = until - time.monotonic()
                        if left <= 0:
                            self._pass_on()
                            return None
                        self._cond.wait(left)
                got = self._read(rid)
                if got is not None or self.ended:
                    return got
        finally:
            self.forget(rid)

    def wait_ended(self) -> None:
        with self._cond:
            while not self.ended:
                self._cond.wait()

    def _pass_on(self) -> None:
        """A waiter leaves without the role: if no one reads, wake the next (lock held)."""
        if not self._reading:
            self._cond.notify()

    def _read(self, rid: int | None) -> dict | None:
        """Hold the reader's role until a run frame (RID None) or RID's answer comes, which is
        returned with the role given up; None at the channel's end (or a frame that breaks
        the wire: the Jail is gone or broken)."""
        while True:
            try:
                frame = wire.read(self._reader, EXPECT)
            except (EOFError, OSError, protocol.ProtocolError):
                with self._cond:
                    self.ended, self._reading = True, False
                    self._cond.notify_all()
                return None
            kind = frame["t"]
            if kind == "wait":
                self._on_wait(frame)
                continue
            mine = kind == "run" if rid is None else kind == "answer" and frame["id"] == rid
            with self._cond:
                if mine:
                    self._reading = False
                    self._cond.notify()  # a follower takes the role
                    return frame
                if kind == "run":
                    self._runs.append(frame)
                elif frame["id"] in self._answers:
                    self._answers[frame["id"]] = frame
                self._cond.notify_all()
