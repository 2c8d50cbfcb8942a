"""What a person sees of a run: its output, value, diff and errors, never raw escape sequences.

Everything here was chosen by the program (or the workspace), so it goes
through `terminal_safe` before it reaches a terminal; --json output is JSON
and escapes control characters itself.
"""

import json

import click

from lackjail.jsondata import jsonable
from lackjail.terminal import terminal_safe


def error_line(error: dict, filename: str, status: str = "") -> str:
    """`file:line:col: [status: ]message [rule]` for an error of a run or a validation."""
    from lackjail.checker import format_error

    message = f"{status}: {error['message']}" if status else error["message"]
    return format_error({**error, "message": message}, filename)


def print_result(result, filename: str) -> None:
    """A run's printed output and value (stdout), its diff with --dry-run, its errors (stderr)."""
    if result.output:
        click.echo(
            terminal_safe(result.output, multiline=True), nl=not result.output.endswith("\n")
        )
    if result.status == "ok":
        if result.value is not None:
            click.echo(terminal_safe(json.dumps(jsonable(result.value), ensure_ascii=False)))
        if result.diff:
            click.echo(terminal_safe(result.diff, multiline=True), nl=False)
        return
    for err in result.errors:
        click.echo(error_line(err, filename, result.status), err=True)
