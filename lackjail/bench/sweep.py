"""The `--workers` sweep: throughput by worker count, in one controller process and sharded.

For each worker count: fresh throughput through `Jail.map` and reuse throughput
from one caller thread per jail (as the lean floor's clients), first with
`processes=1` (one controller process, one interpreter's lock), then with the
sweep's `processes` setting ("auto" by default) wherever it comes to more than
one process at that count. When the sweep has 2 and 16 workers, the ratios
"16 workers over 2" are the scaling figures a many-core host is judged by.
"""

from __future__ import annotations

import time

from lackjail.bench.figures import SWEEP_FRESH, SWEEP_REUSE, Figures
from lackjail.bench.jailed import ensure_ok, settle, throughput
from lackjail.bench.programs import TRIVIAL, fresh_program

SHARDED_FRESH = "workers={}, processes={}: fresh throughput, Jail.map (runs/s)"
SHARDED_REUSE = "workers={}, processes={}: reuse throughput (runs/s)"
SCALING = "{} throughput, {} workers over {}, processes={} (x)"
SCALED = (16, 2)  # the counts whose ratio is reported, when the sweep has both


def sweep_figures(counts, n=500, isolation=None, processes="auto") -> Figures:
    """Fresh and reuse throughput at each worker count in COUNTS, with one controller process
    and with PROCESSES ("auto" or a number, at most the count); the 16-over-2 ratios."""
    from lackjail.shards import processes_for

    figures = Figures()
    chosen: dict[int, int] = {}  # count -> processes measured beside 1
    for count in counts:
        figures[SWEEP_FRESH.format(count)] = _fresh(count, 1, n, isolation)
        figures[SWEEP_REUSE.format(count)] = _reuse(count, 1, n, isolation)
        sharded = processes_for(processes, count) if processes == "auto" else min(processes, count)
        if sharded > 1:
            chosen[count] = sharded
            figures[SHARDED_FRESH.format(count, sharded)] = _fresh(count, sharded, n, isolation)
            figures[SHARDED_REUSE.format(count, sharded)] = _reuse(count, sharded, n, isolation)
    high, low = SCALED
    if high in counts and low in counts:
        for kind, plain, sharded in (
            ("fresh", SWEEP_FRESH, SHARDED_FRESH),
            ("reuse", SWEEP_REUSE, SHARDED_REUSE),
        ):
            base = figures[plain.format(low)]
            figures[SCALING.format(kind, high, low, 1)] = figures[plain.format(high)] / base
            if high in chosen:  # the default at each count: `processes` there, 1 at `low`
                top = figures[sharded.format(high, chosen[high])]
                low_default = figures[sharded.format(low, chosen[low])] if low in chosen else base
                figures[SCALING.format(kind, high, low, processes)] = top / low_default
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
