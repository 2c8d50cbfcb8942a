"""`lackjail run`: validate a program and run it in the jail."""

import click

from lackjail.cli.common import EXIT_HELP, emit_json, exit_code, leave, read_source
from lackjail.cli.jail import open_jail
from lackjail.cli.options import isolation_option, program_options, setup
from lackjail.cli.output import detail, print_result


@click.command(epilog=EXIT_HELP)
@click.argument("file")
@program_options(limits=True)
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
@isolation_option()
def run(file, shared, stream, dry_run, yes, mode, isolation):
    """Run the lackpy program FILE ('-' for stdin) in the jail.

    Prints what the program printed and the value of its last expression;
    --json prints one object (status, value, output, errors, trace,
    isolation, stats), also for bad input.

    \b
    Examples:
      lackjail run examples/hello.lackpy --param name=world
      echo 'sum([1, 2, 3])' | lackjail run -
      lackjail run examples/count_lines.lackpy --kit readonly --json
      lackjail run examples/rename_todo.lackpy --kit files --param path=examples/notes.txt --dry-run
    """
    chosen = setup(shared)
    source, filename = read_source(file)
    approve = None
    if chosen.kit.names:
        from lackjail.cli.approve import terminal_approver

        approve = terminal_approver(yes)
    with open_jail(chosen, mode=mode, isolation=isolation, approve=approve) as jail:
        if stream:
            result = None
            for event in jail.stream(source, chosen.params, dry_run=dry_run):
                emit_json(event)
                if event.get("event") == "result":
                    result = event
            leave(exit_code(result["status"]))
        result = jail.run(source, chosen.params, dry_run=dry_run)
    if shared.as_json:
        emit_json(result.to_dict())
    else:
        print_result(result, filename)
        stats = result.stats
        detail(
            f"{result.status} in {stats.get('wall_ms', 0):.1f} ms wall, "
            f"{stats.get('cpu_ms', 0):.1f}"
            f" ms CPU; {stats.get('tool_calls', 0)} tool calls; isolation {result.isolation}, "
            f"mode {result.mode}; policy {chosen.policy.name}, kit {chosen.kit.name}"
        )
    leave(exit_code(result.status))
