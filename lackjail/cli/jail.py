"""Opening a Jail for a command: bad policies, kits, workspaces and hosts become one-line errors."""

import click


def workspace_folder(workspace) -> str:
    """The real path of the workspace (default: the current folder); a folder that cannot be one
    (missing, or the whole system) is a usage error naming --workspace."""
    from lackjail.errors import KitError
    from lackjail.workspace import workspace_root

    try:
        return workspace_root(workspace)
    except KitError as exc:
        raise click.BadParameter(str(exc), param_hint="--workspace") from None


def open_jail(setup, workers=1, mode=None, isolation=None, approve=None):
    """A Jail for run, gate, delegate and serve from the resolved shared options (a `Setup`);
    a host that cannot run jails is one line and exit 2."""
    from lackjail.api import Jail
    from lackjail.errors import KitError
    from lackjail.policy import PolicyError
    from lackjail.pool import IsolationError, PoolError

    try:
        return Jail(
            policy=setup.policy,
            kit=setup.kit,
            workers=workers,
            workspace=setup.workspace,
            mode=mode,
            isolation=isolation,
            approve=approve,
            language=setup.language,
        )
    except (PolicyError, KitError) as exc:
        raise click.UsageError(str(exc)) from None
    except (IsolationError, PoolError) as exc:
        raise click.ClickException(str(exc)) from None
