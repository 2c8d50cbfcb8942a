"""The host side's errors, split by who must act on them.

KitError: the caller's kit, spec, kit file or workspace is wrong (bad input, exit 2).
ToolCallError and its kinds: one tool call failed; raised by tools and the
workspace, turned into a call outcome by the session. The message is safe to
hand back to the program, and `verdict` tells the run loop whether the run
must end as `denied` or `limit`. (`ToolError` is the name of the exception a
program sees in the jail; these stay on the host.)
`unknown_key()` words the error for a config or policy key its schema
lacks, the same way everywhere.
"""


class KitError(ValueError):
    """A kit, tool spec, kit file or workspace that cannot be used; the message says the fix."""


class ToolCallError(Exception):
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


class CommitError(Exception):
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
