"""Figures: a name -> number map whose missing numbers say why, and the names every
section, the goals, the CLI and the tests share."""

from __future__ import annotations

import time

WORKERS = 2
SPACING_S = 0.01  # the pause before a "spares ready" run: long enough for a zygote to refill

# Figure names, shared by the goals, the CLI and the tests.
FRESH_B2B = "fresh p50, back to back (us)"
FRESH_B2B_P99 = "fresh p99, back to back (us)"
FRESH_SPARE = "fresh p50, spares ready (us)"
FRESH_SPARE_P99 = "fresh p99, spares ready (us)"
REUSE = "reuse p50 (us)"
REUSE_P99 = "reuse p99 (us)"
REUSE_SAME = "reuse p50, the same program every run (us)"
SESSION = "session run p50 (us)"
TOOL = "host tool call (median us per call)"
JAIL_TOOL = "jail-placed tool call (median us per call)"
BENEATH = "openat2 resolution, added per file access (median us)"
TPUT_FRESH = "fresh throughput, 2 workers (runs/s)"
TPUT_REUSE = "reuse throughput, 2 workers (runs/s)"
COLD = "cold start to first result (ms)"
FAULTS = "child page faults, whole life (minflt per child)"
FAULTS_READY = "child page faults when ready (minflt per spare)"
ZYGOTE_START = "zygote CPU to start, with its first spares (ms)"
MONTY = "monty pooled fresh session p50 (us)"
MONTY_CALL = "monty external call (median us per call)"
LACKPY = "lackpy in-process run p50 (us)"
MAP = "Jail.map throughput, 2 workers (runs/s)"
MAP_LOAD = "Jail.map throughput, 10,000 programs, 2 workers (runs/s)"  # with --load
BATCH = "lackjail batch throughput, 2 workers (runs/s)"
# the crossing floor (crossing.py): one round trip between two processes, by how each waits
CROSS_PIPE_SLEEP = "crossing: pipe, both asleep in read (median us per round trip)"
CROSS_PIPE_SPIN = "crossing: pipe, both spinning on a non-blocking read (median us per round trip)"
CROSS_FRAMED = (
    "crossing: a call frame and its return over a pipe, encoded and decoded, each side "
    "waiting as a call does (median us per round trip)"
)
CROSS_EVENTFD = "crossing: eventfd, both asleep (median us per round trip)"
CROSS_SHM_SPIN = "crossing: shared-memory flag, both spinning (median us per round trip)"
HANDOFF = "pipe round trip between two processes on two CPUs (median us)"
VALIDATE = "validate trivial (median us)"
VALIDATE_IDLE = "validate trivial after 10 ms idle (median us)"
VALIDATE_NEW = "validate, a new program each call (median us)"
CHECK_NEW = "lackjail.check, a new program each call (median us)"
# the lean floor (lean.py): the simplest jailed designs, measured in the same run
LEAN_FORK_RPS = "lean floor: fork per request, 2 workers (runs/s)"
LEAN_WARM_CHILD = "lean floor: forked-ahead warm child p50, spares ready (us)"
LEAN_REUSE_RPS = "lean floor: persistent jailed worker, 2 clients (runs/s)"
LEAN_REUSE_US = "lean floor: persistent jailed worker p50 (us)"
# the command line, end to end (startup.py): as a user meets it (the user's server answers),
# and in its own process (no server: a first command, or LACKJAIL_SERVER=0)
CLI_RUN = "lackjail run of a trivial program, end to end, server running (ms)"
CLI_RUN_ALONE = "lackjail run of a trivial program, in its own process, no server (ms)"
BARE_START = "bare interpreter start, python -I -S -c pass (ms)"
# the workers sweep (--workers): throughput by worker count
SWEEP_FRESH = "workers={}: fresh throughput, Jail.map (runs/s)"
SWEEP_REUSE = "workers={}: reuse throughput (runs/s)"
# the same figures at the landlock level (no namespaces), beside nsjail's
LANDLOCK_COLD = "landlock: cold start to first result (ms)"
LANDLOCK_FRESH = "landlock: fresh p50, back to back (us)"
LANDLOCK_TPUT_FRESH = "landlock: fresh throughput, 2 workers (runs/s)"
LANDLOCK_REUSE = "landlock: reuse p50 (us)"
LANDLOCK_TPUT_REUSE = "landlock: reuse throughput, 2 workers (runs/s)"
# fresh runs by language level (levels.py): each level's figure, then python's over extended's
LEVEL_FRESH = "{level} level: fresh p50, back to back (us)"
LEVEL_SPARE = "{level} level: fresh p50, spares ready (us)"
LEVEL_CPU = "{level} level: CPU per fresh run, {part} (us)"
LEVEL_RSS = "{level} level: zygote RSS (MB)"
LEVEL_FAULTS_READY = "{level} level: child page faults when ready (minflt per spare)"
LEVEL_FAULTS = "{level} level: child page faults, whole life (minflt per child)"
LEVEL_RATIO = "python / extended: {} (x)"
# the python level's zygote loads a module when a program first imports it: a program that
# does, after that first run (the same figures, beside extended's trivial program)
LEVEL_IMPORT = "python level, a program importing json: {}"


def pct(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def timeit(fn, n):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e6)
    return samples


class Figures(dict):
    """Figure name -> number; `unavailable` says why a figure is None."""

    def __init__(self):
        super().__init__()
        self.unavailable: dict[str, str] = {}

    def missing(self, name: str, why: str) -> None:
        self[name] = None
        self.unavailable[name] = why


def merge(*parts) -> Figures:
    merged = Figures()
    for part in parts:
        merged.update(part)
        merged.unavailable.update(getattr(part, "unavailable", {}))
    return merged
