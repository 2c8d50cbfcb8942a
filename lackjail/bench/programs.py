"""The programs the benchmarks run; all are valid lackpy with no tools."""

from __future__ import annotations

import itertools

TRIVIAL = "x = len([1, 2, 3])\nx"
# Every measured run gets a text no run had before (its value is still 3): an agent's
# programs are new, and the controller keeps its verdicts on programs it has seen.
SHAPE = "x = len([1, 2, N])\nx"
_serial = itertools.count(1000)


def numbered(i: int) -> str:
    """The trivial program with I in place of N (value 3)."""
    return SHAPE.replace("N", str(i))


def fresh_program() -> str:
    """The trivial program, a text never used before in this process (thread-safe)."""
    return numbered(next(_serial))


# A loop of N calls to TOOL: the tool-call figures time it with and without the calls.
CALLS = "total = 0\nfor i in range(N):\n    total += TOOL\ntotal"

TWENTY_LINES = """\
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
sizes = {w: len(w) for w in words if w}
longest = max(words, key=lambda w: len(w))
total = 0
lines = []
for i, w in enumerate(sorted(words, key=lambda w: -sizes[w])):
    if sizes[w] > 4:
        total += sizes[w] * 2
    elif w in ("beta", "zeta"):
        total -= 1
    else:
        total = total + i
    lines.append(f"{i:>2} {w!r}: {sizes[w]} chars")
evens = [n // 2 for n in range(20) if n % 2 == 0]
pairs = list(zip(words, evens))
summary = {"total": total, "count": len(lines), "any_long": any([s > 5 for s in sizes.values()])}
flags = set([w[0] for w in words])
ratio = round(total / max(len(words), 1), 2)
print(f"{len(pairs)} pairs, ratio {ratio}, longest {longest!r}")
[summary, ratio, lines[-1] if lines else None, sum(evens)]
"""
