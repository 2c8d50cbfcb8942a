"""Opening a Jail for a command from its resolved shared options."""

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


def open_jail(setup, workers=1, mode=None, isolation=None, approve=None, audience="cli"):
    """A Jail for run, gate, delegate and serve from the resolved shared options (a `Setup`);
    a bad policy or kit, or a host that cannot run jails, is a LackjailError (one line)."""
    from lackjail.api import Jail

    return Jail(
        policy=setup.policy,
        kit=setup.kit,
        workers=workers,
        workspace=setup.workspace,
        mode=mode,
        isolation=isolation,
        approve=approve,
        language=setup.language,
        audience=audience,
    )
