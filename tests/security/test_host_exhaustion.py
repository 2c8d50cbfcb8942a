"""A hostile workspace cannot exhaust what the controller shares between runs.

find_files kept one open descriptor per folder waiting to be walked: a tree
200 folders deep with five sibling folders at each level held hundreds at
once, so under the usual limit of 1,024 descriptors the walk (silently)
missed files and every other run of the controller met EMFILE meanwhile.
"""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.usefixtures("private_state")

LEVELS, SIBLINGS = 200, 5
WALK = """
import os, resource, sys
from lackjail.kit import resolve_kit
from lackjail.policy import Policy, ToolRules

session = resolve_kit("files", workspace=sys.argv[1]).session(Policy(name="t"), sys.argv[1])
spare = len(os.listdir("/proc/self/fd")) + 40  # what is open now, and 40 more
resource.setrlimit(resource.RLIMIT_NOFILE, (spare, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
out = session.call("find_files", ["**/x"], {})
print(len(out.value) if out.ok else out.error)
"""


def test_find_files_holds_a_bounded_number_of_descriptors(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(LEVELS):  # the folder leading deeper among SIBLINGS others, each with x
            os.mkdir("deeper", dir_fd=fd)
            for n in range(SIBLINGS):
                os.mkdir(f"s{n}", dir_fd=fd)
                os.close(os.open(f"s{n}/x", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
            deeper = os.open("deeper", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = deeper
    finally:
        os.close(fd)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, "-c", WALK, str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": repo},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(LEVELS * SIBLINGS)
