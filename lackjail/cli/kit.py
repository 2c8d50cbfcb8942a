"""`lackjail kit list|info|create`: the kits a workspace can use.

Bad input (an unknown kit or tool, a malformed kit file, an existing kit
without --force) exits 2 with one `Error:` line, never a traceback.
"""

import click

from lackjail.cli.common import Group, emit_json
from lackjail.errors import InputError
from lackjail.kit import KitError, default_toolbox, format_kit, list_kits, resolve_kit, write_kit
from lackjail.terminal import terminal_safe

_workspace = click.option(
    "--workspace",
    type=click.Path(file_okay=False),
    help="Workspace whose .lackjail/kits/ to use [cwd].",
)
_json = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


def _folder(workspace):
    import os

    folder = workspace or os.getcwd()
    if not os.path.isdir(folder):
        raise InputError(f"workspace {folder!r} is not a directory")
    return folder


@click.group("kit", cls=Group)
def kit():
    """List, inspect and create kits (the tools a program may call).

    \b
    Examples:
      lackjail kit list
      lackjail kit info readonly
      lackjail kit create review --tools read_file,find_files --description "Review code"
    """


@kit.command("list")
@_workspace
@_json
def list_command(workspace, as_json):
    """List the workspace's kits, the bundled ones, and the packs a kit or --kit may name."""
    folder, box, rows = _folder(workspace), default_toolbox(), []
    for name, source, path in list_kits(folder):
        row = {"name": name, "source": source, "path": str(path)}
        try:
            resolved = resolve_kit(str(path), workspace=folder, toolbox=box)
            row.update(
                description=resolved.description, tools=list(resolved.specs), grade=resolved.grade
            )
        except KitError as exc:
            row["error"] = str(exc)
        rows.append(row)
    packs = [
        {
            "name": p.namespace,
            "source": "pack",
            "description": p.description,
            "tools": list(p.members),
        }
        for p in box.packs.values()
    ]
    if as_json:
        emit_json(rows)  # the kits, as before: the packs are the toolbox's, listed in text
        return
    if not rows:
        click.echo("no kits")
    for row in rows + packs:
        tools = len(row.get("tools", ()))
        about = (
            f"error: {row['error']}"
            if "error" in row
            else f"{tools} tool{'' if tools == 1 else 's'}"
            + (f", w={row['grade']['w']}" if "grade" in row else "")
            + f"  {row['description']}"
        )
        click.echo(terminal_safe(f"{row['name']:<16} {row['source']:<9} {about}".rstrip()))


@kit.command("info")
@click.argument("name")
@_workspace
@_json
def info_command(name, workspace, as_json):
    """Show kit NAME: signatures, guidance, best practices and grade.

    NAME is a kit name, a .kit file, or tool names separated by commas.
    """
    resolved = resolve_kit(name, workspace=_folder(workspace))
    if as_json:
        emit_json(resolved.to_dict())
    else:
        click.echo(terminal_safe(resolved.describe(), multiline=True), nl=False)


@kit.command("create")
@click.argument("name")
@click.option(
    "--tools",
    required=True,
    help="Tool or pack names separated by commas, e.g. read_file,find_files.",
)
@click.option("--description", default="", help="One line saying what the kit is for.")
@click.option("--docs", default="", help="Doc paths inside the workspace, separated by commas.")
@click.option("--force", is_flag=True, help="Replace an existing kit of that name.")
@_workspace
def create_command(name, tools, description, docs, force, workspace):
    """Create .lackjail/kits/NAME.kit in the workspace from --tools."""
    folder = _folder(workspace)
    names = [t.strip() for t in tools.split(",") if t.strip()]
    if not names:
        raise KitError("--tools names no tool; e.g. --tools read_file,find_files")
    resolve_kit(names, workspace=folder)
    text = format_kit(name, description, names, [d.strip() for d in docs.split(",") if d.strip()])
    path = write_kit(folder, name, text, force=force)
    click.echo(f"created {path} ({len(names)} tools)")
