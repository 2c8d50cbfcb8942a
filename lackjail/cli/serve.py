"""`lackjail serve`: the MCP server over stdio (stdout carries only the protocol)."""

import click

from lackjail.cli.common import EXIT_HELP


@click.command(epilog=EXIT_HELP)
@click.option(
    "--kit",
    default="none",
    show_default=True,
    help="Tools the served programs may call: a kit name, or tool names separated by commas.",
)
@click.option(
    "--policy", default="default", show_default=True, help="A bundled policy name or a .toml path."
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, exists=True),
    help="Folder the file tools and resolve_doc are confined to [cwd].",
)
@click.option(
    "--workers", type=click.IntRange(1, 64), help="Jails kept warm [the policy's pool.workers]."
)
def serve(kit, policy, workspace, workers):
    """Serve lackjail to an MCP client over stdio.

    Tools: run_program, check_program, kit_info, list_kits, docs_index,
    resolve_doc, delegate. Resources: lackjail://spec, lackjail://spec.json,
    lackjail://kit, lackjail://kits/{name}. Tool calls that need approval are
    denied: there is nobody to ask. Stops when the client closes stdin.
    """
    try:
        from lackjail.mcp import build_server
    except ImportError as exc:
        raise click.UsageError(
            f"lackjail serve needs the MCP SDK ({exc}); install it: pip install 'lackjail[mcp]'"
        ) from None
    from lackjail.cli.jail import open_jail

    with open_jail(policy, kit, workspace, workers=workers) as jail:
        try:
            build_server(jail).run("stdio")
        except KeyboardInterrupt:  # Ctrl-C is how a person stops a server: not an error
            pass
