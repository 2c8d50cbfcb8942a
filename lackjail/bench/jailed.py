"""Jailed runs: fresh and reuse latency, throughput, cold start, page faults, and where
the CPU goes (controller, zygotes, children), read from the process tree."""

from __future__ import annotations

import os
import statistics
import threading
import time
from dataclasses import dataclass

from lackjail.bench.figures import (
    COLD,
    FAULTS,
    FAULTS_READY,
    FRESH_B2B,
    FRESH_B2B_P99,
    FRESH_SPARE,
    FRESH_SPARE_P99,
    LANDLOCK_COLD,
    LANDLOCK_FRESH,
    LANDLOCK_REUSE,
    LANDLOCK_TPUT_FRESH,
    LANDLOCK_TPUT_REUSE,
    REUSE,
    REUSE_P99,
    REUSE_SAME,
    SESSION,
    SPACING_S,
    TPUT_FRESH,
    TPUT_REUSE,
    WORKERS,
    ZYGOTE_START,
    Figures,
    pct,
)
from lackjail.bench.programs import TRIVIAL, fresh_program

SHARD_MODULE = "lackjail.shards.shard"  # in a shard's command line


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
        ensure_ok(result)
    return samples


def ensure_ok(result, value=3):
    if result.status != "ok" or result.value != value:
        raise RuntimeError(f"benchmark run failed: {result.status} {result.errors}")


def settle(jail, workers=WORKERS, timeout=10.0):
    """Wait until every jail has started and its zygote has all its spares forked (a zygote
    forks the first before its heap work and the others after it: a window that starts
    sooner would count that one-time work as the runs')."""
    jail.wait_ready(timeout)
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
    descendant whose parent is a controller (this process, or a shard of a sharded Jail:
    the seccomp fallback) or nsjail.
    """
    import psutil

    me = psutil.Process()
    controllers, found = {me.pid}, []
    for proc in me.children(recursive=True):  # parents come before their children
        try:
            if "python" not in proc.name():
                continue
            parent = proc.parent()
            if parent is None or not (parent.pid in controllers or "python" not in parent.name()):
                continue
            if parent.pid == me.pid and SHARD_MODULE in " ".join(proc.cmdline()):
                controllers.add(proc.pid)
            else:
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
    figures[names[-1]] = (os.cpu_count() or 1) / cpu if cpu > 0 else None
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
            ensure_ok(jail.run(fresh_program()))
            samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), jail.isolation


def fresh_figures(n=500, isolation=None, callers=4):
    """Fresh runs through `Jail(workers=2).run`: back to back, spaced, throughput, faults."""
    from lackjail.api import Jail

    figures = Figures()
    figures[COLD], figures["isolation"] = cold_start_ms(isolation)
    with Jail(workers=WORKERS, isolation=isolation) as jail:
        settle(jail)
        started = [_cpu_ms(z.pid) for z in _zygotes()]
        figures[ZYGOTE_START] = statistics.median(started) if started else None
        if not started:
            figures.missing(ZYGOTE_START, "no zygote found")
        ensure_ok(jail.run(TRIVIAL))
        settle(jail)
        zygotes = _zygotes()
        figures["zygote RSS (MB)"] = max((z.memory_info().rss / 2**20 for z in zygotes), default=0)
        ready = _spare_faults(zygotes)
        before, t = Usage.now(), time.perf_counter()
        back = _run_latency(jail, n)
        wall = time.perf_counter() - t
        settle(jail)
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


def reuse_figures(n=500, isolation=None, callers=WORKERS):
    """Reuse runs: latency back to back, a session's, and throughput from one caller per
    jail (the persistent-worker floor it is judged against has one client per worker; more
    callers only contend for the controller's interpreter lock)."""
    from lackjail.api import Jail

    figures = Figures()
    with Jail(workers=WORKERS, mode="reuse", isolation=isolation) as jail:
        ensure_ok(jail.run(TRIVIAL))
        settle(jail)
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
        # a session's runs (each a new program, in the state the earlier ones left), measured
        # beside the reuse runs: a session's child is a reused child of a jail of its own
        with jail.session() as session:
            ensure_ok(session.run(TRIVIAL))
            figures[SESSION] = pct(_run_latency(session, n), 0.5)
        figures[TPUT_REUSE] = throughput(jail, callers, total=n * 4)["runs/s"]
    return figures


def landlock_figures(n=500, callers=4):
    """Fresh and reuse runs at the landlock level, to set beside nsjail's (a host without
    Landlock says so)."""
    from lackjail.api import Jail
    from lackjail.pool.isolation import IsolationError

    figures = Figures()
    names = (
        LANDLOCK_COLD,
        LANDLOCK_FRESH,
        LANDLOCK_TPUT_FRESH,
        LANDLOCK_REUSE,
        LANDLOCK_TPUT_REUSE,
    )
    try:
        figures[LANDLOCK_COLD], _ = cold_start_ms("landlock")
    except IsolationError as exc:
        for name in names:
            figures.missing(name, str(exc))
        return figures
    for mode, b2b, tput in (
        ("fresh", LANDLOCK_FRESH, LANDLOCK_TPUT_FRESH),
        ("reuse", LANDLOCK_REUSE, LANDLOCK_TPUT_REUSE),
    ):
        with Jail(workers=WORKERS, mode=mode, isolation="landlock") as jail:
            ensure_ok(jail.run(TRIVIAL))
            settle(jail)
            figures[b2b] = pct(_run_latency(jail, n), 0.5)
            figures[tput] = throughput(jail, callers, total=n * 4)["runs/s"]
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


def map_throughput(total, isolation=None) -> float:
    """Runs/s of `Jail(workers=2).map` over TOTAL trivial programs, at its default concurrency."""
    from lackjail.api import Jail

    with Jail(workers=WORKERS, isolation=isolation) as jail:
        ensure_ok(jail.run(TRIVIAL))
        settle(jail)
        t = time.perf_counter()
        count = 0
        for result in jail.map([fresh_program() for _ in range(total)]):
            ensure_ok(result)
            count += 1
        elapsed = time.perf_counter() - t
    if count != total:
        raise RuntimeError(f"Jail.map yielded {count} results for {total} programs")
    return total / elapsed


def load_figures(total=10_000, callers=32, workers=2, mode="fresh"):
    """The load: TOTAL programs from CALLERS concurrent callers through the library."""
    from lackjail.api import Jail

    with Jail(workers=workers, mode=mode) as jail:
        settle(jail, workers)
        out = throughput(jail, callers, total)
    return {
        f"load {total} runs / {callers} callers / {workers} workers ({mode}) {k}": v
        for k, v in out.items()
    }
