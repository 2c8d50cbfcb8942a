"""`lackjail bench`: print the benchmark figures (see lackjail/bench.py)."""

import click

from lackjail.cli.common import emit_json


@click.command()
@click.option("-n", "runs", default=300, show_default=True, help="Runs per latency figure.")
@click.option(
    "--load", is_flag=True, help="Also run the load benchmark: 10,000 programs from 32 callers."
)
@click.option(
    "--isolation",
    type=click.Choice(["nsjail", "seccomp", "any"]),
    help="Override the isolation level.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
def bench(runs, load, isolation, as_json):
    """Measure validation, jailed runs (fresh and reuse), throughput, cold start and RSS."""
    from lackjail import bench as b

    figures = {}
    sections = [
        b.validate_figures,
        b.exec_baseline,
        lambda: b.jail_figures(runs, isolation),
        b.tool_call_figures,
    ]
    if load:
        sections.append(b.load_figures)
    for section in sections:
        part = section()
        figures.update(part)
        if not as_json:
            for key, value in part.items():
                shown = f"{value:,.1f}" if isinstance(value, float) else str(value)
                click.echo(f"{key:<58} {shown:>12}")
    if as_json:
        emit_json(figures)
