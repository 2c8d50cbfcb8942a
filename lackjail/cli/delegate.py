"""`lackjail delegate` (intent -> program -> jailed run) and `lackjail template` (the stored programs)."""

import json

import click

from lackjail.cli.common import EXIT_BAD, emit_json, jsonable, leave, parse_params, read_source
from lackjail.cli.options import jail_options


def _usage(exc) -> click.UsageError:
    return click.UsageError(str(exc))


def _print_generation(gen) -> None:
    """Why no program came out: each tier's note and the last rejected attempt's errors (stderr)."""
    click.echo("lackjail: no valid program for this intent", err=True)
    for note in gen.notes:
        click.echo(f"  {note['tier']}: {note['reason']}", err=True)
    if gen.attempts:
        last = gen.attempts[-1]
        for err in last["errors"]:
            where = f"{err['line']}:{err.get('col', 1)}: " if err.get("line") else ""
            click.echo(f"  last attempt ({last['tier']}): {where}{err['message']}", err=True)


def _print_result(result) -> None:
    if result.output:
        click.echo(result.output, nl=not result.output.endswith("\n"))
    if result.status == "ok":
        if result.value is not None:
            click.echo(json.dumps(jsonable(result.value), ensure_ascii=False))
        return
    for err in result.errors:
        where = f"{err['line']}:{err.get('col') or 1}: " if err.get("line") else ""
        click.echo(f"<delegated>:{where}{result.status}: {err['message']}", err=True)


def _kit(kit, workspace):
    """The resolved kit (None without --kit); a bad kit is a usage error."""
    if not kit:
        return None
    from lackjail.kit import KitError, resolve_kit

    try:
        return resolve_kit(kit, workspace=workspace)
    except KitError as exc:
        raise _usage(exc) from None


def _validator(policy, kit, workspace, params):
    """(kit, check): validation as the jail would do it, without starting one (for --no-run)."""
    from lackjail import lang
    from lackjail.policy import PolicyError, load_policy

    try:
        limits = lang.ProgramLimits(max_source_bytes=load_policy(policy).limits.program_bytes)
    except PolicyError as exc:
        raise _usage(exc) from None
    resolved = _kit(kit, workspace)
    names = tuple(resolved.names) if resolved is not None else ()
    return resolved, lambda program: lang.validate(
        program, tools=names, params=tuple(params), limits=limits
    )


@click.command()
@click.argument("intent")
@jail_options
@click.option(
    "--run/--no-run",
    "run",
    default=True,
    show_default=True,
    help="Run the generated program in the jail, or only print it.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object: status, program, tier, attempts, notes, timings, result.",
)
@click.option("--yes", is_flag=True, help="Approve every tool call that needs approval.")
@click.option(
    "--isolation",
    type=click.Choice(["nsjail", "seccomp", "any"]),
    help="Override the policy's isolation demand.",
)
def delegate(intent, kit, policy, params, workspace, run, as_json, yes, isolation):
    """Write a lackpy program for INTENT (cheapest tier first), validate it, and run it in the jail.

    Tiers and providers come from .lackjail/config.toml ([inference]). Exit 0
    when the program ran and succeeded (or, with --no-run, when one was
    written), 1 when it ran and failed, 2 when no valid program came out or
    the input was bad.
    """
    from lackjail import infer

    values = parse_params(params)
    try:
        config = infer.load_config()
        infer.check_intent(intent)
        if run:
            from lackjail.cli.jail import open_jail

            approve = None
            if kit:
                from lackjail.cli.approve import terminal_approver

                approve = terminal_approver(yes)
            with open_jail(policy, kit, workspace, isolation=isolation, approve=approve) as jail:
                outcome = infer.delegate(jail, intent, values, run=True, config=config)
        else:
            resolved, check = _validator(policy, kit, workspace, values)
            outcome = infer.DelegateResult(
                infer.generate(intent, resolved, tuple(values), config=config, check=check)
            )
    except (infer.ConfigError, infer.IntentError) as exc:
        raise _usage(exc) from None
    gen = outcome.generation
    if as_json:
        emit_json(outcome.to_dict())
    elif not gen.ok:
        _print_generation(gen)
    else:
        click.echo(f"# tier: {gen.tier} ({gen.source})", err=True)
        if outcome.result is None:
            click.echo(gen.program)
        else:
            click.echo("\n".join(f"# {line}" for line in gen.program.splitlines()), err=True)
            _print_result(outcome.result)
    leave(outcome.exit_code)


@click.group()
def template():
    """Stored programs that match intents: the zero-latency first tier (.lackjail/templates)."""


@template.command("create")
@click.argument("file")
@click.option("--name", required=True, help="The template's name (letters, digits, '_', '.', '-').")
@click.option(
    "--pattern",
    required=True,
    help='The intents it serves, with {placeholders}: "read the file {path}".',
)
@click.option(
    "--kit",
    help="Validate against this kit's tools (a kit name or tool names separated by commas).",
)
@click.option(
    "--workspace", type=click.Path(file_okay=False), help="Workspace for resolving the kit [cwd]."
)
@click.option("--force", is_flag=True, help="Replace an existing template of that name.")
def create(file, name, pattern, kit, workspace, force):
    """Save the program FILE ('-' for stdin) as a template, after validating it.

    In FILE a placeholder of the pattern is written {name} as code (it becomes
    a string literal) or inside a string literal; captured text is always
    inserted as a string value, never as code.
    """
    from lackjail import lang
    from lackjail.infer import TemplateError, TemplateStore
    from lackjail.infer.templates import IntentPattern

    raw, filename = read_source(file)
    try:
        body = raw.decode("utf-8")
        names = IntentPattern.compile(pattern).names
    except UnicodeDecodeError:
        raise click.UsageError(f"{filename} is not UTF-8 text") from None
    except TemplateError as exc:
        raise _usage(exc) from None
    resolved = _kit(kit, workspace)
    tools = tuple(resolved.names) if resolved is not None else ()
    verdict = lang.validate(body, tools=tools, params=names)
    if not verdict.valid:
        for err in verdict.errors:
            click.echo(err.format(filename), err=True)
        leave(EXIT_BAD)
    try:
        saved = TemplateStore.at().create(name, pattern, body, force=force)
    except (TemplateError, OSError) as exc:
        raise _usage(exc) from None
    click.echo(f"saved template {saved.name} to {saved.path}")


@template.command("list")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print a JSON list of {name, pattern, success_count, fail_count, path}.",
)
def list_templates(as_json):
    """List the templates of .lackjail/templates, and any file that cannot be used."""
    from lackjail.infer import TemplateStore

    templates, problems = TemplateStore.at().load()
    if as_json:
        emit_json([t.to_dict() for t in templates])
    else:
        for t in templates:
            click.echo(f"{t.name}\t{t.pattern.text}\tok={t.success_count} failed={t.fail_count}")
    for problem in problems:
        click.echo(f"skipped {problem}", err=True)
