"""Helpers shared by the subcommands: exit codes and reading program files."""

import sys

import click

EXIT_OK, EXIT_FAILED, EXIT_BAD = 0, 1, 2

EXIT_HELP = "Exit codes: 0 ok; 1 the program ran and failed; 2 rejected or bad input."


def read_source(path):
    """Read a program from PATH or stdin ('-'); a read failure is bad input (exit 2)."""
    try:
        if path == "-":
            return sys.stdin.buffer.read(), "<stdin>"
        with open(path, "rb") as fh:
            return fh.read(), path
    except OSError as exc:
        raise click.UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
