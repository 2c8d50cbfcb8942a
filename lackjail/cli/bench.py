"""`lackjail bench`: print the figures, their anchors and the goals (see lackjail/bench/)."""

import click

from lackjail.bench import SECTIONS
from lackjail.cli.common import Command, emit_json
from lackjail.cli.options import isolation_option, processes_value


def _shown(value) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


@click.command(cls=Command)
@click.option(
    "-n", "runs", default=500, show_default=True, type=click.IntRange(1), help="Runs per figure."
)
@click.option(
    "--load",
    is_flag=True,
    help="Also run the load benchmarks: 10,000 programs from 32 callers, and Jail.map over 10,000.",
)
@isolation_option("Override the isolation level.")
@click.option(
    "--only",
    "sections",
    multiple=True,
    type=click.Choice(SECTIONS),
    help="Measure only this section (repeatable): e.g. to profile one kind of run.",
)
@click.option(
    "--workers",
    "sweep",
    metavar="N,N,...",
    help="Also measure fresh and reuse throughput at each of these worker counts (e.g. 1,2,4).",
)
@click.option(
    "--processes",
    default="auto",
    show_default=True,
    callback=processes_value,
    metavar="auto|N",
    help="The --workers sweep measures each count with one controller process and with this "
    "many (where it comes to more than one).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@click.option(
    "--markdown", is_flag=True, help="Print the README's table (figure, measured, goal, ratio)."
)
def bench(runs, load, isolation, sections, sweep, processes, as_json, markdown):
    """Measure fresh and reuse runs, tool calls, throughput, cold start, page faults and the
    anchors (pydantic-monty, lackpy: the `bench` extra), and judge the goals.

    Each goal is a ratio of figures from this run: measured / goal (a ceiling is met at
    <= 1.00, a throughput floor at >= 1.00). Speed is measured here, never in tests.

    \b
    Examples:
      lackjail bench                        # every section, 500 runs per figure (~1 minute)
      lackjail bench -n 100 --json          # quicker, machine-readable
      lackjail bench --only fresh -n 2000   # one section, e.g. under py-spy
      lackjail bench --markdown             # the README's table
      lackjail bench --only lean --only fresh --workers 1,2,4
      lackjail bench --only floor --workers 1,2,4,8,16 -n 2000   # a many-core host's scaling
    """
    from lackjail.bench import measure
    from lackjail.bench.figures import MAP_LOAD, Figures
    from lackjail.bench.goals import floor_ratios, goals
    from lackjail.bench.jailed import load_figures, map_throughput
    from lackjail.bench.programs import SHAPE

    if as_json and markdown:
        raise click.UsageError("choose one of --json and --markdown")
    quiet = as_json or markdown
    counts = _worker_counts(sweep) if sweep else ()

    def show(title, part):
        if quiet:
            return
        click.echo(f"\n{title}")
        width = max([56, *map(len, part)])
        for key, value in part.items():
            shown = part.unavailable[key] if value is None else _shown(value)
            if value is not None and key.endswith("(x)"):  # a ratio: two decimals
                shown = f"{value:.2f}"
            click.echo(f"  {key:<{width}} {shown:>14}")

    if not quiet:
        click.echo(
            f"lackjail bench: {runs} runs per latency figure, program {SHAPE!r} with a new "
            "N for every run"
        )
    figures = measure(
        runs, isolation, sections or SECTIONS, on_section=show, workers=counts, processes=processes
    )
    if load:
        part = Figures()
        part.update(load_figures())
        part[MAP_LOAD] = map_throughput(10_000, isolation)
        figures.update(part)
        show("load", part)
    judged = [] if sections else goals(figures)  # goals need every section's figures
    if as_json:
        emit_json(
            {
                "figures": dict(figures),
                "unavailable": figures.unavailable,
                "goals": [g.to_dict() for g in judged],
                "floor_ratios": floor_ratios(figures),
            }
        )
        return
    if markdown:
        click.echo(_markdown(figures, judged))
        return
    ratios = [r for r in floor_ratios(figures) if r["ratio"] is not None]
    if ratios:
        click.echo("\nagainst the floor, same run: lackjail's figure / the floor's")
        for r in ratios:
            figure, mine, floor = r["figure"], _shown(r["lackjail"]), _shown(r["floor"])
            click.echo(f"  {figure:<56} {mine:>14} / {floor:<14} {r['ratio']:7.2f}x  {r['goal']}")
    if not judged:
        return
    click.echo("\ngoals, ratio = measured / goal, same run")
    click.echo(f"  {'figure':<56} {'measured':>14}  {'goal':<36} {'ratio':>7}  verdict")
    for g in judged:
        measured = "-" if g.measured is None else f"{_shown(g.measured)} {g.unit}"
        goal = g.goal if g.target is None else f"{g.goal} ({_shown(g.target)})"
        ratio = "-" if g.ratio is None else f"{g.ratio:.2f}"
        verdict = {True: "met", False: "not met", None: g.why or "no figure"}[g.met]
        click.echo(f"  {g.figure:<56} {measured:>14}  {goal:<36} {ratio:>7}  {verdict}")
    unmet = [g for g in judged if g.met is False and g.where]
    if unmet:
        click.echo("\nwhere the time goes, for each goal not met (this run's figures)")
        for g in unmet:
            click.echo(f"  {g.figure}: {g.where}")


def _worker_counts(text: str) -> tuple[int, ...]:
    """--workers N,N,...: each a worker count the pool accepts."""
    from lackjail.policy import MAX_WORKERS

    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        counts = ()
    if not counts or not all(1 <= c <= MAX_WORKERS for c in counts):
        raise click.BadParameter(
            f"a comma-separated list of worker counts from 1 to {MAX_WORKERS}, e.g. 1,2,4; "
            f"not {text!r}",
            param_hint="--workers",
        )
    return counts


def _markdown(figures, judged) -> str:
    """The README's benchmark table: the goals first, then the other figures of this run, then
    each figure over its floor."""
    from lackjail.bench.goals import floor_ratios

    rows = ["| figure | measured | goal | ratio |", "| --- | --- | --- | --- |"]
    for g in judged:
        measured = (g.why or "-") if g.measured is None else f"{_shown(g.measured)} {g.unit}"
        goal = g.goal if g.target is None else f"{g.goal} ({_shown(g.target)})"
        ratio = "-" if g.ratio is None else f"{g.ratio:.2f} ({'met' if g.met else 'not met'})"
        rows.append(f"| {g.figure} | {measured} | {goal} | {ratio} |")
    for key, value in figures.items():
        shown = figures.unavailable.get(key, "-") if value is None else _shown(value)
        rows.append(f"| {key} | {shown} | - | - |")
    ratios = [r for r in floor_ratios(figures) if r["ratio"] is not None]
    if ratios:
        rows += ["", "Against the floor, same run (lackjail's figure / the floor's):", ""]
        rows += ["| figure | lackjail | floor | ratio | goal |", "| --- | --- | --- | --- | --- |"]
        rows += [
            f"| {r['figure']} | {_shown(r['lackjail'])} | {_shown(r['floor'])} | "
            f"{r['ratio']:.2f}x | {r['goal']} |"
            for r in ratios
        ]
    unmet = [g for g in judged if g.met is False and g.where]
    if unmet:
        rows += ["", "Where the time goes, for each goal not met (this run's figures):", ""]
        rows += [f"- {g.figure}: {g.where}." for g in unmet]
    return "\n".join(rows)
