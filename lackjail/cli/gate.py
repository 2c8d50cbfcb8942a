"""`lackjail gate`: the CI gate over many program files; text, JSON, JUnit, SARIF or GitHub."""

import os
import sys

import click

from lackjail.cli.common import Command, leave
from lackjail.cli.options import program_options, setup
from lackjail.cli.output import note, verbosity, verdict
from lackjail.gate import DEFAULT_GLOB, FORMATS, Gate, discover, render
from lackjail.gate.report import (
    program_lines,
    render_text,
    rule_matches,
    select_rules,
    summary_lines,
    unknown_rules,
)
from lackjail.terminal import terminal_safe
from lackjail.workspace.hostfs import explain, write_file

GATE_HELP = (
    "Exit codes: 0 every program passed; 1 a program failed the gate (rejected, or failed when "
    "run); "
    "2 bad input (path, glob, policy, kit, format, output)."
)


def _output_folder(output):
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise click.BadParameter(
            f"folder {folder!r} does not exist; create it or pick another file",
            param_hint="--output",
        )
    return folder


def _write(output: str, text: str) -> None:
    """Write TEXT to OUTPUT whole or not at all (a half-written report would mislead CI), through
    the door: beneath the folder opened once, the mode set on the temporary file's descriptor."""
    try:
        _output_folder(output)
        write_file(output, text.encode("utf-8"))
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {output!r}: {explain(exc)}", param_hint="--output"
        ) from None


def _progress(count: int, quiet: bool):
    """A rich progress bar on stderr when it is a terminal; None otherwise (CI logs, --json)."""
    if quiet or count == 0 or not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("gate"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}", markup=False),  # file names are not rich markup
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


@click.command(cls=Command, epilog=GATE_HELP)
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option(
    "--glob",
    "pattern",
    default=DEFAULT_GLOB,
    show_default=True,
    help="Which files under a folder PATH are programs ('**/' spans folders); a file PATH "
    "always counts.",
)
@click.option(
    "--run",
    is_flag=True,
    help="Also run each valid program once in the jail; a failed run fails the gate.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --run: run, but write nothing to the checkout; each program's diff is reported.",
)
@program_options(policy="ci", limits=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Report format [text].")
@click.option(
    "--select",
    multiple=True,
    metavar="RULE",
    help="Report only these rules (repeatable, or comma-separated); 'forbidden-' or 'verdict/' "
    "selects a family. `lackjail spec` lists the rule ids.",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="RULE",
    help="Do not report these rules (as --select); a program left with no finding passes.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    help="Write the report to FILE (atomically); a junit or sarif report also prints the text one.",
)
def gate(paths, pattern, run, dry_run, shared, fmt, select, ignore, output):
    """Check lackpy programs for CI: validate each (and with --run, run each in the jail).

    PATHs are files or folders [.]; folders are searched with --glob, skipping
    hidden folders and files. Each program is reported valid, rejected (each
    error with its rule, line and column) or run with its verdict, duration
    and tool calls, as soon as it is judged; then the counts per rule and a
    summary. Rejected programs never reach the jail. --format github prints
    GitHub Actions annotations; sarif is for code scanning.

    \b
    Examples:
      lackjail gate                                   # every **/*.lackpy under .
      lackjail gate --run --kit readonly examples
      lackjail gate --format sarif -o gate.sarif src
      lackjail gate --format github --ignore verdict/timeout
      lackjail gate --run --dry-run --kit files   # what the programs would write
    """
    if shared.as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json and --format {fmt} disagree; pass one of them")
    fmt = "json" if shared.as_json else fmt or "text"
    select, ignore = _rule_list(select), _rule_list(ignore)
    _check_rules(select, ignore, run)
    if dry_run and not run:
        raise click.UsageError("--dry-run needs --run: without it nothing runs or writes")
    if output:
        _output_folder(output)
    chosen = setup(shared)
    programs = discover(paths, pattern)
    if not programs and fmt != "json":
        note(f"lackjail gate: no programs found (glob {pattern!r} under {', '.join(paths) or '.'})")
    live = fmt == "text" and not output  # each program's lines as soon as it is judged
    quiet = fmt == "json" or verbosity() < 0 or (live and sys.stdout.isatty())
    progress = _progress(len(programs), quiet=quiet)  # not over live lines on the same terminal
    jail = None
    if run and programs:
        from lackjail.cli.jail import open_jail

        jail = open_jail(chosen, workers=2)

    def done(program):
        select_rules(program, select, ignore)
        if live:
            click.echo("\n".join(program_lines(program, verdict)))
        if progress is not None:
            progress.update(task, advance=1, description=terminal_safe(program.name))

    try:
        judge = Gate(
            chosen.policy,
            chosen.kit,
            chosen.params,
            jail=jail,
            language=chosen.language,
            audience="cli",
            dry_run=dry_run,
        )
        if progress is None:
            report = judge.run_all(programs, on_done=done)
        else:
            with progress:
                task = progress.add_task("", total=len(programs))
                report = judge.run_all(programs, on_done=done)
    finally:
        if jail is not None:
            jail.close()
    if live:
        click.echo("\n".join(summary_lines(report)))
        leave(report.exit_code)
    text = render(report, fmt)
    if output:
        _write(output, text)
        if fmt in ("junit", "sarif", "github"):
            click.echo(render_text(report, verdict), nl=False)
    else:
        click.echo(text, nl=False)
    leave(report.exit_code)


def _rule_list(values) -> tuple:
    return tuple(r.strip() for value in values for r in value.split(",") if r.strip())


def _check_rules(select: tuple, ignore: tuple, run: bool) -> None:
    """Usage errors (exit 2) for a rule id or family no rule has, and for selecting run verdicts
    without --run: either would quietly pass every program."""
    from lackjail.gate.sarif import known_rules

    known = [rule for rule, _, _ in known_rules()]
    for option, patterns in (("--select", select), ("--ignore", ignore)):
        unknown = unknown_rules(patterns, known)
        if unknown:
            raise click.BadParameter(
                f"{unknown[0]!r} is not a rule id nor a family of them ('forbidden-', "
                "'verdict/'); `lackjail spec` lists the rule ids (`lackjail spec --json`: "
                "rules[].id), and run verdicts are verdict/<status>",
                param_hint=option,
            )
    verdicts = [p for p in select if rule_matches(p, ("verdict/",))]
    if verdicts and not run:
        raise click.UsageError(
            f"--select {verdicts[0]} selects what a run found, but without --run nothing runs "
            "and every program would pass; add --run, or select validator rules"
        )
