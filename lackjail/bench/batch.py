"""Benchmark figures for many programs: sequential `run`, `Jail.map`, `lackjail batch`, and Ray.

`lackjail bench` calls `batch_figures()`; or run `python -m lackjail.bench.batch [N] [--ray]`.
Ray runs in a network namespace of its own with only loopback up (it binds to the machine's
address otherwise), so `ray_figures` needs `unshare` and `ip`, and the `ray` extra.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from lackjail.bench.figures import BATCH, MAP, WORKERS, Figures
from lackjail.bench.jailed import map_throughput
from lackjail.bench.programs import numbered


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else 0.0


def batch_runs_per_s(n: int = 10_000, workers: int = 2, isolation=None) -> float:
    """`lackjail batch`'s throughput over N trivial programs on a started, settled pool.

    The pool is started before the clock starts, as for Jail.map's figure, so
    the ratio between the two is the batch's own cost: reading and checking
    lines, writing and flushing result lines.
    """
    from lackjail.api import Jail
    from lackjail.batch import run_batch

    with tempfile.TemporaryDirectory(prefix="lackjail-bench-") as tmp:
        source, out = os.path.join(tmp, "in.jsonl"), os.path.join(tmp, "out.jsonl")
        with open(source, "w") as fh:
            for i in range(n):
                fh.write(json.dumps({"id": i, "program": numbered(i)}) + "\n")
        with Jail(workers=workers, isolation=isolation) as jail:
            jail.wait_ready()
            summary = run_batch(source, out, lambda *group: _Borrowed(jail))
    if summary.counts["ok"] != n:
        raise RuntimeError(f"the batch gave {dict(summary.counts)} for {n} trivial programs")
    return summary.runs_per_s


class _Borrowed:
    """A batch runner over a Jail that the caller owns (left open)."""

    def __init__(self, jail):
        self.as_completed = jail.as_completed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def local_figures(n: int = 10_000, workers: int = 2) -> dict:
    """Runs/s over N trivial programs: sequential run, Jail.map, lackjail batch; the ratios."""
    from lackjail.api import Jail

    with Jail(workers=workers) as jail:
        jail.wait_ready()
        started = time.perf_counter()
        for i in range(n):
            jail.run(numbered(i))
        sequential = _rate(n, time.perf_counter() - started)
        started = time.perf_counter()
        if not all(r.ok for r in jail.map(numbered(n + i) for i in range(n))):
            raise RuntimeError("Jail.map: a trivial program failed")
        mapped = _rate(n, time.perf_counter() - started)
    batched = round(batch_runs_per_s(n, workers), 1)
    return {
        f"sequential run, {workers} workers (runs/s)": sequential,
        f"Jail.map, {workers} workers (runs/s)": mapped,
        "Jail.map / sequential run": round(mapped / sequential, 2),
        f"lackjail batch, local, {workers} workers (runs/s)": batched,
        "lackjail batch / Jail.map (goal >= 0.9)": round(batched / mapped, 2),
    }


def ray_figures(n: int = 10_000) -> dict:
    """Jail.as_completed with 2 jails vs RayJail over a two-node local cluster (1 jail each)."""
    root = os.geteuid() == 0  # an ordinary user maps back to its own uid, for the jails
    back = "" if root else f"unshare --map-user={os.geteuid()} --map-group={os.getegid()} -- "
    proc = subprocess.run(
        ["unshare", "-n" if root else "-rn", "--", "sh", "-c"]
        + [f'ip link set lo up && exec {back}"$@"', "sh", sys.executable, "-m"]
        + ["lackjail.bench.batch", str(n), "--inside"],
        capture_output=True,
        text=True,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the Ray benchmark failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ray_inside(n: int) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from lackjail.api import Jail
    from lackjail.ray import RayJail

    jobs = [(i, numbered(i), None) for i in range(n)]
    with Jail(workers=2) as jail:
        jail.wait_ready()
        started = time.perf_counter()
        assert len(dict(jail.as_completed(jobs))) == n
        local = _rate(n, time.perf_counter() - started)
    started = time.perf_counter()
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    up = time.perf_counter() - started
    try:
        with RayJail(address=cluster.address) as rj:
            time.sleep(1)  # let the actors' pools finish starting their jails
            started, cpu = time.perf_counter(), time.process_time()
            assert len(dict(rj.as_completed(jobs))) == n
            on_ray = _rate(n, time.perf_counter() - started)
            driver_us = (time.process_time() - cpu) / n * 1e6
    finally:
        ray.shutdown()
        cluster.shutdown()
    return {
        "local Jail.as_completed, 2 jails (runs/s)": local,
        "RayJail, 2 nodes x 1 jail, same machine (runs/s)": on_ray,
        "Ray per-program overhead (ms, goal <= 1)": round(1000 / on_ray - 1000 / local, 3),
        "driver CPU per program on Ray (us)": round(driver_us, 1),
        "driver limit, one CPU (runs/s)": round(1e6 / driver_us),
        "two-node cluster start (s)": round(up, 1),
    }


def batch_figures(n=500, isolation=None):
    """Throughput of `Jail.map` and of `lackjail batch` (4 x N programs each)."""
    figures = Figures()
    figures[MAP] = map_throughput(n * 4, isolation)
    figures[BATCH] = batch_runs_per_s(n * 4, WORKERS, isolation)
    return figures


def main(argv: list[str]) -> None:
    """`python -m lackjail.bench.batch [N] [--ray] [--ray-only]`: print the figures."""
    n = int(argv[0]) if argv and argv[0].isdigit() else 10_000
    if "--inside" in argv:
        print(json.dumps(_ray_inside(n)))
        return
    sections: list = [] if "--ray-only" in argv else [local_figures]
    if "--ray" in argv or "--ray-only" in argv:
        sections.append(ray_figures)
    for section in sections:
        for key, value in section(n).items():
            print(f"{key:<58} {value:>12,}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
