"""The command line's start-up: `lackjail run` of a trivial program, end to end, against a
bare interpreter's start, timed alternately in the same run (each a new process)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from lackjail.bench.figures import BARE_START, CLI_RUN, Figures


def startup_figures(repeats: int = 9) -> Figures:
    """Medians of REPEATS of each, alternated so that both meet the same load: `lackjail run -`
    (the console script beside this interpreter, else `-m lackjail.cli`) reading `1` from
    stdin, and `python -I -S -c pass`."""
    script = os.path.join(os.path.dirname(sys.executable), "lackjail")
    cli = [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "lackjail.cli"]
    commands = {
        CLI_RUN: ([*cli, "run", "-"], b"1\n"),
        BARE_START: ([sys.executable, "-I", "-S", "-c", "pass"], b""),
    }
    samples: dict[str, list] = {name: [] for name in commands}
    figures = Figures()
    for _ in range(repeats):
        for name, (argv, stdin) in commands.items():
            began = time.perf_counter()
            proc = subprocess.run(argv, input=stdin, capture_output=True, timeout=120)
            samples[name].append((time.perf_counter() - began) * 1000)
            if proc.returncode != 0:
                why = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["-"]
                figures.missing(name, f"exit {proc.returncode}: {why[0]}")
                return figures
    for name, values in samples.items():
        figures[name] = statistics.median(values)
    return figures
