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


def open_jail(policy, kit, workspace, workers=1, mode=None, isolation=None, approve=None):
    """A Jail for run, gate, delegate and serve; a bad policy, kit or workspace exits 2."""
    from lackjail.api import Jail
    from lackjail.kit import KitError
    from lackjail.policy import PolicyError
    from lackjail.pool import IsolationError, PoolError

    root = workspace_folder(workspace)
    try:
        return Jail(
            policy=policy,
            kit=kit,
            workers=workers,
            workspace=root,
            mode=mode,
            isolation=isolation,
            approve=approve,
        )
    except (PolicyError, KitError) as exc:
        raise click.UsageError(str(exc)) from None
    except (IsolationError, PoolError) as exc:
        raise click.ClickException(str(exc)) from None
