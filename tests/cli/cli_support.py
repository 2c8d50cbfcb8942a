"""Running `lackjail`: in this process through click's runner (`lackjail`), or as a user does,
a real subprocess of this checkout (`lackjail_process`), for what only a process shows."""

import os
import pty
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli_env(**extra) -> dict:
    """The environment for `python -m lackjail.cli`: this checkout first on the path."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def lackjail(*args, stdin=None, cwd=None, env=None):
    """`lackjail ARGS` in this process, in CWD [the checkout], through `main` (so its exit codes
    and one-line errors): a CompletedProcess with text output, stdout and stderr apart."""
    from click.testing import CliRunner

    from lackjail.cli import main

    runner = CliRunner()
    with runner.isolation(input=stdin, env=env) as (out, err, _):
        here = os.getcwd()
        os.chdir(cwd or ROOT)
        try:
            main(list(args))
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0
        finally:
            os.chdir(here)
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(["lackjail", *args], code, stdout, stderr)


def lackjail_process(*args, stdin=None, cwd=None, env=None, timeout=180):
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


def on_a_terminal(args, cwd, stream="stdout", **env) -> tuple[str, int]:
    """`python -m lackjail.cli ARGS` in CWD with STREAM ("stdout" or "stderr") on a
    pseudo-terminal and the other piped; what the terminal showed, and the exit code."""
    master, slave = pty.openpty()
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: slave}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", *args],
        cwd=cwd,
        env=cli_env(TERM="xterm", **env),
        stdin=subprocess.DEVNULL,
        **streams,
    )
    os.close(slave)
    shown = read_terminal(master)
    proc.communicate(timeout=60)
    os.close(master)
    return shown.decode("utf-8", "replace"), proc.returncode


def read_terminal(master: int) -> bytes:
    """Everything still to be read from the pseudo-terminal MASTER until its other end closes."""
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the terminal closed
            break
        if not chunk:
            break
        shown += chunk
    return shown
