"""Helpers shared by the subcommands: exit codes and reading program files."""

import sys

import click

from lackjail.jsondata import jsonable

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


def parse_params(pairs):
    """`--param k=v` pairs: the value is a JSON scalar when it parses as one, else a string."""
    import json

    params = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not NAME=VALUE", param_hint="--param")
        try:
            value = json.loads(raw)
            if isinstance(value, (list, dict)):
                value = raw
        except ValueError:
            value = raw
        params[name] = value
    return params


def emit_json(obj):
    import json

    click.echo(json.dumps(jsonable(obj), ensure_ascii=False))


def jail_options(fn):
    """The options every command that runs programs shares: --kit, --policy, --param, --workspace."""
    for option in reversed(
        [
            click.option(
                "--kit",
                help="Tools the program may call: a kit name, or tool names separated by commas.",
            ),
            click.option(
                "--policy",
                default="default",
                show_default=True,
                help="A bundled policy name or a .toml path.",
            ),
            click.option(
                "--param",
                "params",
                multiple=True,
                metavar="NAME=VALUE",
                help="A top-level name for the program; VALUE is a JSON scalar if it parses, else a string.",
            ),
            click.option(
                "--workspace",
                type=click.Path(file_okay=False),
                help="Folder the file tools are confined to [cwd].",
            ),
        ]
    ):
        fn = option(fn)
    return fn
