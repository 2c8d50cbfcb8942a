"""`Jail.map` and `Jail.as_completed` over shards: runs sent ahead, answers read as they come.

The same contract as `lackjail.fanout` (lazy input, at most WINDOW jobs taken and
not yet handed over, input order or completion order, an input error yielded
last with index -1) without a thread per run in flight: this generator sends
up to CONCURRENCY runs to the shards and the shards' readers hand each answer
back, so the caller's process does no more per run than send one frame and
read one.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterable, Iterator

from lackjail.errors import ArgumentError
from lackjail.fanout import Finished


def fan_out(
    submit: Callable,
    jobs: Iterable,
    concurrency: int,
    window: int | None = None,
    ordered: bool = False,
    flush: Callable = lambda: None,
) -> Iterator[Finished]:
    """SUBMIT(job, on_done) sends one job (or holds it until FLUSH()) and returns at once;
    ON_DONE(task) is called, on another thread, with its finished Task. Yields each job
    once, as a Finished. Every answer that has come is handed over before the next jobs
    are sent, and those go out together: under load, one write per shard for many runs."""
    if concurrency < 1:
        raise ArgumentError(f"concurrency must be at least 1, not {concurrency}")
    window = max(window or 4 * concurrency, concurrency)
    answers: queue.SimpleQueue = queue.SimpleQueue()
    jobs = iter(jobs)
    in_flight = pending = taken = head = 0  # pending: taken and not yet yielded
    waiting: dict[int, Finished] = {}
    input_error = None
    exhausted = False
    while True:
        while not exhausted and in_flight < concurrency and pending < window:
            try:
                job = next(jobs)
            except StopIteration:
                exhausted = True
                break
            except Exception as exc:  # the caller's input failed: say so, after the rest
                exhausted, input_error = True, Finished(-1, None, error=exc)
                break
            index, taken = taken, taken + 1
            in_flight, pending = in_flight + 1, pending + 1

            def on_done(task, index=index, job=job):
                answers.put(Finished(index, job, value=task.value, error=task.error))

            try:
                submit(job, on_done)
            except Exception as exc:
                answers.put(Finished(index, job, error=exc))
        flush()
        if not in_flight:
            break
        came = [answers.get()]
        while not answers.empty():
            came.append(answers.get())
        in_flight -= len(came)
        for item in came:
            if not ordered:
                pending -= 1
                yield item
                continue
            waiting[item.index] = item
            while head in waiting:
                pending -= 1
                head += 1
                yield waiting.pop(head - 1)
    if input_error is not None:
        yield input_error
