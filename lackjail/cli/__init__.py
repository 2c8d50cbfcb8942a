"""The `lackjail` command: one click group; each subcommand lives in its own module.

Exit codes, the same for every subcommand: 0 ok; 1 the program ran and failed
(error, timeout, limit, ...); 2 rejected or bad input.
"""

import importlib
import sys

import click

from lackjail.cli.common import EXIT_HELP

# (module, attribute) of every subcommand, imported when the group is built.
COMMANDS = [
    ("lackjail.cli.run", "run"),
    ("lackjail.cli.check", "check"),
    ("lackjail.cli.check", "spec"),
    ("lackjail.cli.kit", "kit"),
    ("lackjail.cli.delegate", "delegate"),
    ("lackjail.cli.delegate", "template"),
    ("lackjail.cli.gate", "gate"),
    ("lackjail.cli.serve", "serve"),
    ("lackjail.cli.doctor", "doctor"),
    ("lackjail.cli.bench", "bench"),
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_HELP)
@click.version_option(package_name="lackjail")
@click.option("--debug", is_flag=True, help="Show full tracebacks on internal errors.")
@click.pass_context
def cli(ctx, debug):
    """Run agent-written lackpy programs in a jail."""
    ctx.ensure_object(dict)["debug"] = debug


for _module, _name in COMMANDS:
    cli.add_command(getattr(importlib.import_module(_module), _name))


def main():
    """Console entry point: bad input exits 2 with one line, never a traceback."""
    debug = "--debug" in sys.argv[1:]
    try:
        rc = cli.main(standalone_mode=False, prog_name="lackjail")
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code in (1, 2) else exc.exit_code)
    except SystemExit:
        raise
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:  # the last net: one line unless --debug
        if debug:
            raise
        click.echo(
            f"lackjail: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True
        )
        sys.exit(1)
    sys.exit(rc if isinstance(rc, int) else 0)
