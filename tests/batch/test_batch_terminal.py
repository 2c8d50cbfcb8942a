"""`lackjail batch` draws a progress bar on a terminal and none elsewhere; the results file and
the summary are the same either way. The terminal is a real pseudo-terminal (pty)."""

import errno
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
N = 20
ARGS = [sys.executable, "-m", "lackjail.cli", "batch", "in.jsonl", "-o", "out.jsonl"]


@pytest.fixture(autouse=True)
def _nsjail(require_nsjail):
    pass


def environment() -> dict:
    """Ours, without what would make rich treat a pipe as a terminal or fix the width."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "COLUMNS", "LINES")}
    env = {k: v for k, v in env.items() if not k.startswith("TTY_")}
    return {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"}


def on_a_terminal(cwd) -> tuple[int, str]:
    """Run ARGS with stdin, stdout and stderr on a pty; its exit code and everything it showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        ARGS, cwd=cwd, env=environment(), stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    shown, deadline = [], time.monotonic() + 300
    try:
        while True:
            left = deadline - time.monotonic()
            assert left > 0, "batch on a terminal did not finish"
            if not select.select([master], [], [], left)[0]:
                continue
            try:
                data = os.read(master, 65536)
            except OSError as exc:  # EIO: every writer of the terminal has closed it
                if exc.errno != errno.EIO:
                    raise
                break
            if not data:
                break
            shown.append(data)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return proc.wait(timeout=60), b"".join(shown).decode("utf-8", "replace")


def off_a_terminal(cwd) -> tuple[int, str, str]:
    proc = subprocess.run(
        ARGS,
        cwd=cwd,
        env=environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


def summary(text: str) -> str:
    """The summary's counts, without this run's speed (which differs from run to run)."""
    match = re.search(r"done: [^\n]*?(?=; [\d,]+ runs/s)", text)
    assert match, text
    return match.group(0)


def results(path: Path) -> dict:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == N
    return {row["id"]: (row["status"], row["value"], row["output"]) for row in rows}


def test_a_progress_bar_on_a_terminal_and_none_elsewhere(tmp_path):
    for place in ("tty", "pipe"):
        (tmp_path / place).mkdir()
        (tmp_path / place / "in.jsonl").write_text(
            "".join(
                json.dumps({"id": i, "program": f"print({i})\n{i} * 3"}) + "\n" for i in range(N)
            )
        )
    code, shown = on_a_terminal(tmp_path / "tty")
    assert code == 0, shown
    assert "batch" in shown and f"{N}/{N}" in shown and "━" in shown, shown  # the bar, at the end
    assert "\x1b[" in shown  # drawn, and erased once done (transient)

    code, out, err = off_a_terminal(tmp_path / "pipe")
    assert code == 0, err
    for text in (out, err):
        assert f"/{N}" not in text and "━" not in text and "\x1b" not in text, text

    assert summary(shown) == summary(err) == f"done: {N} run, 0 already in the output; ok {N}"
    on_tty, on_pipe = (
        results(tmp_path / "tty" / "out.jsonl"),
        results(tmp_path / "pipe" / "out.jsonl"),
    )
    assert on_tty == on_pipe == {i: ("ok", i * 3, f"{i}\n") for i in range(N)}
