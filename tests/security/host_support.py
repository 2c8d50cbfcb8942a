"""Helpers for the host-side security tests: sessions on a workspace, a second user, a swapper."""

import os
import pwd
import shutil
import subprocess
import sys

from lackjail.kit import resolve_kit
from lackjail.policy import Policy, ToolRules

TEST_USER = "lackjail-test"
SYS_RENAMEAT2 = 316 if os.uname().machine == "x86_64" else 276


def session(ws, dry_run=False, **tool_rules):
    """A files-kit session on WS with a policy whose [tools] has TOOL_RULES."""
    policy = Policy(name="test", tools=ToolRules(**tool_rules))
    return resolve_kit("files", workspace=ws).session(policy, ws, dry_run=dry_run)


def ordinary_user() -> pwd.struct_passwd | None:
    """An ordinary user for privilege tests (useradd'ed when we are root); None if not root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
            check=True,
        )
        return pwd.getpwnam(TEST_USER)


def _reachable_by_others(path: str) -> bool:
    path = os.path.realpath(path)
    folders = [path]
    while path != "/":
        path = os.path.dirname(path)
        folders.append(path)
    return all(os.stat(f).st_mode & 0o001 for f in folders)


def interpreter_for_others() -> str:
    """This interpreter, or the system's python3 when ours lives where others cannot go
    (a pyenv under a 0700 /root): the code run as another user then imports only
    stdlib-only parts of lackjail (lackjail.workspace)."""
    if _reachable_by_others(sys.executable):
        return sys.executable
    return shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable


def run_as(user: str, code: str, env=None) -> subprocess.CompletedProcess:
    """Run Python CODE as USER (runuser), from the repository root."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return subprocess.run(
        ["runuser", "-u", user, "--", interpreter_for_others(), "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root, **(env or {})},
        timeout=300,
    )


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
