"""The options every command that validates or runs programs shares, with one meaning everywhere.

`--kit`, `--policy`, `--param NAME=VALUE`, `--workspace`, `--language` and
`--json` mean the same on `run`, `check`, `gate` and `delegate` (`serve`
takes all but `--param` and `--json`); `setup()` turns them into one
resolved `Setup` or a one-line error naming the option and the fix.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

import click

from lackjail.cli.common import parse_params

KIT_HELP = "Tools the program may call: a kit name, or tool names separated by commas [none]."
PARAM_HELP = (
    "A top-level name for the program (repeatable); VALUE is parsed as JSON when it is valid "
    "JSON (n=3, l=[1,2], s='\"x\"'), else taken as a string (path=notes.txt). Text that looks "
    "like a number needs JSON quotes: v=1.10 is the number 1.1, v='\"1.10\"' the text 1.10."
)


def language_choices() -> list[str]:
    from lackjail.lang import LANGUAGES

    return list(LANGUAGES)


LIMIT_FLAGS = {"timeout": "wall_s", "cpu": "cpu_s", "memory": "memory_mb"}


@dataclass
class Shared:
    """The shared options as given (None: not given); `setup()` fills in the defaults."""

    kit: str | None = None
    policy: str | None = None
    params: tuple = ()
    workspace: str | None = None
    language: str | None = None
    as_json: bool = False
    bounds: dict = field(default_factory=dict)  # limit -> value from --timeout/--cpu/--memory
    default_policy: str = "default"
    default_kit: str | None = None


def program_options(
    *,
    policy: str = "default",
    kit: str | None = None,
    params: bool = True,
    json: bool = True,
    limits: bool = False,
):
    """Decorator adding the shared options; the command receives them as one `shared` argument.

    POLICY and KIT are this command's defaults, used when neither a flag nor a config chose one;
    LIMITS adds --timeout, --cpu and --memory (for the commands that run programs).
    """
    options = [
        click.option(
            "--kit",
            help=KIT_HELP + (f" [default: {kit}]" if kit else ""),
            shell_complete=complete_kits,
        ),
        click.option(
            "--policy",
            help=f"A bundled policy name or a .toml path [default: {policy}].",
            shell_complete=complete_policies,
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
            type=click.Choice(language_choices()),
            help="The language level programs are checked against [the policy's].",
        ),
    ]
    if json:
        options.append(
            click.option(
                "--json", "as_json", is_flag=True, help="Print one JSON object instead of text."
            )
        )
    if limits:
        options += [
            click.option(
                "--timeout",
                type=click.FloatRange(min=0, min_open=True),
                metavar="SECONDS",
                help="Tighten the policy's wall-clock limit for this run (never loosen it).",
            ),
            click.option(
                "--cpu",
                type=click.IntRange(min=1),
                metavar="SECONDS",
                help="Tighten the policy's CPU-time limit for this run (never loosen it).",
            ),
            click.option(
                "--memory",
                type=click.IntRange(min=1),
                metavar="MB",
                help="Tighten the policy's memory limit for this run (never loosen it).",
            ),
        ]

    def decorate(fn):
        @functools.wraps(fn)
        def command(*args, **kwargs):
            shared = Shared(
                kit=kwargs.pop("kit"),
                policy=kwargs.pop("policy"),
                params=kwargs.pop("params", ()),
                workspace=kwargs.pop("workspace"),
                language=kwargs.pop("language"),
                as_json=kwargs.pop("as_json", False),
                bounds={
                    LIMIT_FLAGS[flag]: value
                    for flag in LIMIT_FLAGS
                    if (value := kwargs.pop(flag, None)) is not None
                },
                default_policy=policy,
                default_kit=kit,
            )
            return fn(*args, shared=shared, **kwargs)

        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def isolation_option(
    help: str = "Run at exactly this isolation level instead of the policy's choice "
    "(any: the strongest this host has).",
):
    """Decorator adding --isolation: a level to run at exactly (or any), overriding the
    policy's weakest accepted level."""
    from lackjail.policy import ISOLATION_DEMANDS

    return click.option("--isolation", type=click.Choice(ISOLATION_DEMANDS), help=help)


