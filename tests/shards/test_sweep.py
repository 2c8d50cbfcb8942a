"""The bench's `--workers` sweep with processes: sharded figures beside one-process ones, and
the 16-over-2 ratios (arithmetic checked here; speed is measured by `lackjail bench` only)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lackjail.bench import figures as bench
from lackjail.bench import sweep

ROOT = Path(__file__).resolve().parents[2]


def test_the_sweep_measures_each_count_with_one_process_and_sharded(require_nsjail):
    proc = subprocess.run(
        [sys.executable, "-m", "lackjail.cli", "bench", "--only", "floor"]
        + ["--workers", "1,2", "--processes", "2", "-n", "5", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)["figures"]
    assert [figures[sweep.PROCESSES.format(c)] for c in (1, 2)] == [1, 2]
    for count in (1, 2):
        assert figures[bench.SWEEP_FRESH.format(count)] > 0
        assert figures[bench.SWEEP_REUSE.format(count)] > 0
    assert figures[sweep.ONE_FRESH.format(2)] > 0 and figures[sweep.ONE_REUSE.format(2)] > 0
    assert sweep.ONE_FRESH.format(1) not in figures  # one jail: one process only


def test_the_ratio_is_sixteen_workers_over_two_each_at_its_own_setting(monkeypatch):
    rates = {1: 100.0, 8: 400.0}  # by processes, whatever the count
    monkeypatch.setattr(sweep, "_fresh", lambda count, p, n, iso: count * rates[p])
    monkeypatch.setattr(sweep, "_reuse", lambda count, p, n, iso: 10 * count * rates[p])
    monkeypatch.setattr("lackjail.shards.os.cpu_count", lambda: 16)
    figures = sweep.sweep_figures((2, 16), n=1)
    # auto: one process at 2 workers, eight at 16
    assert [figures[sweep.PROCESSES.format(c)] for c in (2, 16)] == [1, 8]
    assert figures[bench.SWEEP_FRESH.format(16)] == 16 * 400.0
    assert figures[sweep.ONE_FRESH.format(16)] == 16 * 100.0
    assert sweep.ONE_FRESH.format(2) not in figures
    for kind in ("fresh", "reuse"):
        assert figures[sweep.SCALING.format(kind, 16, 2)] == pytest.approx(16 * 400 / (2 * 100))
        assert figures[sweep.ONE_SCALING.format(kind, 16, 2)] == pytest.approx(16 / 2)
