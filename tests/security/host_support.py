"""Helpers for the host-side security tests: sessions on a workspace, a second user, a swapper."""

import os
import subprocess
import sys

from lackjail.kit import resolve_kit
from lackjail.policy import Policy, ToolRules

SYS_RENAMEAT2 = 316 if os.uname().machine == "x86_64" else 276


def session(ws, dry_run=False, **tool_rules):
    """A files-kit session on WS with a policy whose [tools] has TOOL_RULES."""
    policy = Policy(name="test", tools=ToolRules(**tool_rules))
    return resolve_kit("files", workspace=ws).session(policy, ws, dry_run=dry_run)


def ordinary_user():
    """The ordinary test user (useradd'ed when we are root); None if not root."""
    import others  # tests/ is on the path in pytest, not in this module's subprocesses

    return others.ordinary_user()


def run_as(user: str, code: str, env=None) -> subprocess.CompletedProcess:
    """Run Python CODE as USER (runuser), with lackjail importable however unreachable this
    interpreter or checkout is to that user (through others.reachable's copy)."""
    import others

    return others.run_as(user, others.reachable(), code, env=env or {})


SWAPPER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
a, b, nr = sys.argv[2].encode(), sys.argv[3].encode(), int(sys.argv[4])
print("ready", flush=True)
while True:
    libc.syscall(nr, fd, a, fd, b, 2)  # renameat2(..., RENAME_EXCHANGE)
"""


def swapper(folder, a: str, b: str) -> subprocess.Popen:
    """A process swapping entries A and B of FOLDER with renameat2(RENAME_EXCHANGE) until killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(folder), a, b, str(SYS_RENAMEAT2)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    return proc
