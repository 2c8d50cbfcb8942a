"""The errors of the kit layer, split by who must act on them.

KitError: the caller's kit, spec or kit file is wrong (bad input, exit 2).
ToolError and its kinds: one tool call failed; the message is safe to hand
back to the program, and `verdict` tells the run loop whether the run must
end as `denied` or `limit`.
"""


class KitError(ValueError):
    """A kit, tool spec or kit file that cannot be used; the message names the key and the fix."""


class ToolError(Exception):
    """One tool call failed; the run goes on unless `verdict` says otherwise."""

    verdict: str | None = None


class ToolDenied(ToolError):
    """The policy or the approver refused the call: the run ends as `denied`."""

    verdict = "denied"


class LimitExceeded(ToolError):
    """A per-run budget (tool calls, bytes read or written) is spent: the run ends as `limit`."""

    verdict = "limit"


class CommitError(Exception):
    """Staged writes could not be applied; nothing in the workspace was changed."""
