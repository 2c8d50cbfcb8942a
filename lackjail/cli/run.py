"""`lackjail run`: validate a program and run it in the jail.

Every mode follows the run's events as they happen (text mode shows printed
output at once), so Ctrl-C keeps what the program did until then.
"""

import threading
import time

import click

from lackjail.api import Result
from lackjail.cli.common import (
    EXIT_HELP,
    Command,
    emit_json,
    exit_code,
    leave,
    read_source,
    result_object,
)
from lackjail.cli.jail import open_jail
from lackjail.cli.options import isolation_option, program_options, setup
from lackjail.cli.output import detail, end_output, print_result, show_output
from lackjail.protocol import SEED_MAX


@click.command(cls=Command, epilog=EXIT_HELP)
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
    "--seed",
    type=click.IntRange(0, SEED_MAX),
    help="Seed the program's `random` (language python): the same seed draws the same numbers.",
)
@click.option(
    "--mode",
    type=click.Choice(["fresh", "reuse"]),
    help="fresh: a new process per run; reuse: faster, says so.",
)
@isolation_option()
def run(file, shared, stream, dry_run, yes, seed, mode, isolation):
    """Run the lackpy program FILE ('-' for stdin) in the jail.

    A program wrapped in a Markdown code fence (```python ... ```, with prose
    around it or not) runs as the code inside; errors keep FILE's line numbers.

    Prints what the program prints as it prints it, then the value of its
    last expression; --json prints one object (status, value, output,
    errors, trace, isolation, mode, stats, written, diff), also for bad
    input and for Ctrl-C (status "interrupted", with what ran until then).

    \b
    Examples:
      lackjail run examples/hello.lackpy --param name=world
      echo 'sum([1, 2, 3])' | lackjail run -
      lackjail run examples/count_lines.lackpy --kit readonly --json
      lackjail run examples/rename_todo.lackpy --kit files --param path=examples/notes.txt --dry-run
    """
    from lackjail.infer.sanitize import place_back, unfence

    chosen = setup(shared)
    source, filename = read_source(file)
    source, above = unfence(source)  # a program in a Markdown fence, as models write them
    approve, stop = None, threading.Event()  # set on Ctrl-C: a pending question is denied
    if chosen.kit.names:
        from lackjail.cli.approve import terminal_approver

        approve = terminal_approver(yes, stop)
    text = not (stream or shared.as_json)
    with open_jail(chosen, mode=mode, isolation=isolation, approve=approve) as jail:
        if seed is not None and jail.checker.language != "python":
            raise click.UsageError(
                f"--seed seeds `random`, which only --language python has "
                f"(this run's level is {jail.checker.language!r})"
            )
        started, output, trace, finished = time.perf_counter(), [], [], None
        try:
            for event in jail.stream(source, chosen.params, seed=seed, dry_run=dry_run):
                if isinstance(event, Result):  # the last: noted before it is shown
                    placed = place_back(event.to_dict(), above)  # lines of what was sent
                    finished, event = Result(**placed), {"event": "result", **placed}
                kind = event["event"]  # noted before it is shown: Ctrl-C may come next
                if kind == "output":
                    output.append(event["text"])
                elif kind == "call":
                    trace.append({k: v for k, v in event.items() if k != "event"})
                if stream:
                    emit_json(event)
                elif text and kind == "output":
                    show_output(event["text"])
        except KeyboardInterrupt:  # keep what ran until now; `main` says so and exits 130
            stop.set()
            if text:
                end_output("".join(output))
            elif finished is not None:  # it ended just before: its result stands
                if not stream:
                    emit_json(finished.to_dict())
            else:
                stopped = result_object(
                    "interrupted",
                    "interrupted (Ctrl-C): output and trace are what the program did until then",
                    wall_ms=(time.perf_counter() - started) * 1000,
                    output="".join(output),
                    trace=trace,
                    isolation=jail.isolation,
                    mode=jail.mode,
                )
                emit_json({"event": "result", **stopped} if stream else stopped)
            raise
    result = finished
    if shared.as_json and not stream:
        emit_json(result.to_dict())
    elif text:
        print_result(result, filename, shown=True)
        stats, calls = result.stats, result.stats["tool_calls"]
        detail(
            f"{result.status} in {stats['wall_ms']:.1f} ms wall, {stats['cpu_ms']:.1f} ms CPU; "
            f"{calls} tool call{'' if calls == 1 else 's'}; isolation {result.isolation}, "
            f"mode {result.mode}; policy {chosen.policy.name}, kit {chosen.kit.name}"
        )
    leave(exit_code(result.status))
