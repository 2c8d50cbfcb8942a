"""The goals as ratios of figures measured in the same run, and where each one's time goes."""

from __future__ import annotations

import os
from dataclasses import dataclass

from lackjail.bench.figures import (
    BARE_START,
    BENEATH,
    CHECK_NEW,
    CLI_RUN,
    COLD,
    CROSS_FRAMED,
    FRESH_B2B,
    FRESH_SPARE,
    FRESH_SPARE_P99,
    HANDOFF,
    LACKPY,
    LEAN_FORK_RPS,
    LEAN_REUSE_RPS,
    LEAN_REUSE_US,
    LEAN_WARM_CHILD,
    LEVEL_CPU,
    LEVEL_FRESH,
    MAP,
    MAP_LOAD,
    MONTY,
    MONTY_CALL,
    REUSE,
    SESSION,
    SPACING_S,
    SWEEP_FRESH,
    SWEEP_REUSE,
    TOOL,
    TPUT_FRESH,
    TPUT_REUSE,
    VALIDATE,
    VALIDATE_IDLE,
    VALIDATE_NEW,
    ZYGOTE_START,
    Figures,
)

# (what is compared, lackjail's figure, its floor in the same run, goal as a factor of the
# floor, whether the goal is a floor (throughput) or a ceiling)
FLOORS = (
    ("fresh throughput (Jail.map) vs lean fork per request", MAP, LEAN_FORK_RPS, 0.8, True),
    ("fresh p50, spares ready vs lean warm child", FRESH_SPARE, LEAN_WARM_CHILD, 2.0, False),
    ("reuse throughput vs lean persistent worker", TPUT_REUSE, LEAN_REUSE_RPS, 0.33, True),
    ("reuse p50 vs lean persistent worker", REUSE, LEAN_REUSE_US, 2.0, False),
    ("lackjail.check vs the validator alone", CHECK_NEW, VALIDATE_NEW, 1.5, False),
    ("lackjail run end to end vs a bare interpreter start", CLI_RUN, BARE_START, 5.0, False),
)  # fmt: skip


# throughput at 16 workers over that at 2, from the `--workers` sweep: what a many-core host
# must give (2 and 16 jails on a host with fewer cores measure the host, not the pool)
SCALING = (
    ("fresh throughput", SWEEP_FRESH, 3.5),
    ("reuse throughput", SWEEP_REUSE, 4.0),
)
SCALING_CORES = 16


def _scaling(f: Figures, what: str, template: str, factor: float) -> Goal:
    """A scaling goal: 16 workers' throughput against 2 workers' x FACTOR, judged only on a
    host with at least 16 cores whose sweep measured both counts."""
    wide, narrow = f.get(template.format(SCALING_CORES)), f.get(template.format(2))
    cores = os.cpu_count() or 1
    why = ""
    if cores < SCALING_CORES:
        why = f"needs a host with {SCALING_CORES} cores (this one has {cores})"
        wide = None
    elif wide is None or narrow is None:
        why = f"needs the sweep `--workers 2,{SCALING_CORES}`"
    return Goal(
        f"{what}, {SCALING_CORES} workers vs 2",
        wide,
        "runs/s",
        f">= {factor:g}x 2 workers",
        narrow * factor if narrow is not None and wide is not None else None,
        True,
        why=why,
    )


def floor_ratios(f: Figures) -> list[dict]:
    """Each lackjail figure over its floor measured in the same run (None where either is
    missing): the plain ratio, beside the goal's factor."""
    rows = []
    for label, mine, floor, factor, at_least in FLOORS:
        ok = f.get(mine) is not None and f.get(floor)
        rows.append(
            {
                "figure": label,
                "lackjail": f.get(mine),
                "floor": f.get(floor),
                "ratio": f[mine] / f[floor] if ok else None,
                "goal": f"{'>=' if at_least else '<='} {factor:g}x",
            }
        )
    return rows


