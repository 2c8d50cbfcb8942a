"""`lackjail bench`: every figure issue 10 names, with its anchors, measured in one run.

Benchmarks, not tests: they print numbers and assert nothing about speed. Each figure is a
plain number (or None with a reason in `unavailable`); `goals()` turns them into ratios
against the goals, where an anchor-relative goal uses the anchor measured in the same run.
The anchors (pydantic-monty, lackpy) come from the optional `bench` extra; when one is not
installed its figures say so and no ratio is made up.
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass

TRIVIAL = "x = len([1, 2, 3])\nx"
# Every measured run gets a text no run had before (its value is still 3): an agent's
# programs are new, and the controller keeps its verdicts on programs it has seen.
SHAPE = "x = len([1, 2, N])\nx"
_serial = itertools.count(1000)


def fresh_program() -> str:
    """The trivial program, a text never used before in this process (thread-safe)."""
    return SHAPE.replace("N", str(next(_serial)))


WORKERS = 2
SPACING_S = 0.01  # the pause before a "spares ready" run: long enough for a zygote to refill
SECTIONS = ("floor", "fresh", "reuse", "tools", "anchors", "batch")  # in the order they run
CALLS = "total = 0\nfor i in range(N):\n    total += TOOL\ntotal"

# Figure names, shared by the goals, the CLI and the tests.
FRESH_B2B = "fresh p50, back to back (us)"
FRESH_B2B_P99 = "fresh p99, back to back (us)"
FRESH_SPARE = "fresh p50, spares ready (us)"
FRESH_SPARE_P99 = "fresh p99, spares ready (us)"
REUSE = "reuse p50 (us)"
REUSE_P99 = "reuse p99 (us)"
REUSE_SAME = "reuse p50, the same program every run (us)"
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
HANDOFF = "pipe round trip between two processes on two CPUs (median us)"
VALIDATE = "validate trivial (median us)"
VALIDATE_IDLE = "validate trivial after 10 ms idle (median us)"


def pct(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def _timeit(fn, n):
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


# -- the floor: validation and an unconfined exec ----------------------------------------


def validate_figures(n=2000, idle_n=200):
    """Validation back to back, and after each of IDLE_N pauses as long as a spaced run's:
    the same work on caches gone cold (a run with its spares ready pays that everywhere)."""
    from lackjail import lang
    from lackjail.lang.bench_programs import TWENTY_LINES

    for program in (TRIVIAL, TWENTY_LINES):
        lang.validate(program)

    def after_idle():
        time.sleep(SPACING_S)
        t = time.perf_counter()
        lang.validate(TRIVIAL)
        return (time.perf_counter() - t) * 1e6

    return {
        VALIDATE: statistics.median(_timeit(lambda: lang.validate(TRIVIAL), n)),
        VALIDATE_IDLE: statistics.median(after_idle() for _ in range(idle_n)),
        "validate 20 lines (median us)": statistics.median(
            _timeit(lambda: lang.validate(TWENTY_LINES), n)
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

    return {"in-process compile+exec (median us)": statistics.median(_timeit(once, n))}


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


# -- jailed runs ---------------------------------------------------------------------------


def _run_latency(jail, n, gap_s=0.0, same=None):
    """N runs' latencies; each a new trivial program, or SAME every time."""
    samples = []
    for _ in range(n):
        if gap_s:
            time.sleep(gap_s)
        program = same or fresh_program()
        t = time.perf_counter()
        result = jail.run(program)
        samples.append((time.perf_counter() - t) * 1e6)
        _expect(result)
    return samples


def _expect(result, value=3):
    if result.status != "ok" or result.value != value:
        raise RuntimeError(f"benchmark run failed: {result.status} {result.errors}")


def _settle(jail, workers=WORKERS, timeout=10.0):
    """Wait until every jail has started and its zygote has all its spares forked (a zygote
    forks the first before its heap work and the others after it: a window that starts
    sooner would count that one-time work as the runs')."""
    wait_full = getattr(jail.pool, "wait_full", None)
    if wait_full is not None:
        wait_full(timeout)
    spares = jail.policy.pool.spares
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        zygotes = _zygotes()
        if len(zygotes) >= workers and all(len(z.children()) >= spares for z in zygotes):
            break
        time.sleep(0.01)
    time.sleep(SPACING_S)


