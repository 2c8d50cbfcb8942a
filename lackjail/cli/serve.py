"""`lackjail serve`: the MCP server over stdio (stdout carries only the protocol) or streamable
HTTP on a loopback address (or, forced, another one), where every request needs the bearer
token of `lackjail.mcptoken`."""

import ipaddress
import threading
from concurrent.futures import Future

import click

from lackjail.cli.common import EXIT_HELP, Command
from lackjail.cli.options import program_options, setup
from lackjail.terminal import terminal_safe


def http_address(value: str | None, allow_remote: bool):
    """(host, port) from HOST:PORT or PORT; loopback only unless ALLOW_REMOTE; never an
    unspecified address (0.0.0.0, ::), which no Host header names."""
    if value is None:
        return None
    host, sep, port = value.rpartition(":")
    host = (host if sep else "") or "127.0.0.1"
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"{value!r} is not HOST:PORT or PORT", param_hint="--http")
    try:
        address = None if host == "localhost" else ipaddress.ip_address(host)
    except ValueError:
        raise click.BadParameter(
            f"{host!r} is not an IP address or 'localhost'", param_hint="--http"
        ) from None
    if address is not None and address.is_unspecified:
        raise click.BadParameter(
            f"{host} is every address: requests are checked against the address they name, so "
            "bind the one clients use (e.g. 192.168.1.2:8765)",
            param_hint="--http",
        )
    loopback = address is None or address.is_loopback
    if not loopback and not allow_remote:
        raise click.BadParameter(
            f"{host} is not a loopback address: anyone who can reach it could run programs "
            "with this kit; serve on 127.0.0.1 (and tunnel), or pass --allow-remote",
            param_hint="--http",
        )
    return host, int(port)


@click.command(cls=Command, epilog=EXIT_HELP)
@program_options(kit="none", params=False, json=False, limits=True)
@click.option(
    "--workers", type=click.IntRange(1, 64), help="Jails kept warm [the policy's pool.workers]."
)
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    help="Serve the streamable HTTP transport at http://HOST:PORT/mcp instead of stdio "
    "(HOST defaults to 127.0.0.1; loopback only). Every request needs the bearer token "
    "`lackjail mcp-config --http` prints.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Let --http bind a non-loopback address (the token travels in clear over http: "
    "tunnel it, or keep it to a network you trust).",
)
def serve(shared, workers, http, allow_remote):
    """Serve lackjail to an MCP client over stdio (or streamable HTTP with --http).

    Tools: run_program (with a `session` name to keep state between calls),
    close_session, check_program, kit_info, list_kits, docs_index, resolve_doc,
    delegate. Resources: lackjail://spec, lackjail://spec.json, lackjail://kit,
    lackjail://kits/{name}. Tool calls that need approval are denied: there is
    nobody to ask. A line that is not JSON-RPC gets a JSON-RPC error. The jail
    opens while the server starts; logs one line to stderr once it is open (or
    why it could not open); over stdio it stops when the client closes stdin.
    Over HTTP every request must carry `Authorization: Bearer <token>` (the
    token is made on first use, in a 0600 file the log line names) and a Host
    (and Origin, if any) naming the bound address.

    \b
    Examples:
      lackjail serve --kit readonly
      lackjail serve --kit readonly --http 8765      # http://127.0.0.1:8765/mcp
      lackjail mcp-config   # the block to paste into an MCP client's config
      lackjail mcp-config --http 8765   # the same for HTTP, with the token's header
    """
    address = http_address(http, allow_remote)
    token = server_token() if address else None
    chosen = setup(shared)
    where = url(*address) if address else "stdio"
    if address:
        from lackjail.mcptoken import token_path

        where += f" (requests need the bearer token in {token_path()})"
    try:
        from lackjail.mcp import Served, build_server, serve_http, serve_stdio
    except ImportError as exc:
        raise click.UsageError(
            f"lackjail serve needs the MCP SDK ({exc}); install it: pip install 'lackjail[mcp]'"
        ) from None
    from lackjail.checker import Checker
    from lackjail.errors import KitError
    from lackjail.workspace.hostfs import Root

    # the workspace opened once: the jail, every other level's jail and the kit and doc tools
    # act beneath this descriptor, whatever the path names later
    try:
        root = Root(chosen.workspace)
    except KitError as exc:
        raise click.BadParameter(str(exc), param_hint="--workspace") from None
    chosen.workspace = root  # type: ignore[assignment]  # a Root is the folder's path too
    opening = _open_in_background(chosen, workers, where)  # while the server starts and answers
    served = Served(
        opening,
        policy=chosen.policy,
        kit=chosen.kit,
        workspace=root,
        checker=Checker(chosen.policy, chosen.kit, chosen.language, audience="mcp"),
    )
    try:
        server = build_server(served)
        if address:
            serve_http(server, *address, token)
        else:
            serve_stdio(server)
    except KeyboardInterrupt:  # Ctrl-C is how a person stops a server: not an error
        pass
    finally:
        served.close()


def _open_in_background(chosen, workers, where: str) -> Future:
    """The Jail, opening on a thread of its own so that the server answers `initialize` without
    waiting for the pool; logs one line when it is open, or why it could not open."""
    from lackjail import __version__
    from lackjail.cli.jail import open_jail

    opening: Future = Future()

    def work():
        try:
            jail = open_jail(chosen, workers=workers, audience="mcp")
        except Exception as exc:  # every tool that runs a program says so too
            opening.set_exception(exc)
            line = f"lackjail {__version__}: the jail could not start: {exc}"
        else:
            opening.set_result(jail)
            line = (
                f"lackjail {__version__} serving MCP on {where}: kit {jail.kit.name}, policy "
                f"{jail.policy.name}, workspace {jail.workspace}, isolation {jail.isolation}"
            )
        click.echo(terminal_safe(line), err=True)

    threading.Thread(target=work, name="lackjail-open", daemon=True).start()
    return opening


def url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


def server_token() -> str:
    """The server's bearer token (made on first use); a usage error when its file is unusable."""
    from lackjail.mcptoken import TokenError, load_or_create

    try:
        return load_or_create()
    except TokenError as exc:
        raise click.UsageError(str(exc)) from None
