"""`lackjail bench`: every figure with its anchors, measured in one run.

Benchmarks, not tests: they print numbers and assert nothing about speed. Each figure is a
plain number (or None with a reason in `unavailable`); `goals()` turns them into ratios
against the goals, where an anchor-relative goal uses the anchor measured in the same run.
The anchors (pydantic-monty, lackpy) come from the optional `bench` extra; when one is not
installed its figures say so and no ratio is made up.

This package sits above everything and nothing imports it: the jail never mounts it.
"""

from __future__ import annotations

from lackjail.bench.anchors import lackpy_figures, monty_figures
from lackjail.bench.batch import batch_figures
from lackjail.bench.figures import Figures, merge
from lackjail.bench.floor import exec_baseline, handoff_us, validate_figures
from lackjail.bench.jailed import fresh_figures, landlock_figures, reuse_figures
from lackjail.bench.lean import lean_figures
from lackjail.bench.levels import level_figures
from lackjail.bench.startup import startup_figures
from lackjail.bench.sweep import sweep_figures
from lackjail.bench.tools import tool_call_figures

# in the order they run
SECTIONS = (
    "floor",
    "lean",
    "fresh",
    "levels",
    "reuse",
    "landlock",
    "tools",
    "anchors",
    "batch",
    "cli",
)


def measure(
    n=500, isolation=None, sections=None, on_section=None, workers=(), processes="auto"
) -> Figures:
    """Run the chosen sections in order, then the sweep over WORKERS (worker counts) if any,
    each count with one controller process and with PROCESSES; ON_SECTION(title, part) sees
    each as it ends."""
    steps = {
        "floor": (
            "the floor: validation and an unconfined exec",
            lambda: merge(validate_figures(), exec_baseline(), handoff_us()),
        ),
        "lean": (
            "the lean floor: the simplest jailed designs, in nsjail, this run",
            lambda: lean_figures(n),
        ),
        "fresh": ("fresh runs, Jail(workers=2)", lambda: fresh_figures(n, isolation)),
        "levels": (
            "fresh runs by language level: python beside extended, alternated",
            lambda: level_figures(n, isolation),
        ),
        "reuse": ("reuse runs, Jail(workers=2, mode='reuse')", lambda: reuse_figures(n, isolation)),
        "landlock": (
            "fresh and reuse runs at the landlock level (no namespaces)",
            lambda: landlock_figures(n),
        ),
        "tools": ("tool calls", tool_call_figures),
        "anchors": (
            "anchors, measured in this run",
            lambda: merge(monty_figures(n), lackpy_figures(n)),
        ),
        "batch": ("batch: Jail.map and lackjail batch", lambda: batch_figures(n, isolation)),
        "cli": ("the command line: lackjail run, end to end", startup_figures),
        "workers": (
            f"throughput by worker count: {', '.join(map(str, workers))}; processes=1 "
            f"and processes={processes}",
            lambda: sweep_figures(workers, n, isolation, processes),
        ),
    }
    figures = Figures()
    for name in (*(sections or SECTIONS), *(("workers",) if workers else ())):
        title, step = steps[name]
        part = step()
        figures = merge(figures, part)
        if on_section:
            on_section(title, part)
    return figures