def _zygotes():
    """The zygotes of this process's jails: the first Python process of each jail.

    Found from the process tree, not from the pool's internals: a zygote is a Python
    descendant whose parent is this process (the seccomp fallback) or nsjail.
    """
    import psutil

    me = psutil.Process()
    found = []
    for proc in me.children(recursive=True):
        try:
            if "python" not in proc.name():
                continue
            parent = proc.parent()
            if parent is not None and (parent.pid == me.pid or "python" not in parent.name()):
                found.append(proc)
        except psutil.NoSuchProcess:
            continue
    return found


def _stat_fields(pid):
    """Fields of /proc/PID/stat after the command name (field 3 is index 0)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[1].split()


@dataclass
class Usage:
    """CPU seconds and minor faults so far: this process (the controller), the zygotes, and
    all their children (reaped ones through the zygotes' c* fields, live ones read directly)."""

    zygotes: frozenset
    controller_cpu: float
    zygote_cpu: float
    child_cpu: float
    child_faults: int

    @classmethod
    def now(cls) -> Usage:
        import resource

        import psutil

        tick = os.sysconf("SC_CLK_TCK")
        own = resource.getrusage(resource.RUSAGE_SELF)
        zygote_cpu = child_cpu = 0.0
        child_faults = 0
        pids = set()
        for z in _zygotes():
            try:
                f = _stat_fields(z.pid)
                children = [_stat_fields(c.pid) for c in z.children()]
            except (OSError, psutil.NoSuchProcess):
                continue
            pids.add(z.pid)
            # fields 10 minflt, 11 cminflt, 14 utime, 15 stime, 16 cutime, 17 cstime
            zygote_cpu += (int(f[14 - 3]) + int(f[15 - 3])) / tick
            child_cpu += (int(f[16 - 3]) + int(f[17 - 3])) / tick
            child_faults += int(f[11 - 3])
            for c in children:
                child_cpu += (int(c[14 - 3]) + int(c[15 - 3])) / tick
                child_faults += int(c[10 - 3])
        return cls(
            frozenset(pids),
            own.ru_utime + own.ru_stime,
            zygote_cpu,
            child_cpu,
            child_faults,
        )


def _spent(label, before: Usage, after: Usage, runs: int, wall_s: float) -> Figures:
    """Per run, what a window of RUNS runs cost each process: where the time goes."""
    figures = Figures()
    names = [f"{label}: wall per run (us)"]
    names += [
        f"{label}: CPU per run, {part} (us)" for part in ("controller", "zygotes", "children")
    ]
    names.append(f"{label}: CPU ceiling on {os.cpu_count()} cores (runs/s)")
    if not before.zygotes or before.zygotes != after.zygotes:
        for name in names:
            figures.missing(name, "a jail was replaced during the runs (try a smaller -n)")
        return figures
    per = [
        wall_s,
        after.controller_cpu - before.controller_cpu,
        after.zygote_cpu - before.zygote_cpu,
        after.child_cpu - before.child_cpu,
    ]
    for name, value in zip(names, per):
        figures[name] = value / runs * 1e6
    cpu = sum(per[1:]) / runs
    figures[names[-1]] = os.cpu_count() / cpu if cpu > 0 else None
    if cpu <= 0:
        figures.missing(names[-1], "no CPU time was counted")
    return figures


def _cpu_ms(pid):
    """CPU time of process PID so far in ms, to the nanosecond (/proc/PID/schedstat)."""
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0]) / 1e6


def _spare_faults(zygotes):
    """Minor faults (minflt, field 10) of each child waiting for a run, read per child."""
    import psutil

    faults = []
    for z in zygotes:
        try:
            children = z.children()
        except psutil.NoSuchProcess:
            continue
        for child in children:
            try:
                faults.append(int(_stat_fields(child.pid)[10 - 3]))
            except (OSError, IndexError):
                pass
    return faults


def cold_start_ms(isolation=None, repeats=3):
    """Median time from `Jail(workers=2)` to the first result, each from nothing."""
    from lackjail.api import Jail

    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        with Jail(workers=WORKERS, isolation=isolation) as jail:
            _expect(jail.run(fresh_program()))
            samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), jail.isolation


