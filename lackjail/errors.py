"""Every error lackjail raises to a caller, rooted in one class and split by who must act.

`LackjailError` is the root: `except lackjail.LackjailError` catches all of them.
Its two families say whose fault it is, and `exit_code` is the CLI's exit status:
- `InputError`: the caller's input is wrong (a program file, policy, kit, config,
  workspace, batch line or CLI argument); fix it and retry. Exit 2.
- `HostError`: this machine cannot do it (no isolation the policy accepts, a jail
  that cannot start, a closed pool, an unreachable cluster or model); the input was
  fine. Exit 2 as well, as the CLI has always done: the class tells the two apart.
Each concrete error keeps its older base too (`ValueError`, `RuntimeError`, `OSError`),
so code that caught those still does.

KitError: the caller's kit, spec, kit file or workspace is wrong (bad input).
ToolCallError and its kinds: one tool call failed; raised by tools and the
workspace, turned into a call outcome by the session. The message is safe to
hand back to the program, and `verdict` tells the run loop whether the run
must end as `denied` or `limit`. (`ToolError` is the name of the exception a
program sees in the jail; these stay on the host.)
`unknown_key()` words the error for a config or policy key its schema
lacks, the same way everywhere.

The modules the jail mounts (`lang/`, `worker/`, `protocol.py`, `plain.py`) cannot import
this one; their errors never reach a caller (the host turns them into a result).
"""


class LackjailError(Exception):
    """The root of every error lackjail raises to a caller; `exit_code` is the CLI's status."""

    exit_code: int = 1


class InputError(LackjailError):
    """The caller's input cannot be used; the message names it and the fix."""

    exit_code = 2


class HostError(LackjailError):
    """This machine cannot do what was asked, though the input was fine."""

    exit_code = 2


class ArgumentError(InputError, ValueError):
    """A library call's argument out of its range (workers, concurrency); the message says it."""


class KitError(InputError, ValueError):
    """A kit, tool spec, kit file or workspace that cannot be used; the message says the fix."""


class ToolCallError(LackjailError):
    """One tool call failed; the run goes on unless `verdict` says otherwise."""

    verdict: str | None = None


class ToolDenied(ToolCallError):
    """The policy or the approver refused the call: the run ends as `denied`."""

    verdict = "denied"


class LimitExceeded(ToolCallError):
    """A per-run budget (tool calls, bytes read or written) is spent: the run ends as `limit`."""

    verdict = "limit"


class RunOutOfTime(ToolCallError):
    """The run's wall-clock deadline came while the call ran: the call is abandoned and the
    run ends as `timeout`."""

    verdict = "timeout"


class CommitError(HostError):
    """Staged writes could not be applied. The workspace is as it was before the commit, except
    the files in `written` (a failed undo, named in the message too)."""

    def __init__(self, message: str, written=()):
        super().__init__(message)
        self.written = list(written)


def unknown_key(table, known, where: str = "", *, what: str = "key", among: str = "") -> str | None:
    """Why TABLE (a config or policy table) does not fit its schema: its first key that
    KNOWN lacks, named as WHERE + key (e.g. 'limits.net'), and the KNOWN keys in their order,
    so a typo is fixed at a glance. None when every key is known."""
    for key in table:
        if key not in known:
            return f"unknown {what} '{where}{key}'; known keys{among}: {', '.join(known)}"
    return None
