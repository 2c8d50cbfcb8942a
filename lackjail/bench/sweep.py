"""The `--workers` sweep: throughput by worker count, sharded as a Jail would be and in one
controller process.

For each worker count: fresh throughput through `Jail.map` and reuse throughput
from one caller thread per jail (as the lean floor's clients), with the sweep's
`processes` setting ("auto" by default: what `Jail(workers=N)` does on this
host); where that comes to more than one controller process, the same again
with `processes=1` (one interpreter's lock), for comparison. When the sweep
has 2 and 16 workers, the ratios "16 workers over 2" are the scaling figures a
many-core host is judged by (bench.goals reads the same figures).
"""

from __future__ import annotations

import time

from lackjail.bench.figures import SWEEP_FRESH, SWEEP_REUSE, Figures
from lackjail.bench.jailed import ensure_ok, settle, throughput
from lackjail.bench.programs import TRIVIAL, fresh_program

PROCESSES = "workers={}: controller processes"
ONE_FRESH = "workers={}, processes=1: fresh throughput, Jail.map (runs/s)"
ONE_REUSE = "workers={}, processes=1: reuse throughput (runs/s)"
SCALING = "{} throughput, {} workers over {} (x)"
ONE_SCALING = "{} throughput, {} workers over {}, processes=1 (x)"
SCALED = (16, 2)  # the counts whose ratio is reported, when the sweep has both


def sweep_figures(counts, n=500, isolation=None, processes="auto") -> Figures:
    """Fresh and reuse throughput at each worker count in COUNTS with PROCESSES ("auto" or a
    number, at most the count), and with one process where that differs; the 16-over-2
    ratios."""
    from lackjail.shards import processes_for

    figures = Figures()
    for count in counts:
        chosen = processes_for(processes, count) if processes == "auto" else min(processes, count)
        figures[PROCESSES.format(count)] = chosen
        figures[SWEEP_FRESH.format(count)] = _fresh(count, chosen, n, isolation)
        figures[SWEEP_REUSE.format(count)] = _reuse(count, chosen, n, isolation)
        if chosen > 1:
            figures[ONE_FRESH.format(count)] = _fresh(count, 1, n, isolation)
            figures[ONE_REUSE.format(count)] = _reuse(count, 1, n, isolation)
    high, low = SCALED
    if high in counts and low in counts:
        for kind, default, one in (
            ("fresh", SWEEP_FRESH, ONE_FRESH),
            ("reuse", SWEEP_REUSE, ONE_REUSE),
        ):
            figures[SCALING.format(kind, high, low)] = (
                figures[default.format(high)] / figures[default.format(low)]
            )
            if one.format(high) in figures:
                narrow = figures.get(one.format(low), figures[default.format(low)])
                figures[ONE_SCALING.format(kind, high, low)] = figures[one.format(high)] / narrow
    return figures


def _fresh(count, processes, n, isolation) -> float:
    from lackjail.api import Jail

    with Jail(workers=count, processes=processes, isolation=isolation) as jail:
        ensure_ok(jail.run(TRIVIAL))
        settle(jail, count)
        programs = [fresh_program() for _ in range(n * 2)]
        began = time.perf_counter()
        for result in jail.map(programs):
            ensure_ok(result)
        return n * 2 / (time.perf_counter() - began)


def _reuse(count, processes, n, isolation) -> float:
    from lackjail.api import Jail

    with Jail(workers=count, processes=processes, mode="reuse", isolation=isolation) as jail:
        ensure_ok(jail.run(TRIVIAL))
        settle(jail, count)
        return throughput(jail, count, n * 4)["runs/s"]