def fresh_figures(n=500, isolation=None, callers=4):
    """Fresh runs through `Jail(workers=2).run`: back to back, spaced, throughput, faults."""
    from lackjail.api import Jail

    figures = Figures()
    figures[COLD], figures["isolation"] = cold_start_ms(isolation)
    with Jail(workers=WORKERS, isolation=isolation) as jail:
        _settle(jail)
        started = [_cpu_ms(z.pid) for z in _zygotes()]
        figures[ZYGOTE_START] = statistics.median(started) if started else None
        if not started:
            figures.missing(ZYGOTE_START, "no zygote found")
        _expect(jail.run(TRIVIAL))
        _settle(jail)
        zygotes = _zygotes()
        figures["zygote RSS (MB)"] = max((z.memory_info().rss / 2**20 for z in zygotes), default=0)
        ready = _spare_faults(zygotes)
        before, t = Usage.now(), time.perf_counter()
        back = _run_latency(jail, n)
        wall = time.perf_counter() - t
        _settle(jail)
        after = Usage.now()
        figures[FRESH_B2B] = pct(back, 0.5)
        figures[FRESH_B2B_P99] = pct(back, 0.99)
        spent = _spent("fresh back to back", before, after, n, wall)
        figures.update(spent)
        figures.unavailable.update(spent.unavailable)
        # each fresh run ends one child: the children's faults per run are faults per child
        if before.zygotes and before.zygotes == after.zygotes:
            figures[FAULTS] = (after.child_faults - before.child_faults) / n
        else:
            figures.missing(FAULTS, "a jail was replaced during the runs (try a smaller -n)")
        figures[FAULTS_READY] = statistics.median(ready) if ready else None
        if not ready:
            figures.missing(FAULTS_READY, "no spare child found under the zygotes")
        spaced = _run_latency(jail, n, SPACING_S)
        figures[FRESH_SPARE] = pct(spaced, 0.5)
        figures[FRESH_SPARE_P99] = pct(spaced, 0.99)
        figures[TPUT_FRESH] = throughput(jail, callers, total=n * 4)["runs/s"]
    return figures


def reuse_figures(n=500, isolation=None, callers=4):
    from lackjail.api import Jail

    figures = Figures()
    with Jail(workers=WORKERS, mode="reuse", isolation=isolation) as jail:
        _expect(jail.run(TRIVIAL))
        _settle(jail)
        before, t = Usage.now(), time.perf_counter()
        reuse = _run_latency(jail, n)
        wall = time.perf_counter() - t
        spent = _spent("reuse back to back", before, Usage.now(), n, wall)
        figures.update(spent)
        figures.unavailable.update(spent.unavailable)
        figures[REUSE] = pct(reuse, 0.5)
        figures[REUSE_P99] = pct(reuse, 0.99)
        # a program run again (Jail.map over parameters): its verdict and code are kept
        figures[REUSE_SAME] = pct(_run_latency(jail, n, same=TRIVIAL), 0.5)
        figures[TPUT_REUSE] = throughput(jail, callers, total=n * 4)["runs/s"]
    return figures


