"""terminal_approver: asking the person at the terminal whether a tool call may go ahead."""

import json
import select
import sys
import threading

import click

from lackjail.errors import ToolDenied
from lackjail.terminal import terminal_safe


def _format_call(call: dict) -> str:
    """`tool("a", 1, key=[2])`: the trace's plain arguments written as JSON values."""
    args = [json.dumps(a, ensure_ascii=False) for a in call.get("args", [])]
    args += [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.get("kwargs", {}).items()]
    return f"{call['tool']}({', '.join(args)})"


def terminal_approver(yes: bool = False, stop: threading.Event | None = None):
    """A callback approve(call) -> bool: always True with YES; else asks on the terminal, and denies
    without one (ToolDenied, saying how to approve).

    The question goes to stderr (stdout may carry --json); everything in it
    that the program chose is escaped, so it cannot drive the terminal. One
    question at a time when runs share the terminal. Only "y" or "yes" allows.
    The question is asked from the thread that runs the program, which Ctrl-C
    does not reach: setting STOP ends it unanswered (denied), so the run can end.
    """
    if yes:
        return lambda call: True
    lock = threading.Lock()
    stop = stop or threading.Event()

    def approve(call: dict) -> bool:
        if not sys.stdin.isatty():
            raise ToolDenied(
                f"{call['tool']} needs approval ({call.get('reason', '')}) and there is no "
                "terminal to ask: pass --yes to approve its calls, or use a policy that does not "
                "require approval for it"
            )
        question = terminal_safe(f"allow {_format_call(call)}? ({call.get('reason', '')})")
        with lock:
            click.echo(f"lackjail: {question} [y/N]: ", nl=False, err=True)
            try:
                while not stop.is_set():
                    if select.select([sys.stdin], [], [], 0.2)[0]:
                        return sys.stdin.readline().strip().lower() in ("y", "yes")
            except (OSError, ValueError):  # the terminal went away
                pass
            return False

    return approve
