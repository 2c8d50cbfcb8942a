"""Tool calls: what one host (mediated) call and one jail-placed call cost, what a bare
round trip between two processes costs beside them (the crossing floor), and what
kernel-confined resolution adds to each host file access."""

from __future__ import annotations

import statistics
import time

from lackjail.bench.crossing import crossing_figures
from lackjail.bench.figures import BENEATH, JAIL_TOOL, TOOL, merge
from lackjail.bench.jailed import ensure_ok
from lackjail.bench.programs import CALLS


def echo(value: int) -> int:
    """Use: return VALUE unchanged (the benchmark's host tool: nothing but the crossing)."""
    return value


def per_call(run, calls, repeats, tool, baseline):
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
    """Median cost per call of a host (mediated) tool and a jail-placed one, the crossing
    floor measured right after them, and what kernel-confined resolution adds to each host
    file access."""
    from lackjail.api import Jail
    from lackjail.bench.resolution import resolution_cost_us
    from lackjail.kit import spec_from_function

    host = spec_from_function(
        echo,
        name="echo",
        provider="python",
        provider_config={"module": "lackjail.bench.tools", "function": "echo"},
    )
    total = calls * (calls - 1) // 2
    with Jail(kit={"echo": host, "word_count": "word_count"}, workers=1, mode="reuse") as jail:

        def run(value):
            return lambda program: ensure_ok(jail.run(program), value)

        figures = {
            TOOL: per_call(run(total), calls, repeats, "echo(i)", "abs(i)"),
            JAIL_TOOL: per_call(run(calls), calls, repeats, "word_count('x')", "abs(1)"),
        }
    # openat2 beneath the workspace descriptor vs a plain open (the goal: < 15 us)
    figures[BENEATH] = resolution_cost_us()["added"]
    return merge(figures, crossing_figures())