def throughput(jail, callers, total, program=None, expect=3):
    """TOTAL runs from CALLERS threads: runs/s and latency percentiles; checks every value.
    Without PROGRAM, every run gets a new trivial program."""
    latencies, failures = [], []
    lock = threading.Lock()
    counter = iter(range(total))

    def caller():
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            text = program or fresh_program()
            t = time.perf_counter()
            result = jail.run(text)
            dt = (time.perf_counter() - t) * 1e6
            with lock:
                latencies.append(dt)
                if result.status != "ok" or result.value != expect:
                    failures.append(result.status)

    threads = [threading.Thread(target=caller) for _ in range(callers)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t
    return {
        "runs/s": total / elapsed,
        "p50 (us)": pct(latencies, 0.5),
        "p99 (us)": pct(latencies, 0.99),
        "failures": len(failures),
    }


# -- tool calls ----------------------------------------------------------------------------


def echo(value: int) -> int:
    """Use: return VALUE unchanged (the benchmark's host tool: nothing but the crossing)."""
    return value


def _per_call(run, calls, repeats, tool, baseline):
    """Median cost of one call: a program making CALLS calls minus the same loop without them."""
    per_call = []
    for _ in range(repeats):
        t = time.perf_counter()
        run(CALLS.replace("N", str(calls)).replace("TOOL", tool))
        with_calls = time.perf_counter() - t
        t = time.perf_counter()
        run(CALLS.replace("N", str(calls)).replace("TOOL", baseline))
        without = time.perf_counter() - t
        per_call.append((with_calls - without) / calls * 1e6)
    return statistics.median(per_call)


def tool_call_figures(calls=1000, repeats=5):
    """Median cost per call of a host (mediated) tool and a jail-placed one, and what
    kernel-confined resolution adds to each host file access."""
    from lackjail.api import Jail
    from lackjail.kit import spec_from_function
    from lackjail.workspace.measure import resolution_cost_us

    host = spec_from_function(
        echo,
        name="echo",
        provider="python",
        provider_config={"module": "lackjail.bench", "function": "echo"},
    )
    total = calls * (calls - 1) // 2
    with Jail(kit={"echo": host, "word_count": "word_count"}, workers=1, mode="reuse") as jail:

        def run(expect):
            return lambda program: _expect(jail.run(program), expect)

        figures = {
            TOOL: _per_call(run(total), calls, repeats, "echo(i)", "abs(i)"),
            JAIL_TOOL: _per_call(run(calls), calls, repeats, "word_count('x')", "abs(1)"),
        }
    # openat2 beneath the workspace descriptor vs a plain open (issue 12's goal: < 15 us)
    figures[BENEATH] = resolution_cost_us()["added"]
    return figures


# -- anchors: the alternatives a user compares a jailed run with -----------------------------


def _version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def monty_figures(n=500, calls=1000, repeats=5):
    """pydantic-monty: a fresh session checked out of its pool per run, and its external call."""
    figures = Figures()
    version = _version("pydantic-monty")
    if version is None:
        figures.missing(MONTY, "not installed")
        figures.missing(MONTY_CALL, "not installed")
        return figures
    import pydantic_monty

    figures["monty version"] = version
    with pydantic_monty.Monty(min_processes=WORKERS, max_processes=WORKERS) as pool:

        def session_run():
            with pool.checkout() as session:
                if session.feed_run(fresh_program()) != 3:
                    raise RuntimeError("monty benchmark run failed")

        for _ in range(20):
            session_run()
        figures[MONTY] = pct(_timeit(session_run, n), 0.5)
        total = calls * (calls - 1) // 2
        budget = {"max_suspensions": 2 * (calls + 10) * repeats}  # per checkout, default 1000
        with pool.checkout(limits=budget) as session:

            def run(program):
                got = session.feed_run(program, external_lookup={"echo": echo})
                if got != total:
                    raise RuntimeError(f"monty tool benchmark returned {got!r}")

            figures[MONTY_CALL] = _per_call(run, calls, repeats, "echo(i)", "abs(i)")
    return figures


def lackpy_figures(n=500):
    """lackpy 0.15.1 in-process: `LackpyService.run_program` (validate + restricted exec)."""
    figures = Figures()
    version = _version("lackpy")
    if version is None:
        figures.missing(LACKPY, "not installed")
        return figures
    from pathlib import Path

    from lackpy.service import LackpyService

    figures["lackpy version"] = version
    with tempfile.TemporaryDirectory(prefix="lackjail-bench-") as workspace:
        service = LackpyService(workspace=Path(workspace))

        async def measure():
            samples = []
            for i in range(n + 20):
                program = fresh_program()
                t = time.perf_counter()
                result = await service.run_program(program, profile=[])
                if i >= 20:
                    samples.append((time.perf_counter() - t) * 1e6)
                if not result.success or result.output != 3:
                    raise RuntimeError(f"lackpy benchmark run failed: {result.error}")
            return samples

        import asyncio

        try:
            figures[LACKPY] = pct(asyncio.run(measure()), 0.5)
        finally:
            close = getattr(service, "close", None)
            if close is not None:
                close()
    return figures


# -- batch (issue 14): filled in as Jail.map and `lackjail batch` land ---------------------


def map_throughput(total, isolation=None) -> float:
    """Runs/s of `Jail(workers=2).map` over TOTAL trivial programs, at its default concurrency."""
    from lackjail.api import Jail

    with Jail(workers=WORKERS, isolation=isolation) as jail:
        _expect(jail.run(TRIVIAL))
        _settle(jail)
        t = time.perf_counter()
        count = 0
        for result in jail.map([fresh_program() for _ in range(total)]):
            _expect(result)
            count += 1
        elapsed = time.perf_counter() - t
    if count != total:
        raise RuntimeError(f"Jail.map yielded {count} results for {total} programs")
    return total / elapsed


def batch_figures(n=500, isolation=None):
    """Throughput of `Jail.map` and of `lackjail batch` (4 x N programs each)."""
    figures = Figures()
    figures[MAP] = map_throughput(n * 4, isolation)
    from lackjail.batch_bench import batch_runs_per_s  # the batch's owner measures it

    figures[BATCH] = batch_runs_per_s(n * 4, WORKERS, isolation)
    return figures


# -- goals ---------------------------------------------------------------------------------


@dataclass
class Goal:
    """One goal of issue 10, judged on figures from the same run."""

    figure: str
    measured: float | None
    unit: str
    goal: str
    target: float | None  # the goal as an absolute number in this run, None when unknown
    at_least: bool = False  # throughput goals are floors; the rest are ceilings
    why: str = ""
    where: str = ""  # where the time goes, from this run's figures

    @property
    def ratio(self) -> float | None:
        """measured / goal: a ceiling is met at <= 1.0, a floor at >= 1.0."""
        if self.measured is None or not self.target:
            return None
        return self.measured / self.target

    @property
    def met(self) -> bool | None:
        if self.ratio is None:
            return None
        return self.ratio >= 1.0 if self.at_least else self.ratio <= 1.0

    def to_dict(self) -> dict:
        return {
            "figure": self.figure,
            "measured": self.measured,
            "unit": self.unit,
            "goal": self.goal,
            "target": self.target,
            "ratio": self.ratio,
            "met": self.met,
            **({"why": self.why} if self.why else {}),
            **({"where": self.where} if self.where else {}),
        }


def goals(f: Figures) -> list[Goal]:
    """Issue 10's goals (and issue 12's for confined resolution) as ratios of figures
    measured in this run."""

    def scaled(name, factor):
        return f[name] * factor if f.get(name) is not None else None

    def anchor_why(name):
        return f"{name}: {f.unavailable[name]}" if name in f.unavailable else ""

    out = [
        Goal(
            "fresh p50 back to back vs monty's pooled fresh session",
            f.get(FRESH_B2B),
            "us",
            "<= 1.0x monty",
            scaled(MONTY, 1.0),
            why=anchor_why(MONTY),
        ),
        Goal(
            "fresh p50 back to back vs lackpy in-process",
            f.get(FRESH_B2B),
            "us",
            "<= 0.5x lackpy",
            scaled(LACKPY, 0.5),
            why=anchor_why(LACKPY),
        ),
        Goal("fresh p50, spares ready", f.get(FRESH_SPARE), "us", "<= 250 us", 250.0),
        Goal(
            "fresh p99, spares ready",
            f.get(FRESH_SPARE_P99),
            "us",
            "<= 2x p50",
            scaled(FRESH_SPARE, 2.0),
        ),
        Goal("reuse p50", f.get(REUSE), "us", "<= 100 us", 100.0),
        Goal(
            "host tool call vs monty's external call",
            f.get(TOOL),
            "us",
            "<= 0.35x monty",
            scaled(MONTY_CALL, 0.35),
            why=anchor_why(MONTY_CALL),
        ),
        Goal("fresh throughput, 2 workers", f.get(TPUT_FRESH), "runs/s", ">= 2,000", 2000.0, True),
        Goal(
            "reuse throughput, 2 workers", f.get(TPUT_REUSE), "runs/s", ">= 10,000", 10000.0, True
        ),
        Goal(
            "Jail.map throughput vs fresh throughput",
            f.get(MAP_LOAD) or f.get(MAP),
            "runs/s",
            ">= 0.9x fresh throughput",
            scaled(TPUT_FRESH, 0.9),
            True,
            why=f.unavailable.get(MAP, ""),
        ),
        Goal("cold start to first result", f.get(COLD), "ms", "<= 40 ms", 40.0),
        Goal("confined resolution per host file access", f.get(BENEATH), "us", "< 15 us", 15.0),
    ]
    where = _where(f)
    for goal in out:
        goal.where = where.get(goal.figure, "")
    return out


def _where(f: Figures) -> dict[str, str]:
    """Goal -> where its time goes, worded from this run's figures (a goal whose figures
    are missing gets nothing): what the next step has to cut."""
    cpus = os.cpu_count() or 1
    out = {}

    def cpu(label):
        parts = [
            f.get(f"{label}: CPU per run, {p} (us)") for p in ("controller", "zygotes", "children")
        ]
        return None if None in parts else parts

    trip = f.get(HANDOFF)
    fresh, reuse = cpu("fresh back to back"), cpu("reuse back to back")
    if fresh:
        text = (
            f"CPU per fresh run: {fresh[0]:,.0f} us in the controller, {fresh[1]:,.0f} us in "
            f"the zygotes (fork, reaping), {fresh[2]:,.0f} us in the child (fork return, "
            "warm-up, confinement, the run, exit)"
        )
        out["fresh p50 back to back vs monty's pooled fresh session"] = text
        out["fresh p50 back to back vs lackpy in-process"] = text
        total = sum(fresh)
        out["fresh throughput, 2 workers"] = (
            f"{total:,.0f} us of CPU per fresh run on {cpus} cores: a ceiling of "
            f"{cpus * 1e6 / total:,.0f} runs/s before any waiting; 2,000 runs/s needs at most "
            f"{cpus * 1e6 / 2000:,.0f} us"
        )
    if trip is not None:
        warm, idle = f.get(VALIDATE), f.get(VALIDATE_IDLE)
        out["fresh p50, spares ready"] = (
            "a run with its child waiting is a request and a result between two processes "
            f"(a pipe round trip across CPUs: {trip:,.0f} us here)"
            + (f" and {fresh[0]:,.0f} us of the controller's CPU" if fresh else "")
            + "; the rest is waking the child and the caller, and the child's run"
            + (
                f"; all of it on cold caches after the pause: validating the trivial program "
                f"takes {idle:,.0f} us after {SPACING_S * 1000:g} ms idle against "
                f"{warm:,.0f} us back to back ({idle / warm:,.1f}x)"
                if warm and idle is not None
                else ""
            )
        )
        out["host tool call vs monty's external call"] = (
            "a host tool call is a round trip between the child and the controller (a pipe "
            f"round trip across CPUs: {trip:,.0f} us here) plus the kit's checks and a hop "
            "to the thread that runs the tool under its timeout (so a hung tool cannot hold "
            "the run); monty calls out within its own process"
        )
    if reuse and trip is not None:
        out["reuse p50"] = (
            f"CPU per reuse run: {reuse[0]:,.0f} us in the controller and {reuse[2]:,.0f} us "
            f"in the child, one after the other ({reuse[0] + reuse[2]:,.0f} us), and a "
            f"request and a result across CPUs (a pipe round trip: {trip:,.0f} us here)"
        )
    if reuse:
        total = sum(reuse)
        out["reuse throughput, 2 workers"] = (
            f"{total:,.0f} us of CPU per reuse run on {cpus} cores: a ceiling of "
            f"{cpus * 1e6 / total:,.0f} runs/s; the controller's {reuse[0]:,.0f} us of it are "
            "mostly Python, which runs one thread at a time (about "
            f"{1e6 / reuse[0]:,.0f} runs/s at most from one process); the rest is the "
            "callers and the jails waiting for each other's wake-ups"
        )
    if f.get(ZYGOTE_START) is not None:
        out["cold start to first result"] = (
            f"the zygote's start with its first spares is {f[ZYGOTE_START]:,.1f} ms of CPU "
            "(interpreter, imports, warm-up, forks); nsjail's own start and the first run "
            "are the rest"
        )
    return out


def measure(n=500, isolation=None, sections=None, on_section=None) -> Figures:
    """Run the chosen sections in order; ON_SECTION(title, part) sees each as it ends."""
    steps = {
        "floor": (
            "the floor: validation and an unconfined exec",
            lambda: _merge(validate_figures(), exec_baseline(), handoff_us()),
        ),
        "fresh": ("fresh runs, Jail(workers=2)", lambda: fresh_figures(n, isolation)),
        "reuse": ("reuse runs, Jail(workers=2, mode='reuse')", lambda: reuse_figures(n, isolation)),
        "tools": ("tool calls", tool_call_figures),
        "anchors": (
            "anchors, measured in this run",
            lambda: _merge(monty_figures(n), lackpy_figures(n)),
        ),
        "batch": ("batch (issue 14)", lambda: batch_figures(n, isolation)),
    }
    figures = Figures()
    for name in sections or SECTIONS:
        title, step = steps[name]
        part = step()
        figures.update(part)
        figures.unavailable.update(getattr(part, "unavailable", {}))
        if on_section:
            on_section(title, part)
    return figures


def _merge(*parts) -> Figures:
    merged = Figures()
    for part in parts:
        merged.update(part)
        merged.unavailable.update(getattr(part, "unavailable", {}))
    return merged


def load_figures(total=10_000, callers=32, workers=2, mode="fresh"):
    """Issue 7's load: TOTAL programs from CALLERS concurrent callers through the library."""
    from lackjail.api import Jail

    with Jail(workers=workers, mode=mode) as jail:
        _settle(jail, workers)
        out = throughput(jail, callers, total)
    return {
        f"load {total} runs / {callers} callers / {workers} workers ({mode}) {k}": v
        for k, v in out.items()
    }
