"""The `lackjail` command: one click group; each subcommand lives in its own module.

Subcommands are imported only when they are invoked (or listed by --help), so
`lackjail run` does not pay for the gate, the MCP SDK or the benchmarks.
Exit codes, the same for every subcommand, are decided in one place: `main`.
"""

import importlib
import os
import sys
import threading
from typing import NoReturn

import click

from lackjail.cli.common import (
    EXIT_BAD,
    EXIT_FAILED,
    EXIT_HELP,
    EXIT_INTERRUPTED,
    Failure,
    Group,
    error_object,
    output_flags,
    set_output,
)
from lackjail.terminal import terminal_safe

# name -> ("module:attribute", one-line summary for --help); imported on first use.
COMMANDS = {
    "run": ("lackjail.cli.run:run", "Run the lackpy program FILE ('-' for stdin) in the jail."),
    "check": ("lackjail.cli.check:check", "Validate lackpy programs without running them."),
    "spec": (
        "lackjail.cli.check:spec",
        "Print the lackpy language: nodes, builtins, rules, limits.",
    ),
    "kit": (
        "lackjail.cli.kit:kit",
        "List, inspect and create kits (the tools a program may call).",
    ),
    "delegate": (
        "lackjail.cli.delegate:delegate",
        "Write a lackpy program for INTENT, validate it, and run it in the jail.",
    ),
    "template": (
        "lackjail.cli.delegate:template",
        "Stored programs that match intents (.lackjail/templates).",
    ),
    "gate": ("lackjail.cli.gate:gate", "Check lackpy programs for CI (and with --run, run each)."),
    "serve": ("lackjail.cli.serve:serve", "Serve lackjail to an MCP client."),
    "server": (
        "lackjail.cli.server:server",
        "The resident server that `lackjail run` hands its commands to (status, stop).",
    ),
    "doctor": ("lackjail.cli.doctor:doctor", "Check what this host supports for jails, and why."),
    "bench": ("lackjail.cli.bench:bench", "Measure validation, jailed runs, throughput and RSS."),
    "batch": ("lackjail.cli.batch:batch", "Run a JSONL file of programs; one result line per id."),
    "init": ("lackjail.cli.project:init", "Create .lackjail/ with a config, a kit and a template."),
    "mcp-config": (
        "lackjail.cli.project:mcp_config",
        "Print the MCP client config block for this checkout.",
    ),
}


class LazyGroup(Group):
    """A group whose subcommands are imported by name when first invoked; `--help` lists them
    from their summaries without importing any."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy
        self.params += output_flags()

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, attribute = self.lazy[cmd_name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, self.lazy[name][1])
            if name in self.lazy
            else (name, self.commands[name].get_short_help_str())
            for name in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_HELP,
)
@click.version_option(None, "-V", "--version", package_name="lackjail")
@click.pass_context
def cli(ctx, quiet, verbose, debug):
    """Run agent-written lackpy programs in a jail.

    \b
    Examples:
      lackjail run examples/hello.lackpy --param name=world
      lackjail check --kit readonly examples/*.lackpy
      lackjail gate --run examples

    Colour marks pass and fail on a terminal (NO_COLOR turns it off). Shell
    completion (kits and policies too): eval "$(_LACKJAIL_COMPLETE=bash_source lackjail)"
    (zsh_source, fish_source for other shells).
    """
    set_output(ctx, quiet, verbose, debug)


def main(argv: list[str] | None = None) -> None:
    """Run the command ARGV (default: the process's arguments) and exit with its code."""
    args = sys.argv[1:] if argv is None else list(argv)
    leave_process(command(args), fast=argv is None)


def command(args: list[str]) -> int:
    """Run the command ARGS; its exit code. The one place that turns outcomes into exit codes.

    A command ends with `leave(code)` (click's Exit); a bad argument is a click
    exception, and so is a `LackjailError` once its command lets it go (`Failure`, with
    the error's own exit code): one line, or one JSON object after --json; Ctrl-C exits
    130; anything else is an internal error (exit 1, one line unless --debug).
    """
    try:
        code = cli.main(args, standalone_mode=False, prog_name="lackjail")
    except click.exceptions.Abort as exc:
        interrupted = isinstance(exc.__context__, KeyboardInterrupt)
        click.echo("interrupted" if interrupted else "aborted", err=True)
        code = EXIT_INTERRUPTED if interrupted else EXIT_BAD
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        code = EXIT_INTERRUPTED
    except click.ClickException as exc:
        exc.message = terminal_safe(exc.message)  # type: ignore[misc]  # messages may quote workspace-chosen names
        if "--json" in args:
            click.echo(error_object(exc.format_message()))
        else:
            exc.show()
        code = (
            exc.exit_code if isinstance(exc, Failure) or exc.exit_code not in (1, 2) else EXIT_BAD
        )
    except BrokenPipeError:
        code = EXIT_FAILED
    except Exception as exc:  # the last net: one line unless --debug
        if "--debug" in args:
            raise
        click.echo(
            f"lackjail: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True
        )
        code = EXIT_FAILED
    return code if isinstance(code, int) else 0


def leave_process(code: int, fast: bool) -> NoReturn:
    """Exit with CODE; when FAST (the console command), without the interpreter's teardown
    once nothing is left to finish."""
    if fast and threading.active_count() == 1:
        _exit_now(code)
    sys.exit(code)


def _exit_now(code: int) -> NoReturn:
    """End the console command without the interpreter's teardown (~30-70 ms of freeing every
    module): only once nothing is left to finish, the command's Jail closed (its supervisor
    thread gone) and no other thread running; the output is flushed first."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a reader gone, or a stream closed: nothing to write
        code = code or EXIT_FAILED
    os._exit(code)
