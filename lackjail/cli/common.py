"""Helpers shared by the subcommands: exit codes, reading programs, parameters, JSON output."""

import errno
import json
import sys
from typing import NoReturn

import click

from lackjail.errors import LackjailError
from lackjail.jsondata import dumps
from lackjail.terminal import terminal_safe

MAX_PROGRAM_FILE_BYTES = 16 << 20  # a program file read whole; the policy's cap is far lower
EXIT_OK, EXIT_FAILED, EXIT_BAD, EXIT_INTERRUPTED = 0, 1, 2, 130

EXIT_HELP = (
    "Exit codes: 0 ok; 1 the program ran and failed; 2 rejected or bad input; 130 interrupted."
)


class Failure(click.ClickException):
    """A LackjailError leaving a command: one `Error:` line and the error's own exit code.
    Bad input and host failures become exit codes here and nowhere else."""

    def __init__(self, error: LackjailError):
        super().__init__(str(error))
        self.exit_code = error.exit_code  # type: ignore[misc]  # click's is a class default


def _failing(invoke):
    def run(self, ctx: click.Context):
        try:
            return invoke(self, ctx)
        except LackjailError as exc:
            raise Failure(exc) from None

    return run


def output_flags() -> list[click.Option]:
    """-q, -v and --debug: on the `lackjail` group, and on every subcommand after its name."""
    return [
        click.Option(["-q", "--quiet"], is_flag=True, help="Print only results and errors."),
        click.Option(
            ["-v", "--verbose"], is_flag=True, help="Also print details: timings, isolation."
        ),
        click.Option(["--debug"], is_flag=True, help="Show full tracebacks on internal errors."),
    ]


def set_output(ctx: click.Context, quiet: bool, verbose: bool, debug: bool) -> None:
    """Note the output flags where `output.verbosity` reads them: the root context. A flag
    given after the subcommand adds to those given before it."""
    shared = ctx.find_root().ensure_object(dict)
    before = shared.get("verbosity", 0)
    if (quiet and verbose) or (quiet and before > 0) or (verbose and before < 0):
        raise click.UsageError("--quiet and --verbose disagree; pass one of them")
    shared["verbosity"] = -1 if quiet else 1 if verbose else before
    shared["debug"] = shared.get("debug", False) or debug


class Command(click.Command):
    """Every lackjail subcommand: it takes -q/-v/--debug after its name too, and a
    LackjailError it lets go becomes a `Failure`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params += output_flags()

    def invoke(self, ctx: click.Context):
        flags = [ctx.params.pop(name, False) for name in ("quiet", "verbose", "debug")]
        set_output(ctx, *flags)
        return _failing(click.Command.invoke)(self, ctx)


class Group(click.Group):
    """A group of subcommands (the same, and its subcommands are `Command`s)."""

    command_class = Command
    invoke = _failing(click.Group.invoke)


def leave(code: int) -> NoReturn:
    """End the command with exit CODE (`main` turns it into the process's exit status)."""
    raise click.exceptions.Exit(code)


def exit_code(status: str) -> int:
    """The exit code of a run that ended with STATUS (the library's status table decides)."""
    from lackjail.protocol import exit_code as status_exit_code

    return status_exit_code(status)


def result_object(status: str, message: str, wall_ms: float = 0.0, **known) -> dict:
    """A run's result for a program that never ran or did not finish (bad input, Ctrl-C): every
    key a finished run's has (`lackjail.api.Result`), neutral unless KNOWN (output, trace,
    isolation, mode) says what happened until then."""
    from lackjail.result import Result

    return Result.failed(status, message, wall_ms, **known).to_dict()


def error_object(message: str) -> str:
    """Bad input as the one JSON object a --json caller parses (the shape of a run's result)."""
    return dumps(result_object("invalid", message))


def read_source(path: str) -> tuple[bytes, str]:
    """Read a program from PATH or stdin ('-'); a read failure is bad input (exit 2). A program
    file is a regular file reached through no symlink (one could name a token file, /dev/zero
    or a FIFO that never answers); past MAX_PROGRAM_FILE_BYTES it is not read on."""
    from lackjail.workspace.hostfs import explain, read_file

    try:
        if path == "-":
            return sys.stdin.buffer.read(), "<stdin>"
        return read_file(path, MAX_PROGRAM_FILE_BYTES), path
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            message = f"it is over {MAX_PROGRAM_FILE_BYTES} bytes, not a program"
        else:
            message = explain(exc)
        raise click.UsageError(f"cannot read {terminal_safe(path)}: {message}") from None


def parse_params(pairs) -> dict:
    """`--param NAME=VALUE` pairs: VALUE is parsed as JSON when it is valid JSON, else a string.

    `n=3` is the int 3, `l=[1,2]` a list, `d={"a":1}` a dict, `s="x"` the string x,
    `path=notes.txt` the string "notes.txt".
    """
    params = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--param")
        try:
            params[name] = json.loads(raw)
        except (ValueError, RecursionError):
            params[name] = raw
    return params


def emit_json(obj) -> None:
    click.echo(dumps(obj))
