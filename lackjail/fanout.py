"""Run one blocking call over many jobs on a few threads, with bounded work in flight.

`Jail.map`, `Jail.as_completed` and `lackjail batch` share this engine. The
input is read lazily (an endless generator is fine); at most WINDOW jobs are
taken and not yet handed to the caller, so memory stays bounded whatever the
input size or the order results are wanted in. A slot is given back only when
the caller has received the result, so a slow consumer slows the producers
instead of piling results up.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lackjail.errors import ArgumentError

_DONE = object()  # a thread's last message: it takes no more jobs


@dataclass
class Finished:
    """One job's outcome: `value` when `fn` returned, `error` when it raised."""

    index: int
    job: Any
    value: Any = None
    error: BaseException | None = None


def fan_out(
    fn: Callable[[Any], Any],
    jobs: Iterable,
    concurrency: int,
    window: int | None = None,
    ordered: bool = False,
) -> Iterator[Finished]:
    """Call FN on every job with CONCURRENCY threads; yield each job once, as a Finished.

    ORDERED: in input order (results that finish early wait, counted in the
    window); otherwise as they complete. An exception from the input iterator
    ends the stream: it is yielded as a Finished with index -1 after the jobs
    taken before it. Closing the generator stops taking jobs; jobs already
    running finish on their own threads and are dropped.
    """
    if concurrency < 1:
        raise ArgumentError(f"concurrency must be at least 1, not {concurrency}")
    window = max(window or 4 * concurrency, concurrency)
    engine = _Engine(fn, jobs, concurrency, window)
    try:
        yield from engine.ordered() if ordered else engine.completed()
    finally:
        engine.stop()


class _Engine:
    def __init__(self, fn, jobs, concurrency, window):
        self._fn = fn
        self._jobs = iter(jobs)
        self._take = threading.Lock()
        self._slots = threading.Semaphore(window)
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self._stopped = threading.Event()
        self._exhausted = False
        self._next = 0
        self._threads = [
            threading.Thread(target=self._work, name=f"lackjail-map-{n}", daemon=True)
            for n in range(concurrency)
        ]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        try:
            while True:
                self._slots.acquire()
                job = self._take_job()
                if job is None:
                    return
                index, item = job
                try:
                    self._results.put(Finished(index, item, value=self._fn(item)))
                except BaseException as exc:  # handed to the caller, never lost
                    self._results.put(Finished(index, item, error=exc))
        finally:
            self._results.put(_DONE)

    def _take_job(self):
        with self._take:
            if self._exhausted or self._stopped.is_set():
                return None
            try:
                item = next(self._jobs)
            except StopIteration:
                self._exhausted = True
                return None
            except BaseException as exc:  # the caller's input failed: say so, after the rest
                self._exhausted = True
                self._results.put(Finished(-1, None, error=exc))
                return None
            index, self._next = self._next, self._next + 1
            return index, item

    def _finished(self) -> Iterator[Finished]:
        live = len(self._threads)
        while live:
            item = self._results.get()
            if item is _DONE:
                live -= 1
                continue
            yield item

    def completed(self) -> Iterator[Finished]:
        input_error = None
        for item in self._finished():
            if item.index < 0:
                input_error = item
                continue
            yield item
            self._slots.release()
        if input_error is not None:
            yield input_error

    def ordered(self) -> Iterator[Finished]:
        waiting: dict[int, Finished] = {}
        head, input_error = 0, None
        for item in self._finished():
            if item.index < 0:
                input_error = item
                continue
            waiting[item.index] = item
            while head in waiting:
                yield waiting.pop(head)
                self._slots.release()
                head += 1
        if input_error is not None:
            yield input_error

    def stop(self) -> None:
        """Take no more jobs; wake every thread waiting for a slot so it can leave."""
        self._stopped.set()
        for _ in self._threads:
            self._slots.release()
