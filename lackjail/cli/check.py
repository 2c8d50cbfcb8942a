"""`lackjail check` (validate programs, nothing runs) and `lackjail spec` (print the language)."""

import json
import os

import click

from lackjail.cli.common import EXIT_BAD, EXIT_HELP, EXIT_OK, Command, leave
from lackjail.cli.options import program_options, setup
from lackjail.cli.output import detail, error_line, note, verdict
from lackjail.lang import LANGUAGES
from lackjail.lang import spec as language_spec
from lackjail.lang.describe import render


@click.command(cls=Command, epilog=EXIT_HELP)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...|-")
@program_options()
def check(paths, shared):
    """Validate lackpy programs without running them, exactly as `run` would.

    PATHs are files, folders (searched for **/*.lackpy, hidden ones skipped,
    as the gate does) or '-' for stdin. Prints `file:line:col: message [rule]`
    per error (line and column 1-based); exit 0 when every program is valid,
    2 when any is rejected or cannot be read, or the options are bad.

    \b
    Examples:
      lackjail check examples/hello.lackpy --param name=world
      lackjail check --kit readonly examples
      echo 'len([1, 2])' | lackjail check - --json
    """
    from lackjail.gate.judge import ReadError, read_program
    from lackjail.infer.sanitize import place_back, unfence

    chosen = setup(shared)
    limit = chosen.policy.limits.program_bytes
    reports = []
    for path, name in _programs(paths):
        try:
            source = read_program(path, limit)
        except ReadError as exc:  # one unreadable file does not stop the others
            error = {"message": str(exc), "rule": exc.rule}
            reports.append(
                {"file": name, "valid": False, "errors": [error], "calls": [], "variables": []}
            )
            if not shared.as_json:
                click.echo(f"lackjail check: {error_line(error, name)}", err=True)
            continue
        code, above = unfence(source)  # a fenced program, as `run` takes it
        report = place_back(chosen.checker.check(code, chosen.params).to_dict(), above)
        reports.append({"file": name, **report})
        if not shared.as_json:
            if report["valid"]:
                detail(f"{verdict('ok', True, err=True)} {name}")
            for error in report["errors"]:
                click.echo(error_line(error, name))
    valid = all(report["valid"] for report in reports)
    if shared.as_json:
        click.echo(json.dumps({"valid": valid, "files": reports}, indent=2))
    elif valid:
        count = len(reports)
        plural = "" if count == 1 else "s"
        note(
            f"lackjail check: {count} program{plural} valid"
            if count
            else "lackjail check: no programs found"
        )
    leave(EXIT_OK if valid else EXIT_BAD)


def _programs(paths):
    """(path, name) of each program: files as given, folders walked as the gate walks them."""
    from lackjail.gate import DEFAULT_GLOB, DiscoveryError, discover

    for path in paths:
        if path != "-" and os.path.isdir(path):
            try:
                found = discover([path], DEFAULT_GLOB)
            except DiscoveryError as exc:
                raise click.BadParameter(str(exc), param_hint="PATH") from None
            yield from ((f.path, f.name) for f in found)
        else:
            yield path, "<stdin>" if path == "-" else path


@click.command(cls=Command, epilog=EXIT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the spec as JSON.")
@click.option(
    "--language",
    type=click.Choice(LANGUAGES),
    default="lackpy",
    show_default=True,
    help="The language level to describe.",
)
def spec(as_json, language):
    """Print the language: nodes, builtins, forbidden names, rules and limits.

    \b
    Examples:
      lackjail spec
      lackjail spec --language extended
      lackjail spec --json | jq '.builtins'
    """
    data = language_spec(language)
    click.echo(json.dumps(data, indent=2) if as_json else render(data))
