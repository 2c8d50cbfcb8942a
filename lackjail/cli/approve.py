"""terminal_approver: asking the person at the terminal whether a tool call may go ahead."""

import json
import sys
import threading

import click

from lackjail.terminal import terminal_safe


def _format_call(call: dict) -> str:
    """`tool("a", 1, key=[2])`: the trace's plain arguments written as JSON values."""
    args = [json.dumps(a, ensure_ascii=False) for a in call.get("args", [])]
    args += [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.get("kwargs", {}).items()]
    return f"{call['tool']}({', '.join(args)})"


def terminal_approver(yes: bool = False):
    """A callback approve(call) -> bool: always True with YES; else asks on the terminal, and denies
    without one.

    The question goes to stderr (stdout may carry --json); everything in it
    that the program chose is escaped, so it cannot drive the terminal. One
    question at a time when runs share the terminal.
    """
    if yes:
        return lambda call: True
    lock = threading.Lock()

    def approve(call: dict) -> bool:
        if not sys.stdin.isatty():
            return False
        question = terminal_safe(f"allow {_format_call(call)}? ({call.get('reason', '')})")
        with lock:
            try:
                return click.confirm(f"lackjail: {question}", default=False, err=True)
            except (click.Abort, EOFError, OSError):
                return False

    return approve
