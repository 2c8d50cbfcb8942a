"""terminal_approver: the CLI's approval callback."""

from __future__ import annotations

import sys
import threading

import click


def _format_call(call: dict) -> str:
    args = [str(a) for a in call.get("args", [])]
    args += [f"{k}={v}" for k, v in call.get("kwargs", {}).items()]
    return f"{call['tool']}({', '.join(args)})"


def terminal_approver(yes: bool = False):
    """A callback approve(call) -> bool: always True with YES; else asks on the terminal, and denies without one.

    The question goes to stderr (stdout may carry --json); the call's arguments
    were rendered with repr() by the session, so control characters cannot
    reach the terminal. One question at a time when runs share the terminal.
    """
    if yes:
        return lambda call: True
    lock = threading.Lock()

    def approve(call: dict) -> bool:
        if not sys.stdin.isatty():
            return False
        with lock:
            try:
                return click.confirm(
                    f"lackjail: allow {_format_call(call)}? ({call.get('reason', '')})",
                    default=False,
                    err=True,
                )
            except (click.Abort, EOFError, OSError):
                return False

    return approve
