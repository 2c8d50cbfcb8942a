"""What a person sees of a run: its output, value, diff and errors, never raw escape sequences.

Everything here was chosen by the program (or the workspace), so it goes
through `terminal_safe` before it reaches a terminal; --json output is JSON
and escapes control characters itself.
"""

import json
import os
import sys

import click

from lackjail.jsondata import jsonable
from lackjail.terminal import terminal_safe


def verbosity() -> int:
    """-1 with --quiet, 1 with --verbose, else 0 (also outside the `lackjail` group)."""
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    return (root.obj or {}).get("verbosity", 0) if root is not None else 0


def note(message: str) -> None:
    """A note for a person on stderr (not with --quiet)."""
    if verbosity() >= 0:
        click.echo(terminal_safe(message), err=True)


def detail(message: str) -> None:
    """A detail on stderr, only with --verbose."""
    if verbosity() > 0:
        click.echo(terminal_safe(message), err=True)


def colour_enabled(err: bool = False) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    stream = sys.stderr if err else sys.stdout
    return not os.environ.get("NO_COLOR") and stream.isatty()


def verdict(word: str, good: bool, err: bool = False) -> str:
    """WORD (PASS, FAIL, ok, ...) in green or red when colour is enabled."""
    if not colour_enabled(err):
        return word
    return click.style(word, fg="green" if good else "red", bold=True if not good else None)


def error_line(error: dict, filename: str, status: str = "") -> str:
    """`file:line:col: [status: ]message [rule]` for an error of a run or a validation."""
    from lackjail.checker import format_error

    message = f"{status}: {error['message']}" if status else error["message"]
    return format_error({**error, "message": message}, filename)


def traceback_lines(error: dict, filename: str) -> list[str]:
    """The program's call chain of a run error, outermost first, one `file:line:col: in function`
    line each; nothing for an error that happened at the program's top level."""
    from lackjail.checker import format_error

    frames = error.get("traceback") or []
    omitted = error.get("traceback_omitted", 0)
    if len(frames) < 2 and not omitted:
        return []
    lines = ["  traceback (most recent call last):"]
    if omitted:
        lines.append(f"    ... {omitted} outer calls not shown")
    for frame in frames:
        if frame.get("earlier"):  # its line is in the program of an earlier session run
            place = {"message": f"in {frame['function']}", "line": frame["line"]}
            where = "an earlier run"
        else:
            place, where = {**frame, "message": f"in {frame['function']}"}, filename
        lines.append("    " + format_error(place, where))
    return lines


def show_output(text: str) -> None:
    """Printed output as it arrives (stdout, flushed): a long run shows its progress, and Ctrl-C
    loses nothing that was printed."""
    click.echo(terminal_safe(text, multiline=True), nl=False)


def end_output(output: str) -> None:
    """The newline shown OUTPUT lacks at its end, so what follows starts a line of its own."""
    if output and not output.endswith("\n"):
        click.echo()


def print_result(result, filename: str, shown: bool = False) -> None:
    """A run's printed output (unless SHOWN already as it came) and value (stdout); its diff
    with --dry-run under a heading and its errors (stderr), so stdout holds the value alone."""
    if not shown:
        show_output(result.output)
    end_output(result.output)
    if result.status == "ok":
        if result.value is not None:
            click.echo(terminal_safe(json.dumps(jsonable(result.value), ensure_ascii=False)))
        if result.diff:
            click.echo("dry run: nothing was written; the run would have changed:", err=True)
            click.echo(terminal_safe(result.diff, multiline=True), nl=False, err=True)
        return
    for err in result.errors:
        click.echo(error_line(err, filename, result.status), err=True)
        for line in traceback_lines(err, filename):
            click.echo(line, err=True)
