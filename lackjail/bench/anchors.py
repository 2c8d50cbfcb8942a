"""The anchors: the alternatives a user compares a jailed run with (pydantic-monty, lackpy),
from the optional `bench` extra; one not installed says so and gives no number."""

from __future__ import annotations

import tempfile
import time

from lackjail.bench.figures import LACKPY, MONTY, MONTY_CALL, WORKERS, Figures, pct, timeit
from lackjail.bench.programs import fresh_program
from lackjail.bench.tools import echo, per_call


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
        figures[MONTY] = pct(timeit(session_run, n), 0.5)
        total = calls * (calls - 1) // 2
        budget = {"max_suspensions": 2 * (calls + 10) * repeats}  # per checkout, default 1000
        with pool.checkout(limits=budget) as session:

            def run(program):
                got = session.feed_run(program, external_lookup={"echo": echo})
                if got != total:
                    raise RuntimeError(f"monty tool benchmark returned {got!r}")

            figures[MONTY_CALL] = per_call(run, calls, repeats, "echo(i)", "abs(i)")
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
