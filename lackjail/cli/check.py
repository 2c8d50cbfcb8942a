"""`lackjail check` (validate programs, nothing runs) and `lackjail spec` (print the language)."""

import json

import click

from lackjail.cli.common import EXIT_BAD, EXIT_HELP, EXIT_OK, leave, read_source
from lackjail.lang import spec as language_spec
from lackjail.lang import validate
from lackjail.lang.describe import render


@click.command(epilog=EXIT_HELP)
@click.argument("files", nargs=-1, required=True, metavar="FILE...|-")
@click.option(
    "--kit",
    default="",
    metavar="KIT|A,B",
    help="The tools programs may call: a kit name (as for run) or comma-separated tool names.",
)
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME",
    help="A parameter name injected by the caller (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def check(files, kit, params, as_json):
    """Validate lackpy programs without running them.

    Prints `file:line:col: message` per error (column 1-based); exit 0 when
    every program is valid, 2 when any is rejected or cannot be read.
    """
    tools = _tool_names(kit)
    reports = []
    for path in files:
        try:
            source, name = read_source(path)
        except click.UsageError as exc:  # one unreadable file does not stop the others
            reports.append(
                {
                    "file": path,
                    "valid": False,
                    "errors": [{"message": exc.message, "rule": "read"}],
                    "calls": [],
                    "variables": [],
                }
            )
            if not as_json:
                click.echo(f"lackjail check: {exc.message}", err=True)
            continue
        result = validate(source, tools=tools, params=params)
        reports.append({"file": name, **result.to_dict()})
        if not as_json:
            for error in result.errors:
                click.echo(error.format(name))
    valid = all(report["valid"] for report in reports)
    if as_json:
        click.echo(json.dumps({"valid": valid, "files": reports}, indent=2))
    leave(EXIT_OK if valid else EXIT_BAD)


def _tool_names(kit: str) -> tuple:
    """The names a kit spec makes callable: a kit (bundled or in .lackjail/kits) is
    resolved; names that are no kit or known tool are taken as given, since checking
    runs nothing and may name tools of another host."""
    if not kit:
        return ()
    from lackjail.kit import KitError, resolve_kit

    try:
        return tuple(resolve_kit(kit, workspace=".").names)
    except KitError:
        return tuple(name.strip() for name in kit.split(",") if name.strip())


@click.command(epilog=EXIT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the spec as JSON.")
def spec(as_json):
    """Print the lackpy language: nodes, builtins, forbidden names, rules and limits."""
    data = language_spec()
    click.echo(json.dumps(data, indent=2) if as_json else render(data))
