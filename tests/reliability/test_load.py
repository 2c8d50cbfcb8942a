"""Load through the library API: many concurrent callers, every result checked against its own
program.

The full load (10,000 programs from 32 callers) is `lackjail bench --load`; CI runs a
smaller load in both modes and checks the benchmark's own load path end to end.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from procs import descendants, describe, wait_no_leftovers

from lackjail.api import Jail

pytestmark = pytest.mark.nsjail

CALLERS = 32
TOTAL = int(os.environ.get("LACKJAIL_LOAD_RUNS", "1024"))  # 32 callers x 32 programs


def _pct(samples, p):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


@pytest.mark.parametrize("mode", ["reuse", "fresh"])
def test_concurrent_callers_each_get_their_own_results(require_nsjail, mode, record_property):
    before = descendants()
    per_caller = TOTAL // CALLERS
    results: dict[int, list] = {c: [] for c in range(CALLERS)}
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list = []
    with Jail(workers=2, mode=mode) as jail:
        assert jail.pool.wait_full(30)
        gate = threading.Barrier(CALLERS)

        def caller(c: int):
            gate.wait()
            for k in range(per_caller):
                i = c * per_caller + k  # a distinct program per call: its value names it
                src = f"n = {i}\nprint(n)\nn * 7" if k % 10 == 0 else f"{i} * 7"
                t = time.perf_counter()
                try:
                    r = jail.run(src)
                except Exception as exc:
                    with lock:
                        errors.append((c, k, repr(exc)))
                    continue
                dt = time.perf_counter() - t
                with lock:
                    latencies.append(dt)
                results[c].append((i, r))

        threads = [threading.Thread(target=caller, args=(c,)) for c in range(CALLERS)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        elapsed = time.perf_counter() - started
        assert not any(t.is_alive() for t in threads), "a caller is still waiting"
        assert errors == [], errors[:5]
        done = 0
        for c, answers in results.items():
            assert [i for i, _ in answers] == [c * per_caller + k for k in range(per_caller)]
            for i, r in answers:
                assert (r.status, r.value, r.mode) == ("ok", i * 7, mode), (c, i, r)
                assert r.output == (f"{i}\n" if (i - c * per_caller) % 10 == 0 else "")
                done += 1
        assert done == per_caller * CALLERS
        assert jail.pool.wait_full(15) and len(jail.pool.pids()) == 2
    figures = {
        "runs": done,
        "runs/s": round(done / elapsed, 1),
        "p50 ms": round(_pct(latencies, 0.5) * 1000, 2),
        "p99 ms": round(_pct(latencies, 0.99) * 1000, 2),
    }
    print(f"\nload {mode}: {figures}")
    for key, value in figures.items():
        record_property(f"{mode} {key}", value)
    left = wait_no_leftovers(before)
    assert not left, describe(left)


def test_the_benchmark_load_path_checks_every_value(require_nsjail):
    """`lackjail bench --load` (bench.load_figures) at a small size: it reports throughput and
    percentiles and counts no failures."""
    from lackjail.bench.jailed import load_figures

    figures = load_figures(total=200, callers=CALLERS, workers=2, mode="reuse")
    by_suffix = {key.rsplit(") ", 1)[-1]: value for key, value in figures.items()}
    assert set(by_suffix) == {"runs/s", "p50 (us)", "p99 (us)", "failures"}, figures
    assert by_suffix["failures"] == 0
    assert by_suffix["runs/s"] > 0 and 0 < by_suffix["p50 (us)"] <= by_suffix["p99 (us)"]