@dataclass
class Goal:
    """One goal, judged on figures from the same run."""

    figure: str
    measured: float | None
    unit: str
    goal: str
    target: float | None  # the goal as an absolute number in this run, None when unknown
    at_least: bool = False  # throughput goals are floors; the rest are ceilings
    why: str = ""
    where: str = ""  # where the time goes, from this run's figures

    @property
    def ratio(self) -> float | None:
        """measured / goal: a ceiling is met at <= 1.0, a floor at >= 1.0."""
        if self.measured is None or not self.target:
            return None
        return self.measured / self.target

    @property
    def met(self) -> bool | None:
        if self.ratio is None:
            return None
        return self.ratio >= 1.0 if self.at_least else self.ratio <= 1.0

    def to_dict(self) -> dict:
        return {
            "figure": self.figure,
            "measured": self.measured,
            "unit": self.unit,
            "goal": self.goal,
            "target": self.target,
            "ratio": self.ratio,
            "met": self.met,
            **({"why": self.why} if self.why else {}),
            **({"where": self.where} if self.where else {}),
        }


def goals(f: Figures) -> list[Goal]:
    """The goals (speed of runs and tool calls, and of confined resolution) as ratios of
    figures measured in this run."""

    def scaled(name, factor):
        return f[name] * factor if f.get(name) is not None else None

    def anchor_why(name):
        return f"{name}: {f.unavailable[name]}" if name in f.unavailable else ""

    out = [
        Goal(
            "fresh p50 back to back vs monty's pooled fresh session",
            f.get(FRESH_B2B),
            "us",
            "<= 1.0x monty",
            scaled(MONTY, 1.0),
            why=anchor_why(MONTY),
        ),
        Goal(
            "fresh p50 back to back vs lackpy in-process",
            f.get(FRESH_B2B),
            "us",
            "<= 1.5x lackpy",
            scaled(LACKPY, 1.5),
            why=anchor_why(LACKPY),
        ),
        Goal("fresh p50, spares ready", f.get(FRESH_SPARE), "us", "<= 250 us", 250.0),
        Goal(
            "fresh p99, spares ready",
            f.get(FRESH_SPARE_P99),
            "us",
            "<= 2x p50",
            scaled(FRESH_SPARE, 2.0),
        ),
        Goal("reuse p50", f.get(REUSE), "us", "<= 100 us", 100.0),
        Goal("session run p50", f.get(SESSION), "us", "<= reuse p50", scaled(REUSE, 1.0)),
        Goal(
            "host tool call vs monty's external call",
            f.get(TOOL),
            "us",
            "<= 0.35x monty",
            scaled(MONTY_CALL, 0.35),
            why=anchor_why(MONTY_CALL),
        ),
        Goal("fresh throughput, 2 workers", f.get(TPUT_FRESH), "runs/s", ">= 2,000", 2000.0, True),
        Goal(
            "reuse throughput, 2 workers", f.get(TPUT_REUSE), "runs/s", ">= 10,000", 10000.0, True
        ),
        Goal(
            "Jail.map throughput vs fresh throughput",
            f.get(MAP_LOAD) or f.get(MAP),
            "runs/s",
            ">= 0.9x fresh throughput",
            scaled(TPUT_FRESH, 0.9),
            True,
            why=f.unavailable.get(MAP, ""),
        ),
        *(
            Goal(
                label,
                f.get(mine),
                "runs/s" if at_least else ("ms" if mine == CLI_RUN else "us"),
                f"{'>=' if at_least else '<='} {factor:g}x the floor",
                scaled(floor, factor),
                at_least,
                why=anchor_why(floor) or anchor_why(mine),
            )
            for label, mine, floor, factor, at_least in FLOORS
        ),
        *(
            Goal(
                f"{what} at the python level vs extended",
                f.get(template.format(level="python")),
                "us",
                "<= 1.0x extended",
                scaled(template.format(level="extended"), 1.0),
            )
            for what, template in (
                ("fresh p50 back to back", LEVEL_FRESH),
                ("CPU per fresh run", LEVEL_CPU.replace("{part}", "all processes")),
            )
        ),
        *(_scaling(f, what, template, factor) for what, template, factor in SCALING),
        Goal("cold start to first result", f.get(COLD), "ms", "<= 40 ms", 40.0),
        Goal("confined resolution per host file access", f.get(BENEATH), "us", "< 15 us", 15.0),
    ]
    where = _where(f)
    for goal in out:
        goal.where = where.get(goal.figure, "")
    return out


