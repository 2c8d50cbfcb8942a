"""The floor: validation, an unconfined exec, and a pipe round trip between two processes."""

from __future__ import annotations

import os
import statistics
import time

from lackjail.bench.figures import (
    CHECK_NEW,
    HANDOFF,
    SPACING_S,
    VALIDATE,
    VALIDATE_IDLE,
    VALIDATE_NEW,
    Figures,
    timeit,
)
from lackjail.bench.programs import TRIVIAL, TWENTY_LINES, fresh_program


def validate_figures(n=2000, idle_n=200):
    """Validation back to back, and after each of IDLE_N pauses as long as a spaced run's:
    the same work on caches gone cold (a run with its spares ready pays that everywhere)."""
    from lackjail import lang

    for program in (TRIVIAL, TWENTY_LINES):
        lang.validate(program)

    def after_idle():
        time.sleep(SPACING_S)
        t = time.perf_counter()
        lang.validate(TRIVIAL)
        return (time.perf_counter() - t) * 1e6

    import lackjail

    lackjail.check(TRIVIAL)  # its Checker built once, as a caller's first check builds it
    new = iter([fresh_program() for _ in range(2 * n)])
    return {
        VALIDATE: statistics.median(timeit(lambda: lang.validate(TRIVIAL), n)),
        # a new text each call (the Checker keeps its valid verdicts): the public call's own
        # cost over the validator's, both on programs neither has seen
        VALIDATE_NEW: statistics.median(timeit(lambda: lang.validate(next(new)), n)),
        CHECK_NEW: statistics.median(timeit(lambda: lackjail.check(next(new)), n)),
        VALIDATE_IDLE: statistics.median(after_idle() for _ in range(idle_n)),
        "validate 20 lines (median us)": statistics.median(
            timeit(lambda: lang.validate(TWENTY_LINES), n)
        ),
    }


def exec_baseline(n=2000):
    """In-process compile + exec of the trivial program, no isolation (the floor)."""
    import builtins

    from lackjail import lang

    names = {k: getattr(builtins, k) for k in lang.ALLOWED_BUILTINS if hasattr(builtins, k)}

    def once():
        ns = dict(names)
        ns["__builtins__"] = {}
        exec(compile(TRIVIAL, "<lackpy>", "exec"), ns)

    return {"in-process compile+exec (median us)": statistics.median(timeit(once, n))}


def handoff_us(n=2000):
    """A byte to a forked process and back over two pipes, each side asleep in read until
    woken, the two pinned to different CPUs (the costlier case: on one CPU the same trip is
    a few us): the wake-ups a run (request and result) or a host tool call (call and answer)
    may pay on this machine, measured in this run."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        figures = Figures()
        figures.missing(HANDOFF, "this process may run on one CPU only")
        return figures
    to_r, to_w = os.pipe()
    back_r, back_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the echo: no Python work between the read and the write
        os.sched_setaffinity(0, {cpus[1]})
        os.close(to_w)
        os.close(back_r)
        while os.read(to_r, 1):
            os.write(back_w, b"x")
        os._exit(0)
    os.close(to_r)
    os.close(back_w)
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpus[0]})
    try:
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            os.write(to_w, b"x")
            os.read(back_r, 1)
            samples.append((time.perf_counter() - t) * 1e6)
    finally:
        os.sched_setaffinity(0, own)
        os.close(to_w)
        os.close(back_r)
        os.waitpid(pid, 0)
    return {HANDOFF: statistics.median(samples)}
