"""`lackjail batch`: run a JSONL file of programs, one result line per id (lackjail/batch.py)."""

import sys

import click

from lackjail.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Command, leave
from lackjail.cli.options import isolation_option, language_choices, processes_value
from lackjail.policy import MAX_WORKERS


@click.command(cls=Command)
@click.argument("input_path", metavar="INPUT.jsonl")
@click.option(
    "--output",
    "-o",
    "output_path",
    required=True,
    metavar="RESULTS.jsonl",
    help="Results, one JSON line per id; appended to, so a rerun resumes.",
)
@click.option("--kit", help="Kit for every line; without it, for lines that name none.")
@click.option(
    "--policy",
    default="default",
    show_default=True,
    help="Policy for every line when given; without it, for lines that name none.",
)
@click.option(
    "--language",
    type=click.Choice(language_choices()),
    help="Language level for every line when given (among the policy's levels); without it, "
    "for lines that name none [the policy's].",
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False),
    help="Folder the file tools are confined to [cwd].",
)
@click.option(
    "--workers", type=click.IntRange(1, MAX_WORKERS), help="Jails per pool [the policy's]."
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="Programs in flight per pool [twice the jails].",
)
@click.option(
    "--processes",
    callback=processes_value,
    metavar="auto|N",
    help="Controller processes sharing each pool's jails [the policy's pool.processes: auto].",
)
@isolation_option("Override the policies' isolation demand.")
@click.option(
    "--ray",
    "ray_address",
    metavar="auto|ADDRESS",
    help="Run on a Ray cluster: one actor per node, each with its own jail pool.",
)
@click.option("--progress/--no-progress", default=None, help="A progress bar [on a terminal].")
def batch(
    input_path,
    output_path,
    kit,
    policy,
    language,
    workspace,
    workers,
    concurrency,
    processes,
    isolation,
    ray_address,
    progress,
):
    """Run every program of INPUT.jsonl; write one result line per id to RESULTS.jsonl.

    Each input line: {"id", "program", "params"?, "kit"?, "policy"?, "language"?};
    a line may name its kit, policy or language only where --kit, --policy or
    --language is not given, and a language only among its policy's levels. A
    program in a Markdown code fence runs as the code inside. Ids already
    in RESULTS.jsonl are skipped, so a rerun finishes an interrupted batch. A
    line that cannot run gets an `invalid` result (lines without a usable id
    are reported as `line:N`). Exit 0 when every program ran ok, 1 when some
    did not, 2 on bad arguments or an unreadable file, 130 when interrupted.
    """
    from lackjail import batch as b

    _check_defaults(kit, policy, workspace, language)
    if isinstance(processes, int) and workers and processes > workers:
        raise click.BadParameter(
            f"{processes} is more than --workers {workers}: each controller process keeps at "
            "least one jail",
            param_hint="'--processes'",
        )
    if ray_address:
        try:
            from lackjail.ray import open_ray
        except ImportError as exc:
            raise click.UsageError(
                f"--ray needs Ray ({exc}); install it with: pip install 'lackjail[ray]'"
            ) from None

        open_runner = open_ray(
            ray_address, workspace=workspace, concurrency=concurrency, isolation=isolation
        )
    else:
        open_runner = b.open_local(workspace, workers, concurrency, isolation, processes)
    bar = _ProgressBar() if (sys.stderr.isatty() if progress is None else progress) else None
    try:
        summary = b.run_batch(
            input_path,
            output_path,
            open_runner,
            kit=kit,
            policy=policy,
            pinned=_given(click.get_current_context(), "kit", "policy", "language"),
            progress=bar,
            language=language,
        )
    finally:  # on a HostError the results so far are kept: rerun once the cause is fixed
        if bar is not None:
            bar.close()
    click.echo(summary.text(), err=True)
    if summary.interrupted:
        click.echo(f"rerun the same command to finish: {output_path} is kept", err=True)
        leave(EXIT_INTERRUPTED)
    leave(EXIT_FAILED if summary.failed else EXIT_OK)


def _given(ctx, *names) -> frozenset:
    """The NAMES of options the user set (command line or environment), not left at defaults."""
    unset = (None, click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP)
    return frozenset(n for n in names if ctx.get_parameter_source(n) not in unset)


def _check_defaults(kit, policy, workspace, language):
    """Bad --policy, --kit or --language is bad input (exit 2) before anything runs."""
    from lackjail.kit import resolve_kit
    from lackjail.policy import load_policy

    loaded = load_policy(policy)
    if language is not None:
        loaded.check_language(language, "--language")
    if kit:
        resolve_kit(kit, workspace=workspace or ".")


class _ProgressBar:
    """A rich progress bar on stderr; `run_batch` calls it with the total, then each result."""

    def __init__(self):
        self._bar = None

    def __call__(self, total: int):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        self._bar = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=Console(stderr=True),
        )
        task = self._bar.add_task("batch", total=total)
        self._bar.start()
        return lambda: self._bar.advance(task)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