def _where(f: Figures) -> dict[str, str]:
    """Goal -> where its time goes, worded from this run's figures (a goal whose figures
    are missing gets nothing): what the next step has to cut."""
    cpus = os.cpu_count() or 1
    out = {}

    def cpu(label):
        parts = [
            f.get(f"{label}: CPU per run, {p} (us)") for p in ("controller", "zygotes", "children")
        ]
        return None if None in parts else parts

    trip = f.get(HANDOFF)
    fresh, reuse = cpu("fresh back to back"), cpu("reuse back to back")
    if fresh:
        text = (
            f"CPU per fresh run: {fresh[0]:,.0f} us in the controller, {fresh[1]:,.0f} us in "
            f"the zygotes (fork, reaping), {fresh[2]:,.0f} us in the child (fork return, "
            "warm-up, confinement, the run, exit)"
        )
        out["fresh p50 back to back vs monty's pooled fresh session"] = text
        out["fresh p50 back to back vs lackpy in-process"] = text
        total = sum(fresh)
        out["fresh throughput, 2 workers"] = (
            f"{total:,.0f} us of CPU per fresh run on {cpus} cores: a ceiling of "
            f"{cpus * 1e6 / total:,.0f} runs/s before any waiting; 2,000 runs/s needs at most "
            f"{cpus * 1e6 / 2000:,.0f} us"
        )
    if trip is not None:
        warm, idle = f.get(VALIDATE), f.get(VALIDATE_IDLE)
        out["fresh p50, spares ready"] = (
            "a run with its child waiting is a request and a result between two processes "
            f"(a pipe round trip across CPUs: {trip:,.0f} us here)"
            + (f" and {fresh[0]:,.0f} us of the controller's CPU" if fresh else "")
            + "; the rest is waking the child and the caller, and the child's run"
            + (
                f"; all of it on cold caches after the pause: validating the trivial program "
                f"takes {idle:,.0f} us after {SPACING_S * 1000:g} ms idle against "
                f"{warm:,.0f} us back to back ({idle / warm:,.1f}x)"
                if warm and idle is not None
                else ""
            )
        )
        framed = f.get(CROSS_FRAMED)
        out["host tool call vs monty's external call"] = (
            "a host tool call is a round trip between the child and the controller (a pipe "
            f"round trip across CPUs: {trip:,.0f} us here"
            + (
                f"; a call frame and its answer through lackjail's wire, no kit: {framed:,.1f} us"
                if framed is not None
                else ""
            )
            + ") plus the kit's checks, run inline on a relay thread that the run's caller "
            "watches (a hung tool times out, the run goes on); monty calls out within its "
            "own process"
        )
    if reuse and trip is not None:
        out["reuse p50"] = (
            f"CPU per reuse run: {reuse[0]:,.0f} us in the controller and {reuse[2]:,.0f} us "
            f"in the child, one after the other ({reuse[0] + reuse[2]:,.0f} us), and a "
            f"request and a result across CPUs (a pipe round trip: {trip:,.0f} us here)"
        )
    if reuse:
        total = sum(reuse)
        out["reuse throughput, 2 workers"] = (
            f"{total:,.0f} us of CPU per reuse run on {cpus} cores: a ceiling of "
            f"{cpus * 1e6 / total:,.0f} runs/s; the controller's {reuse[0]:,.0f} us of it are "
            "mostly Python, which runs one thread at a time (about "
            f"{1e6 / reuse[0]:,.0f} runs/s at most from one process); the rest is the "
            "callers and the jails waiting for each other's wake-ups"
        )
    if f.get(ZYGOTE_START) is not None:
        out["cold start to first result"] = (
            f"the zygote's start with its first spares is {f[ZYGOTE_START]:,.1f} ms of CPU "
            "(interpreter, imports, warm-up, forks); nsjail's own start and the first run "
            "are the rest"
        )
    return out
