"""`lackjail serve`: the MCP server over stdio (stdout carries only the protocol)."""

import click

from lackjail.cli.common import EXIT_HELP
from lackjail.cli.options import program_options, setup


@click.command(epilog=EXIT_HELP)
@program_options(kit="none", params=False, json=False, limits=True)
@click.option(
    "--workers", type=click.IntRange(1, 64), help="Jails kept warm [the policy's pool.workers]."
)
def serve(shared, workers):
    """Serve lackjail to an MCP client over stdio.

    Tools: run_program, check_program, kit_info, list_kits, docs_index,
    resolve_doc, delegate. Resources: lackjail://spec, lackjail://spec.json,
    lackjail://kit, lackjail://kits/{name}. Tool calls that need approval are
    denied: there is nobody to ask. Stops when the client closes stdin.

    \b
    Examples:
      lackjail serve --kit readonly
      lackjail mcp-config   # the block to paste into an MCP client's config
    """
    try:
        from lackjail.mcp import build_server
    except ImportError as exc:
        raise click.UsageError(
            f"lackjail serve needs the MCP SDK ({exc}); install it: pip install 'lackjail[mcp]'"
        ) from None
    from lackjail.cli.jail import open_jail

    chosen = setup(shared)
    with open_jail(chosen, workers=workers) as jail:
        try:
            build_server(jail).run("stdio")
        except KeyboardInterrupt:  # Ctrl-C is how a person stops a server: not an error
            pass
