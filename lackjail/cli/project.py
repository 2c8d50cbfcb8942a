"""`lackjail init` (a `.lackjail/` to edit) and `lackjail mcp-config` (the MCP client block)."""

import json
import os
import shlex
import sys

import click

from lackjail.cli.common import EXIT_HELP, Command, leave
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


@click.command(cls=Command, epilog=EXIT_HELP)
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
    from lackjail.workspace import Root

    try:
        opened = Root(workspace)  # opened once: every file below is made beneath it
    except KitError as exc:
        raise click.UsageError(str(exc)) from None
    root = opened.path
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
        _write_config(opened, CONFIG)
        write_kit(opened, "project", KIT)
        store = TemplateStore.at(opened)
        saved = store.create(TEMPLATE_NAME, TEMPLATE_PATTERN, TEMPLATE_BODY)
    except (OSError, TemplateError, KitError) as exc:
        raise click.UsageError(f"cannot set up {terminal_safe(folder)}: {exc}") from None
    for path in (config, kit, str(saved.path)):
        click.echo(f"created {terminal_safe(os.path.relpath(path, root))}")
    leave(0)


def _write_config(root, text: str) -> None:
    """Write `.lackjail/config.toml` beneath the opened workspace ROOT as its owner, never over
    a file or through a symlink (one swapped in after init's check included); OSError."""
    from lackjail.workspace.hostfs import write_whole

    with root.owner.acting():
        tree = root.tree.below(".lackjail", create=True)
        try:
            write_whole(tree, "config.toml", text.encode("utf-8"), replace=False)
        finally:
            tree.close()


@click.command("mcp-config", cls=Command, epilog=EXIT_HELP)
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
    "--client",
    type=click.Choice(["claude-desktop", "claude-code", "cursor"]),
    default="claude-desktop",
    show_default=True,
    help="The MCP client the config is for.",
)
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    help="Name a server started with `lackjail serve --http` at this address instead: its URL "
    "and the Authorization header with the server's bearer token (made if missing).",
)
def mcp_config(kit, policy, workspace, name, client, http):
    """Print the config that makes an MCP client start `lackjail serve` for this checkout.

    claude-desktop: a block for claude_desktop_config.json (Settings > Developer >
    Edit Config). cursor: a block for .cursor/mcp.json in a project (or
    ~/.cursor/mcp.json for every project). claude-code: the `claude mcp add` command
    line to run (add `--scope project` to share it through the project's .mcp.json).
    The server runs this very interpreter, so it works from a virtualenv without
    activating it. With --http the config names a running server instead, with
    the header every request needs: it holds a secret, keep it out of
    repositories.

    \b
    Examples:
      lackjail mcp-config
      lackjail mcp-config --client cursor --kit files --workspace ~/project > .cursor/mcp.json
      lackjail mcp-config --client claude-code --kit files    # then run the line it prints
      lackjail mcp-config --http 8765     # for: lackjail serve --http 8765
    """
    if http:
        _http_config(name, client, http)
    root = os.path.abspath(workspace or os.getcwd())
    args = ["-m", "lackjail.cli", "serve", "--kit", kit, "--policy", policy, "--workspace", root]
    if client == "claude-code":
        line = ["claude", "mcp", "add", "--transport", "stdio", name, "--", sys.executable, *args]
        click.echo(shlex.join(line))
    else:  # Claude Desktop and Cursor read the same mcpServers block
        block = {"mcpServers": {name: {"command": sys.executable, "args": args}}}
        click.echo(json.dumps(block, indent=2))
    leave(0)


def _http_config(name: str, client: str, http: str) -> None:
    """Print the config for the server at HTTP (its URL and bearer-token header), then exit."""
    from lackjail.cli.serve import http_address, server_token, url

    where = url(*http_address(http, allow_remote=True))
    header = f"Authorization: Bearer {server_token()}"
    if client == "claude-code":
        line = ["claude", "mcp", "add", "--transport", "http", name, where, "--header", header]
        click.echo(shlex.join(line))
    else:
        key, _, value = header.partition(": ")
        server = {"type": "http", "url": where, "headers": {key: value}}
        click.echo(json.dumps({"mcpServers": {name: server}}, indent=2))
    leave(0)
