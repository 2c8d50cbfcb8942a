"""`lackjail server`: the user's resident server, which `lackjail run` hands its commands to."""

import click

from lackjail.cli.common import Group, leave


@click.group(cls=Group)
def server():
    """The user's resident server, which `lackjail run` hands its commands to.

    `lackjail run` starts one, detached, when none answers, and runs its
    command itself that once; the next ones run in the server, which has
    lackjail imported and a jail started already (the same output, exit
    codes, files and working folder as in the command's own process). It
    ends after 10 minutes without a command (LACKJAIL_SERVER_IDLE_S), when
    lackjail's code changed, and on `lackjail server stop`. LACKJAIL_SERVER=0,
    or `[server] enabled = false` in ~/.config/lackjail/config.toml, turns it
    off. Its socket is in $XDG_RUNTIME_DIR/lackjail, else
    ~/.cache/lackjail/server: a folder of the user's alone.

    \b
    Examples:
      lackjail server status
      lackjail server stop
      LACKJAIL_SERVER=0 lackjail run examples/hello.lackpy --param name=world
    """


@server.command()
def status():
    """Say whether the server runs (exit 0) or not (exit 1), and where it listens."""
    from lackjail.server import client, place, wire

    answer = client.ask(wire.PING)
    if answer is None or len(answer) != 2:
        click.echo(f"no server answers in {place.folder_path()}")
        leave(1)
    pid, served = answer
    plural = "" if served == 1 else "s"
    click.echo(f"server {pid} answers in {place.folder_path()}; {served} command{plural} run")


@server.command()
def stop():
    """Stop the server (its commands in flight finish)."""
    from lackjail.server import client, wire

    answer = client.ask(wire.STOP)
    click.echo("stopped the server" if answer is not None else "no server was running")


@server.command(hidden=True)
def serve():
    """Serve in this process (how `lackjail run` starts it, detached)."""
    from lackjail.server.serve import serve as serve_here

    leave(serve_here())
