"""`lackjail bench`: the figures the issues name, measured side by side in one run.

Benchmarks, not tests: they print numbers and assert nothing about speed.
"""

from __future__ import annotations

import statistics
import threading
import time

TRIVIAL = "x = len([1, 2, 3])\nx"


def _pct(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def _timeit(fn, n):
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e6)
    return samples


def validate_figures(n=2000):
    from lackjail import lang
    from lackjail.lang.bench_programs import TRIVIAL as T
    from lackjail.lang.bench_programs import TWENTY_LINES

    for program in (T, TWENTY_LINES):
        lang.validate(program)
    return {
        "validate trivial (median us)": statistics.median(_timeit(lambda: lang.validate(T), n)),
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


def _run_latency(jail, n, gap_s):
    samples = []
    for _ in range(n):
        if gap_s:
            time.sleep(gap_s)
        t = time.perf_counter()
        result = jail.run(TRIVIAL)
        samples.append((time.perf_counter() - t) * 1e6)
        if result.status != "ok" or result.value != 3:
            raise RuntimeError(f"benchmark run failed: {result.status} {result.errors}")
    return samples


def jail_figures(n=300, isolation=None):
    from lackjail.api import Jail

    figures = {}
    t = time.perf_counter()
    with Jail(workers=1, isolation=isolation) as jail:
        jail.run(TRIVIAL)
        figures["cold start to first result (ms)"] = (time.perf_counter() - t) * 1000
        figures["isolation"] = jail.isolation
        figures["zygote RSS (MB)"] = _zygote_rss_mb(jail)
        fresh = _run_latency(jail, n, 0.01)
        figures["fresh p50 (us, spare ready)"] = _pct(fresh, 0.5)
        figures["fresh p99 (us, spare ready)"] = _pct(fresh, 0.99)
        back = _run_latency(jail, n, 0)
        figures["fresh back-to-back p50 (us)"] = _pct(back, 0.5)
    with Jail(workers=1, mode="reuse", isolation=isolation) as jail:
        jail.run(TRIVIAL)
        reuse = _run_latency(jail, n, 0)
        figures["reuse p50 (us)"] = _pct(reuse, 0.5)
        figures["reuse p99 (us)"] = _pct(reuse, 0.99)
    for mode in ("fresh", "reuse"):
        with Jail(workers=2, mode=mode, isolation=isolation) as jail:
            jail.pool.wait_full()
            figures[f"throughput, 2 workers, {mode} (runs/s)"] = _throughput(
                jail, callers=4, total=n * 4
            )["runs/s"]
    return figures


def _zygote_rss_mb(jail):
    import psutil

    rss = []
    for pid in jail.pool.pids():
        try:
            procs = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        # the jail's first process is the zygote: the oldest python under nsjail
        pythons = sorted((p for p in procs if "python" in p.name()), key=lambda p: p.create_time())
        if pythons:
            rss.append(pythons[0].memory_info().rss / 2**20)
    return max(rss) if rss else None


def _throughput(jail, callers, total, program=TRIVIAL, expect=3):
    """TOTAL runs from CALLERS threads: runs/s and latency percentiles; checks every value."""
    latencies, failures = [], []
    lock = threading.Lock()
    counter = iter(range(total))

    def caller():
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            t = time.perf_counter()
            result = jail.run(program)
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
        "p50 (us)": _pct(latencies, 0.5),
        "p99 (us)": _pct(latencies, 0.99),
        "failures": len(failures),
    }


def echo(value: int) -> int:
    """Use: return VALUE unchanged (the benchmark's host tool: nothing but the crossing)."""
    return value


CALLS = "total = 0\nfor i in range(N):\n    total += TOOL(i)\ntotal"


def tool_call_figures(calls=1000, repeats=5):
    """Median cost per call of a program calling a tool CALLS times: host (mediated) vs jail-placed."""
    from lackjail.api import Jail
    from lackjail.kit import spec_from_function

    host = spec_from_function(
        echo,
        name="echo",
        provider="python",
        provider_config={"module": "lackjail.bench", "function": "echo"},
    )
    figures = {}
    with Jail(kit={"echo": host, "word_count": "word_count"}, workers=1, mode="reuse") as jail:
        for label, tool, expect in (
            ("host tool", "echo", calls * (calls - 1) // 2),
            ("jail-placed tool", "word_count", calls),
        ):
            program = CALLS.replace("N", str(calls)).replace(
                "TOOL(i)", f"{tool}(i)" if tool == "echo" else f"{tool}('x')"
            )
            baseline = CALLS.replace("N", str(calls)).replace(
                "TOOL(i)", "abs(1)" if tool != "echo" else "abs(i)"
            )
            per_call = []
            for _ in range(repeats):
                t = time.perf_counter()
                result = jail.run(program)
                with_calls = time.perf_counter() - t
                if result.status != "ok" or result.value != expect:
                    raise RuntimeError(f"tool benchmark failed: {result.status} {result.errors}")
                t = time.perf_counter()
                jail.run(baseline)
                without = time.perf_counter() - t
                per_call.append((with_calls - without) / calls * 1e6)
            figures[f"{label}: cost per call (median us)"] = statistics.median(per_call)
    return figures


def load_figures(total=10_000, callers=32, workers=2, mode="fresh"):
    """Issue 7's load: TOTAL programs from CALLERS concurrent callers through the library."""
    from lackjail.api import Jail

    with Jail(workers=workers, mode=mode) as jail:
        jail.pool.wait_full()
        out = _throughput(jail, callers, total)
    return {
        f"load {total} runs / {callers} callers / {workers} workers ({mode}) {k}": v
        for k, v in out.items()
    }
