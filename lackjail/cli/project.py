"""`lackjail init` (a `.lackjail/` to edit) and `lackjail mcp-config` (the MCP client block)."""

import json
import os
import sys

import click

from lackjail.cli.common import EXIT_HELP, leave
from lackjail.terminal import terminal_safe

CONFIG = """\
# lackjail settings for this project. Flags win over these; your own
# ~/.config/lackjail/config.toml may set [defaults] kit, policy and language.

[defaults]
kit = "project"          # the kit in .lackjail/kits/project.kit

# A project may only tighten the policy's limits, never loosen them:
[limits]
wall_s = 10.0

# How `lackjail delegate` writes programs: templates first, then rules, then models.
[inference]
order = ["templates", "rules"]
"""

KIT = """\
---
name: project
description: The tools programs of this project may call (edit me)
---
read_file
find_files
"""

TEMPLATE_NAME = "count_lines"
TEMPLATE_PATTERN = "count the lines of {path}"
TEMPLATE_BODY = "text = read_file({path})\nlen(text.splitlines())\n"


@click.command(epilog=EXIT_HELP)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, exists=True),
    help="The project folder to set up [cwd].",
)
def init(workspace):
    """Create .lackjail/ with a config, a kit and a template to edit.

    Refuses to overwrite: when any of the files exists, nothing is written.

    \b
    Examples:
      lackjail init
      lackjail run prog.lackpy            # uses the kit the config chose
      lackjail delegate "count the lines of notes.txt"
    """
    from lackjail.infer import TemplateError, TemplateStore
    from lackjail.infer.templates import SUFFIX as TEMPLATE_SUFFIX
    from lackjail.kit import KitError, write_kit

    root = os.path.abspath(workspace or os.getcwd())
    folder = os.path.join(root, ".lackjail")
    config = os.path.join(folder, "config.toml")
    kit = os.path.join(folder, "kits", "project.kit")
    template = os.path.join(folder, "templates", f"{TEMPLATE_NAME}{TEMPLATE_SUFFIX}")
    linked = [
        p for p in (folder, os.path.dirname(kit), os.path.dirname(template)) if os.path.islink(p)
    ]
    if linked:  # a link would send the files somewhere else: the project is not set up as it seems
        raise click.UsageError(
            f"{terminal_safe(linked[0])} is a symlink; init writes only into a real folder"
        )
    existing = [p for p in (config, kit, template) if os.path.lexists(p)]
    if existing:
        raise click.UsageError(
            f"{terminal_safe(existing[0])} exists; lackjail init never overwrites "
            "(edit it, or remove it and run init again)"
        )
    try:
        _write_config(os.path.realpath(root), CONFIG)
        write_kit(root, "project", KIT)
        store = TemplateStore.at(root)
        saved = store.create(TEMPLATE_NAME, TEMPLATE_PATTERN, TEMPLATE_BODY)
    except (OSError, TemplateError, KitError) as exc:
        raise click.UsageError(f"cannot set up {terminal_safe(folder)}: {exc}") from None
    for path in (config, kit, str(saved.path)):
        click.echo(f"created {terminal_safe(os.path.relpath(path, root))}")
    leave(0)


def _write_config(root: str, text: str) -> None:
    """Write `.lackjail/config.toml` beneath ROOT as its owner, never over a file or through a
    symlink (one swapped in after init's check included); OSError."""
    from lackjail.workspace.beneath import Tree
    from lackjail.workspace.files import write_whole
    from lackjail.workspace.owner import Owner

    with Owner.of(root).acting():
        tree = Tree.below(root, ".lackjail", create=True)
        try:
            write_whole(tree, "config.toml", text.encode("utf-8"), replace=False)
        finally:
            tree.close()


@click.command("mcp-config", epilog=EXIT_HELP)
@click.option("--kit", default="readonly", show_default=True, help="The kit the server serves.")
@click.option(
    "--policy", default="default", show_default=True, help="The policy the server runs under."
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, exists=True),
    help="The folder the served tools are confined to [cwd].",
)
@click.option("--name", default="lackjail", show_default=True, help="The server's name.")
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    help="Print the block for a server started with `lackjail serve --http` at this address: "
    "its URL and the Authorization header with the server's bearer token (made if missing).",
)
def mcp_config(kit, policy, workspace, name, http):
    """Print the MCP client config block that starts `lackjail serve` for this checkout.

    Paste it into the client's config (Claude Desktop's claude_desktop_config.json,
    a project's .mcp.json, ...). It runs this very interpreter, so the block works
    from a virtualenv without activating it. With --http it names a running
    server instead, with the header every request needs: that block holds a
    secret, keep it out of repositories.

    \b
    Examples:
      lackjail mcp-config
      lackjail mcp-config --kit files --workspace ~/project > .mcp.json
      lackjail mcp-config --http 8765     # for: lackjail serve --http 8765
    """
    root = os.path.abspath(workspace or os.getcwd())
    if http:
        from lackjail.cli.serve import http_address, server_token, url

        address = http_address(http, allow_remote=True)
        headers = {"Authorization": f"Bearer {server_token()}"}
        server = {"type": "http", "url": url(*address), "headers": headers}
        click.echo(json.dumps({"mcpServers": {name: server}}, indent=2))
        leave(0)
    args = ["-m", "lackjail.cli", "serve", "--kit", kit, "--policy", policy, "--workspace", root]
    block = {"mcpServers": {name: {"command": sys.executable, "args": args}}}
    click.echo(json.dumps(block, indent=2))
    leave(0)
