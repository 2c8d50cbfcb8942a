"""Fresh runs at the python level beside the same runs at extended, alternated in one run.

The python level's zygote imports its standard library's facades before it forks, so its
children inherit a bigger heap; a fresh run there must still cost no more than at extended.
Each round opens a `Jail(workers=2)` per level in turn (the same trivial program, valid at
both), so both levels meet the same load; the figures are each level's, then python's over
extended's.
"""

from __future__ import annotations

import statistics

from lackjail.bench.figures import (
    LEVEL_CPU,
    LEVEL_FAULTS,
    LEVEL_FAULTS_READY,
    LEVEL_FRESH,
    LEVEL_RATIO,
    LEVEL_RSS,
    LEVEL_SPARE,
    SPACING_S,
    WORKERS,
    Figures,
    pct,
)
from lackjail.bench.jailed import Usage, _run_latency, _spare_faults, _zygotes, ensure_ok, settle
from lackjail.bench.programs import TRIVIAL

LEVELS = ("extended", "python")  # the base first: the ratios are python / extended
ROUNDS = 3
PARTS = ("controller", "zygotes", "children")


class _Level:
    """What one level's rounds gathered."""

    def __init__(self):
        self.back, self.spaced, self.rss, self.ready = [], [], [], []
        self.cpu = dict.fromkeys(PARTS, 0.0)
        self.faults = 0
        self.runs = 0  # back-to-back runs whose CPU and faults were counted

    def measure(self, jail, runs):
        ensure_ok(jail.run(TRIVIAL))
        settle(jail)
        zygotes = _zygotes()
        self.rss.append(max((z.memory_info().rss / 2**20 for z in zygotes), default=0))
        self.ready += _spare_faults(zygotes)
        before = Usage.now()
        self.back += _run_latency(jail, runs)
        settle(jail)
        after = Usage.now()
        if before.zygotes and before.zygotes == after.zygotes:  # no jail replaced meanwhile
            self.cpu["controller"] += after.controller_cpu - before.controller_cpu
            self.cpu["zygotes"] += after.zygote_cpu - before.zygote_cpu
            self.cpu["children"] += after.child_cpu - before.child_cpu
            self.faults += after.child_faults - before.child_faults
            self.runs += runs
        self.spaced += _run_latency(jail, max(1, runs // 2), SPACING_S)

    def figures(self) -> dict[str, float | None]:
        """Template -> this level's value (None: no round counted it)."""
        cpu = {p: v / self.runs * 1e6 for p, v in self.cpu.items()} if self.runs else {}
        return {
            LEVEL_FRESH: pct(self.back, 0.5),
            LEVEL_SPARE: pct(self.spaced, 0.5),
            **{LEVEL_CPU.replace("{part}", p): cpu.get(p) for p in PARTS},
            LEVEL_CPU.replace("{part}", "all processes"): sum(cpu.values()) if cpu else None,
            LEVEL_RSS: statistics.median(self.rss) if self.rss else None,
            LEVEL_FAULTS_READY: statistics.median(self.ready) if self.ready else None,
            LEVEL_FAULTS: self.faults / self.runs if self.runs else None,
        }


def level_figures(n=500, isolation=None, rounds=ROUNDS) -> Figures:
    """Fresh runs at each of LEVELS, ROUNDS rounds alternated, N back-to-back runs per level
    in all (and half as many spaced): latency, CPU per run by process, the zygote's RSS and
    page faults per child; then each as python's over extended's."""
    from lackjail.api import Jail

    gathered = {language: _Level() for language in LEVELS}
    per_round = max(1, n // rounds)
    for _ in range(rounds):
        for language in LEVELS:
            with Jail(workers=WORKERS, isolation=isolation, language=language) as jail:
                gathered[language].measure(jail, per_round)
    values = {language: got.figures() for language, got in gathered.items()}
    figures = Figures()
    for language, named in values.items():
        for template, value in named.items():
            name = template.format(level=language)
            if value is None:
                figures.missing(name, "a jail was replaced in every round (try a smaller -n)")
            else:
                figures[name] = value
    for template, value in values["python"].items():
        base = values["extended"][template]
        what = template.format(level="").removeprefix(" level: ").rpartition(" (")[0]
        name = LEVEL_RATIO.format(what)
        if value is None or not base:
            figures.missing(
                name, "a figure of either level is missing, or is 0 at extended (try a larger -n)"
            )
        else:
            figures[name] = value / base
    return figures
