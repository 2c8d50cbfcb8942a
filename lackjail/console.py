"""The `lackjail` console command. `lackjail run` is handed to the user's resident server when
one answers (`lackjail.server`: lackjail imported and a jail started there already); else it
runs here, its jail started first (`pool.early`), before the command line's modules are
imported, so that the two starts overlap, and a server is started for the next command. Every
other command runs as `lackjail.cli.main` would run it."""

import sys

# what may stand before the subcommand's name (the group's own flags)
GROUP_FLAGS = ("-q", "--quiet", "-v", "--verbose", "--debug")


def main() -> None:
    args = sys.argv[1:]
    if not runs_a_program(args):
        from lackjail.cli import main as cli_main

        cli_main()
        return
    from lackjail.server import client

    start = client.enabled() and client.hand_over(args) != client.OFF  # returns if not taken
    from lackjail.pool import early

    early.begin()
    try:
        from lackjail.cli import command, leave_process

        code = command(args)
    finally:
        early.discard()  # a command that ended before its jail started leaves no early one
    if start:
        from lackjail.server.serve import start_if_wanted

        start_if_wanted()
    leave_process(code, fast=True)


def runs_a_program(args: list[str]) -> bool:
    """Is ARGS a `lackjail run` (not its --help)?"""
    rest = [a for a in args if a not in GROUP_FLAGS]
    return rest[:1] == ["run"] and not {"-h", "--help"} & set(args)
