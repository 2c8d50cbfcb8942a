"""Options shared by the commands that validate or run programs, with one meaning everywhere."""

import click


def jail_options(fn):
    """--kit, --policy, --param NAME=VALUE and --workspace, as run, gate and delegate take them."""
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
                help="A top-level name for the program; VALUE is parsed as JSON when it is valid "
                "JSON (n=3, l=[1,2]), else taken as a string.",
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
