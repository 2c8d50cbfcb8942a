"""`lackjail gate`: the CI gate over many program files, with text, JSON, JUnit and SARIF reports."""

import os
import sys

import click

from lackjail.atomicfile import write_text_atomic
from lackjail.cli.common import leave
from lackjail.cli.options import program_options, setup
from lackjail.gate import DEFAULT_GLOB, FORMATS, DiscoveryError, Gate, discover, render
from lackjail.terminal import terminal_safe

GATE_HELP = (
    "Exit codes: 0 every program passed; 1 a program failed the gate (rejected, or failed when run); "
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
    """Write TEXT to OUTPUT whole or not at all (a half-written report would mislead CI)."""
    try:
        _output_folder(output)
        write_text_atomic(output, text)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {output!r}: {exc.strerror or exc}", param_hint="--output"
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


@click.command(epilog=GATE_HELP)
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option(
    "--glob",
    "pattern",
    default=DEFAULT_GLOB,
    show_default=True,
    help="Which files under a folder PATH are programs ('**/' spans folders); a file PATH always counts.",
)
@click.option(
    "--run",
    is_flag=True,
    help="Also run each valid program once in the jail; a failed run fails the gate.",
)
@program_options(policy="ci")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Report format [text].")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    help="Write the report to FILE (atomically); a junit or sarif report also prints the text one.",
)
def gate(paths, pattern, run, kit, policy, params, workspace, language, as_json, fmt, output):
    """Check lackpy programs for CI: validate each (and with --run, run each in the jail).

    PATHs are files or folders [.]; folders are searched with --glob, skipping
    hidden folders and files. Each program is reported valid, rejected (each
    error with its rule, line and column) or run with its verdict, duration
    and tool calls. Rejected programs never reach the jail.
    """
    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json and --format {fmt} disagree; pass one of them")
    fmt = "json" if as_json else fmt or "text"
    if output:
        _output_folder(output)
    chosen = setup(policy, kit, params, workspace, language)
    try:
        programs = discover(paths, pattern)
    except DiscoveryError as exc:
        raise click.UsageError(str(exc)) from None
    if not programs and fmt != "json":
        click.echo(
            f"lackjail gate: no programs found (glob {pattern!r} under {', '.join(paths) or '.'})",
            err=True,
        )
    progress = _progress(len(programs), quiet=fmt == "json")
    jail = None
    if run and programs:
        from lackjail.cli.jail import open_jail

        jail = open_jail(chosen, workers=2)
    try:
        checker = Gate(chosen.policy, chosen.kit, chosen.params, jail=jail, language=language)
        if progress is None:
            report = checker.run_all(programs)
        else:
            with progress:
                task = progress.add_task("", total=len(programs))
                report = checker.run_all(
                    programs,
                    on_done=lambda r: progress.update(
                        task, advance=1, description=terminal_safe(r.name)
                    ),
                )
    finally:
        if jail is not None:
            jail.close()
    text = render(report, fmt)
    if output:
        _write(output, text)
        if fmt in ("junit", "sarif"):
            click.echo(render(report, "text"), nl=False)
    else:
        click.echo(text, nl=False)
    leave(report.exit_code)
