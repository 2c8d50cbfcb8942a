"""`lackjail delegate` (intent -> program -> jailed run) and `lackjail template` (stored ones)."""

import click

from lackjail.cli.common import EXIT_BAD, EXIT_HELP, Command, Group, emit_json, leave, read_source
from lackjail.cli.options import Shared, isolation_option, program_options, setup
from lackjail.cli.output import error_line, note, print_result, verbosity
from lackjail.terminal import terminal_safe

MODEL_HINT = (
    "  to let a model write it: run Ollama (OLLAMA_HOST, default http://127.0.0.1:11434) or set "
    "ANTHROPIC_API_KEY;\n  choose tiers and models in .lackjail/config.toml: [inference] order = "
    '["templates", "rules", "ollama", "anthropic"], [inference.providers.ollama] model = "...", '
    '[inference.providers.anthropic] model = "...";\n  for an OpenAI-compatible server (vLLM, '
    'LM Studio, llama.cpp) add a provider with kind = "openai", base_url and model in your '
    "own ~/.config/lackjail/config.toml"
)


def _print_generation(gen) -> None:
    """Why no program came out: each tier's note and the last rejected attempt's errors (stderr)."""
    click.echo("lackjail: no valid program for this intent", err=True)
    for tier_note in gen.notes:
        click.echo(terminal_safe(f"  {tier_note['tier']}: {tier_note['reason']}"), err=True)
    if not gen.attempts:
        click.echo(MODEL_HINT, err=True)
    if gen.attempts:
        last = gen.attempts[-1]
        for err in last["errors"]:
            click.echo(f"  {error_line(err, f'last attempt ({last["tier"]})')}", err=True)


def _asking(tier: str, provider) -> None:
    """Say which model is asked and for how long at most, before a wait that may be long."""
    note(f"lackjail: asking {tier} ({provider.model}), up to {provider.timeout:g} s")


@click.command(cls=Command, epilog=EXIT_HELP)
@click.argument("intent")
@program_options(limits=True)
@click.option(
    "--run/--no-run",
    "run",
    default=True,
    show_default=True,
    help="Run the generated program in the jail, or only print it.",
)
@click.option("--yes", is_flag=True, help="Approve every tool call that needs approval.")
@click.option(
    "--provider-timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="How long each model tier may take to answer [inference.provider_timeout, else each "
    "provider's timeout, else 60].",
)
@isolation_option()
def delegate(intent, shared, run, yes, provider_timeout, isolation):
    """Write a lackpy program for INTENT (cheapest tier first), validate it, and run it in the jail.

    Tiers and providers come from .lackjail/config.toml ([inference]). Exit 0
    when the program ran and succeeded (or, with --no-run, when one was
    written), 1 when it ran and failed, 2 when no valid program came out or
    the input was bad. --json prints one object: status, program, tier,
    attempts, notes, timings, result.

    \b
    Examples:
      lackjail delegate "count the lines of every python file" --kit readonly
      lackjail delegate "read the file notes.txt" --kit readonly --no-run
    """
    from lackjail import infer

    chosen = setup(shared)
    on_ask = None if shared.as_json else _asking
    config = infer.load_config()
    if provider_timeout is not None:
        config = config.with_provider_timeout(provider_timeout)
    infer.check_intent(intent)
    if run:
        from lackjail.cli.jail import open_jail

        approve = None
        if chosen.kit.names:
            from lackjail.cli.approve import terminal_approver

            approve = terminal_approver(yes)
        with open_jail(chosen, isolation=isolation, approve=approve) as jail:
            outcome = infer.delegate(
                jail, intent, chosen.params, run=True, config=config, on_ask=on_ask
            )
    else:
        outcome = infer.DelegateResult(
            infer.generate(
                intent,
                chosen.kit,
                tuple(chosen.params),
                config=config,
                check=lambda program: chosen.checker.check(program, chosen.params),
                language=chosen.checker.language,
                on_ask=on_ask,
            )
        )
    gen = outcome.generation
    if shared.as_json:
        emit_json(outcome.to_dict())
    elif not gen.ok:
        _print_generation(gen)
    else:
        note(f"# tier: {gen.tier} ({gen.source})")
        program = terminal_safe(gen.program, multiline=True)
        if outcome.result is None:
            click.echo(program)
        else:
            if verbosity() >= 0:
                click.echo("\n".join(f"# {line}" for line in program.splitlines()), err=True)
            print_result(outcome.result, "<delegated>")
    leave(outcome.exit_code)


@click.group(cls=Group)
def template():
    """Stored programs that match intents: the zero-latency first tier (.lackjail/templates).

    \b
    Examples:
      lackjail template create read.lackpy --name read --pattern "read the file {path}" \\
          --kit readonly
      lackjail template list
    """


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
    from lackjail.infer import TemplateStore
    from lackjail.infer.templates import IntentPattern, as_checked

    raw, filename = read_source(file)
    try:
        body = raw.decode("utf-8")
        names = IntentPattern.compile(pattern).names
    except UnicodeDecodeError:
        raise click.UsageError(f"{filename} is not UTF-8 text") from None
    verdict = setup(Shared(kit=kit, workspace=workspace)).checker.check(
        as_checked(body, names), names
    )
    if not verdict.valid:
        for err in verdict.errors:
            click.echo(error_line(err.to_dict(), filename), err=True)
        leave(EXIT_BAD)
    try:
        saved = TemplateStore.at().create(name, pattern, body, force=force)
    except OSError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(terminal_safe(f"saved template {saved.name} to {saved.path}"))


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
            row = f"{t.name}\t{t.pattern.text}\tok={t.success_count} failed={t.fail_count}"
            click.echo(terminal_safe(row, multiline=True))
    for problem in problems:
        click.echo(terminal_safe(f"skipped {problem}"), err=True)
