"""The options every command that validates or runs programs shares, with one meaning everywhere.

`--kit`, `--policy`, `--param NAME=VALUE`, `--workspace`, `--language` and
`--json` mean the same on `run`, `check`, `gate` and `delegate` (`serve`
takes all but `--param` and `--json`); `setup()` turns them into one
resolved `Setup` or a one-line error naming the option and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass

import click

from lackjail.cli.common import parse_params

KIT_HELP = "Tools the program may call: a kit name, or tool names separated by commas [none]."
PARAM_HELP = (
    "A top-level name for the program (repeatable); VALUE is parsed as JSON when it is valid "
    "JSON (n=3, l=[1,2], s='\"x\"'), else taken as a string (path=notes.txt)."
)


def _language_choices() -> list[str]:
    from lackjail.lang import LANGUAGES

    return list(LANGUAGES)


def program_options(
    *, policy: str = "default", kit: str | None = None, params: bool = True, json: bool = True
):
    """Decorator adding the shared options; POLICY and KIT are this command's defaults."""
    options = [
        click.option("--kit", default=kit, show_default=kit is not None, help=KIT_HELP),
        click.option(
            "--policy",
            default=policy,
            show_default=True,
            help="A bundled policy name or a .toml path.",
        ),
    ]
    if params:
        options.append(
            click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help=PARAM_HELP)
        )
    options += [
        click.option(
            "--workspace",
            type=click.Path(file_okay=False, exists=True),
            help="Folder the file tools (and workspace kits) are confined to [cwd].",
        ),
        click.option(
            "--language",
            type=click.Choice(_language_choices()),
            help="The language level programs are checked against [the policy's].",
        ),
    ]
    if json:
        options.append(
            click.option(
                "--json", "as_json", is_flag=True, help="Print one JSON object instead of text."
            )
        )

    def decorate(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


@dataclass
class Setup:
    """The shared options resolved: what a Checker and a Jail are built from."""

    policy: object
    kit: object
    params: dict
    workspace: str
    language: str | None
    checker: object


def setup(policy, kit, params=(), workspace=None, language=None) -> Setup:
    """Load the policy, resolve the kit beneath the workspace and check the parameters once;
    each problem is a usage error (exit 2) naming its option."""
    from lackjail.checker import Checker
    from lackjail.cli.jail import workspace_folder
    from lackjail.errors import KitError
    from lackjail.kit import resolve_kit
    from lackjail.policy import PolicyError, load_policy

    root = workspace_folder(workspace)
    try:
        loaded = load_policy(policy)
    except PolicyError as exc:
        raise click.BadParameter(str(exc), param_hint="--policy") from None
    try:
        resolved = resolve_kit(kit, workspace=root)
    except KitError as exc:
        raise click.BadParameter(str(exc), param_hint="--kit") from None
    values = parse_params(params)
    checker = Checker(loaded, resolved, language)
    errors = checker.param_errors(values)
    if errors:
        raise click.BadParameter(errors[0].message, param_hint="--param")
    return Setup(loaded, resolved, values, root, language, checker)