def processes_value(ctx, param, value):
    """--processes: "auto", a whole number of controller processes from 1, or not given."""
    if value is None or value == "auto":
        return value
    if not value.isdigit() or int(value) < 1:
        raise click.BadParameter(f"{value!r} is neither 'auto' nor a whole number from 1")
    return int(value)


def complete_kits(ctx, param, incomplete: str) -> list[str]:
    """Shell completion for --kit: the kits of the current folder and the bundled ones."""
    from lackjail.kit import list_kits

    try:
        names = [name for name, _, _ in list_kits(os.getcwd())]
    except Exception:  # completion must never fail loudly in the user's shell
        return []
    return [name for name in names if name.startswith(incomplete)]


def complete_policies(ctx, param, incomplete: str) -> list[str]:
    """Shell completion for --policy: the bundled policy names."""
    from importlib.resources import files

    names = sorted(
        p.name[:-5]
        for p in files("lackjail").joinpath("policies").iterdir()
        if p.name.endswith(".toml")
    )
    return [name for name in names if name.startswith(incomplete)]


@dataclass
class Setup:
    """The shared options resolved: what a Checker and a Jail are built from."""

    policy: object
    kit: object
    params: dict
    workspace: str
    language: str | None
    checker: object


def setup(shared: Shared) -> Setup:
    """Resolve the shared options once: flags first, then the user's config, then the
    workspace's, then the command's defaults (the language level: the flag, the user's, then
    the workspace's, always among the levels the policy allows). Load the policy (tightened by
    the limit flags and the workspace's [limits]), resolve the kit beneath the workspace, check
    the parameters.
    Each problem is a usage error (exit 2) naming its option or config file."""
    from lackjail import lang
    from lackjail.checker import Checker
    from lackjail.cli.jail import workspace_folder
    from lackjail.errors import KitError
    from lackjail.kit import resolve_kit
    from lackjail.policy import PolicyError, load_policy
    from lackjail.userconfig import (
        ConfigError,
        tighten,
        user_config_path,
        user_defaults,
        workspace_defaults,
    )

    root = workspace_folder(shared.workspace)
    try:
        user, local = user_defaults(), workspace_defaults(root)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    policy = shared.policy or user.policy or shared.default_policy
    # the user's own choice (a flag, their config) wins over what the repository asks for
    kit = shared.kit or user.kit or local.kit or shared.default_kit
    language, chosen_by = next(
        (
            (value, where)
            for value, where in (
                (shared.language, "--language"),
                (user.language, f"{user_config_path()} [defaults] language"),
                (local.language, f"{root}/.lackjail/config.toml [defaults] language"),
            )
            if value
        ),
        (None, ""),
    )
    try:
        loaded = load_policy(policy)
    except PolicyError as exc:
        raise click.BadParameter(str(exc), param_hint="--policy") from None
    try:
        loaded = tighten(loaded, local.limits, f"{root}/.lackjail/config.toml [limits]")
        loaded = tighten(loaded, shared.bounds, "the command line (--timeout/--cpu/--memory)")
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        resolved = resolve_kit(kit, workspace=root)
    except KitError as exc:
        raise click.BadParameter(str(exc), param_hint="--kit") from None
    values = parse_params(shared.params)
    try:
        if language is not None:  # a choice among the policy's levels, never beyond them
            loaded.check_language(lang.check_language(language), chosen_by)
        checker = Checker(loaded, resolved, language, audience="cli")
    except ValueError as exc:  # a level the validator does not know, or one the policy refuses
        raise click.UsageError(str(exc)) from None
    errors = checker.param_errors(values)
    if errors:
        raise click.BadParameter(errors[0].message, param_hint="--param")
    return Setup(loaded, resolved, values, root, language, checker)
