"""The command line's start-up: `lackjail run` of a trivial program, end to end, against a bare
interpreter's start, timed alternately in the same run (each a new process).

Two figures of the command: as a user meets it (CLI_RUN: the user's server answers, started by
a first command, so the command is the thin client and the server's forked process), and in
its own process (CLI_RUN_ALONE: LACKJAIL_SERVER=0, what a first command, or one with the server
off, costs). The bench's server has a runtime folder of its own (it never reaches the user's
server) and is stopped at the end."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from lackjail.bench.figures import BARE_START, CLI_RUN, CLI_RUN_ALONE, Figures

SERVER_START_S = 60.0  # how long a first command's server may take to answer on a loaded host


def startup_figures(repeats: int = 15) -> Figures:
    """Medians of REPEATS of each, alternated so that all three meet the same load: `lackjail
    run -` (the console script beside this interpreter, else `-m lackjail.cli`) reading `1`
    from stdin with the server running, the same in its own process, and `python -I -S -c
    pass`. CLI_RUN is missing when any of its commands did not run in the server."""
    script = os.path.join(os.path.dirname(sys.executable), "lackjail")
    cli = [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "lackjail.cli"]
    runtime = tempfile.mkdtemp(prefix="lackjail-bench-")  # 0700, ours
    served = {**os.environ, "LACKJAIL_SERVER": "1", "XDG_RUNTIME_DIR": runtime}
    commands = {
        CLI_RUN: ([*cli, "run", "-"], b"1\n", served),
        CLI_RUN_ALONE: ([*cli, "run", "-"], b"1\n", {**served, "LACKJAIL_SERVER": "0"}),
        BARE_START: ([sys.executable, "-I", "-S", "-c", "pass"], b"", None),
    }
    figures = Figures()
    try:
        subprocess.run([*cli, "run", "-"], input=b"1\n", capture_output=True, env=served)
        before = _commands_run(cli, served, wait=True)
        samples = _alternate(commands, repeats, figures)
        if samples is None:
            return figures
        for name, values in samples.items():
            figures[name] = statistics.median(values)
        after = _commands_run(cli, served)
        if before is None or after is None or after - before != repeats:
            figures.missing(CLI_RUN, "the server did not answer, or did not run every command")
    finally:
        subprocess.run([*cli, "server", "stop"], capture_output=True, env=served)
        shutil.rmtree(runtime, ignore_errors=True)
    return figures


def _alternate(commands: dict, repeats: int, figures: Figures) -> dict | None:
    samples: dict[str, list] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (argv, stdin, env) in commands.items():
            began = time.perf_counter()
            proc = subprocess.run(argv, input=stdin, capture_output=True, timeout=120, env=env)
            samples[name].append((time.perf_counter() - began) * 1000)
            if proc.returncode != 0:
                why = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["-"]
                for each in commands:
                    figures.missing(each, f"{name}: exit {proc.returncode}: {why[0]}")
                return None
    return samples


def _commands_run(cli: list, env: dict, wait: bool = False) -> int | None:
    """How many commands the server of ENV has run (`lackjail server status`); None when none
    answers (with WAIT, once SERVER_START_S have passed)."""
    deadline = time.monotonic() + (SERVER_START_S if wait else 0)
    while True:
        done = subprocess.run([*cli, "server", "status"], capture_output=True, text=True, env=env)
        words = done.stdout.split()
        if done.returncode == 0 and len(words) > 3 and words[-3].isdigit():
            return int(words[-3])
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)
