"""Running `lackjail` as a user does: a real subprocess of this checkout (a unique module name)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli_env(**extra) -> dict:
    """The environment for `python -m lackjail.cli`: this checkout first on the path."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def lackjail(*args, stdin=None, cwd=None, env=None, timeout=180):
    """`python -m lackjail.cli ARGS` in CWD [the checkout]; a CompletedProcess with text output."""
    return subprocess.run(
        [sys.executable, "-m", "lackjail.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or ROOT,
        env=cli_env(**(env or {})),
    )
