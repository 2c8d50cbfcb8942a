"""`lackjail run`: validate a program and run it in the jail."""

import json

import click

from lackjail.cli.common import emit_json, exit_code, jsonable, leave, parse_params, read_source
from lackjail.cli.jail import open_jail
from lackjail.cli.options import jail_options


def _print_human(result, filename):
    if result.output:
        click.echo(result.output, nl=not result.output.endswith("\n"))
    if result.status == "ok":
        if result.value is not None:
            click.echo(json.dumps(jsonable(result.value), ensure_ascii=False))
        if result.diff:
            click.echo(result.diff, nl=False)
        return
    for err in result.errors:
        where = (
            f"{filename}:{err['line']}:{err.get('col') or 1}: "
            if err.get("line")
            else f"{filename}: "
        )
        click.echo(f"{where}{result.status}: {err['message']}", err=True)


@click.command()
@click.argument("file")
@jail_options
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object: status, value, output, errors, trace, isolation, stats.",
)
@click.option(
    "--stream", is_flag=True, help="Print NDJSON events as they happen; the last one is the result."
)
@click.option(
    "--dry-run", is_flag=True, help="Run, but commit no writes: show the diff they would make."
)
@click.option("--yes", is_flag=True, help="Approve every tool call that needs approval.")
@click.option(
    "--mode",
    type=click.Choice(["fresh", "reuse"]),
    help="fresh: a new process per run; reuse: faster, says so.",
)
@click.option(
    "--isolation",
    type=click.Choice(["nsjail", "seccomp", "any"]),
    help="Override the policy's isolation demand.",
)
def run(file, kit, policy, params, workspace, as_json, stream, dry_run, yes, mode, isolation):
    """Run the lackpy program FILE ('-' for stdin) in the jail.

    Exit 0 when it ran and succeeded, 1 when it ran and failed (error, timeout,
    limit, ...), 2 when it was rejected or the input was bad.
    """
    source, filename = read_source(file)
    values = parse_params(params)
    approve = None
    if kit:
        from lackjail.cli.approve import terminal_approver

        approve = terminal_approver(yes)
    with open_jail(policy, kit, workspace, mode=mode, isolation=isolation, approve=approve) as jail:
        if stream:
            result = None
            for event in jail.stream(source, values, dry_run=dry_run):
                emit_json(event)
                if event.get("event") == "result":
                    result = event
            leave(exit_code(result["status"]))
        result = jail.run(source, values, dry_run=dry_run)
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_human(result, filename)
    leave(exit_code(result.status))
