"""Fresh runs at the python level beside the same runs at extended, alternated in one run.

The python level's zygote loads a module of its standard library the first time a program
imports it (a child cannot), so a program that imports nothing forks from a zygote about as
small as extended's; a fresh run there must cost no more than at extended. Each round opens
a `Jail(workers=2)` per level in turn (the same trivial program, valid at both), so both
levels meet the same load; the figures are each level's, then python's over extended's.
Then, in the python level's jail, a program that imports json, once that module is loaded:
the cost of an import stays in sight.
"""

from __future__ import annotations

import itertools
import statistics
import time

from lackjail.bench.figures import (
    LEVEL_CPU,
    LEVEL_FAULTS,
    LEVEL_FAULTS_READY,
    LEVEL_FRESH,
    LEVEL_IMPORT,
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
# A program that imports a module of the python level (value 3, as the trivial program's);
# each measured run's text is new, as the trivial program's is.
IMPORTING = "import json\nx = len(json.loads('[1, 2, N]'))\nx"
_serial = itertools.count(1000)


def importing(i: int) -> str:
    return IMPORTING.replace("N", str(i))


ROUNDS = 3
PARTS = ("controller", "zygotes", "children")


class _Level:
    """What one level's rounds gathered."""

    def __init__(self):
        self.back, self.spaced, self.rss, self.ready = [], [], [], []
        self.cpu = dict.fromkeys(PARTS, 0.0)
        self.faults = 0
        self.runs = 0  # back-to-back runs whose CPU and faults were counted
        # a program importing json (python level): latencies, RSS, CPU and runs counted
        self.importing, self.importing_rss, self.importing_cpu, self.importing_runs = [], [], 0.0, 0

    def measure_import(self, jail, runs):
        """RUNS back-to-back runs of a program that imports json, after runs that had each
        zygote load it (a jail loads a module once)."""
        for i in range(2 * WORKERS):
            ensure_ok(jail.run(importing(i)))
        settle(jail)
        self.importing_rss.append(max((z.memory_info().rss / 2**20 for z in _zygotes()), default=0))
        before = Usage.now()
        for _ in range(runs):
            program = importing(next(_serial))
            started = time.perf_counter()
            result = jail.run(program)
            self.importing.append((time.perf_counter() - started) * 1e6)
            ensure_ok(result)
        settle(jail)
        after = Usage.now()
        if before.zygotes and before.zygotes == after.zygotes:  # no jail replaced meanwhile
            self.importing_cpu += (
                after.controller_cpu
                - before.controller_cpu
                + after.zygote_cpu
                - before.zygote_cpu
                + after.child_cpu
                - before.child_cpu
            )
            self.importing_runs += runs

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
                if language == "python":
                    gathered[language].measure_import(jail, per_round)
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
    _import_figures(figures, gathered["python"], values["extended"])
    return figures


def _import_figures(figures: Figures, python: _Level, extended: dict) -> None:
    """The python level's runs of a program importing json, and each over extended's
    trivial program's figure."""
    cpu = python.importing_cpu / python.importing_runs * 1e6 if python.importing_runs else None
    own = {
        "fresh p50, back to back (us)": (pct(python.importing, 0.5), LEVEL_FRESH),
        "CPU per fresh run, all processes (us)": (
            cpu,
            LEVEL_CPU.replace("{part}", "all processes"),
        ),
        "zygote RSS (MB)": (
            statistics.median(python.importing_rss) if python.importing_rss else None,
            LEVEL_RSS,
        ),
    }
    for what, (value, template) in own.items():
        name = LEVEL_IMPORT.format(what)
        base = extended[template]
        if value is None:
            figures.missing(name, "a jail was replaced in every round (try a smaller -n)")
            continue
        figures[name] = value
        if base:
            figures[LEVEL_IMPORT.format(f"{what.rpartition(' (')[0]} over extended's (x)")] = (
                value / base
            )
