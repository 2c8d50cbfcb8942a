"""A jail with a fake zygote (tests/fakezygote.py) that plays a script of steps,
and one run on it: for tests of what the controller does with a hostile jail."""

import contextlib
import json
import sys
import time
from pathlib import Path

from lackjail import protocol
from lackjail.policy import Limits
from lackjail.pool.isolation import Launcher
from lackjail.pool.jail_process import JailProcess
from lackjail.pool.run import Request, Run

ROOT = Path(__file__).resolve().parents[1]
FAKE = Path(__file__).with_name("fakezygote.py")
LIMITS = Limits(wall_s=1.0, cpu_s=1, memory_mb=64, output_bytes=1000)


@contextlib.contextmanager
def fake_jail(tmp_path, steps, max_frame: int = protocol.MAX_FRAME):
    script = tmp_path / "steps.json"
    script.write_text(json.dumps(steps))
    launcher = Launcher("fake", [sys.executable, "-I", str(FAKE), str(ROOT), str(script)], {})
    jail = JailProcess(launcher, 1, max_frame)
    try:
        yield jail
    finally:
        jail.kill()


def fake_zygotes(monkeypatch, script: Path) -> None:
    """Every jail a Pool starts from now on is a fake zygote playing SCRIPT: a steps file,
    or a folder of them (`1.json`, `2.json`, ...: one per jail, in the order started)."""
    from lackjail.pool import isolation

    argv = [sys.executable, "-I", str(FAKE), str(ROOT), str(script)]
    monkeypatch.setattr(isolation, "nsjail_launcher", lambda args: Launcher("nsjail", argv, {}))


def run_on(
    jail, request=None, *, tool_handler=None, tools=(), wall_s=1.0, runs_per_child=1, on_output=None
):
    """One run on the jail's first ready child (waits for one)."""
    child = jail.wait_ready_child(time.monotonic() + 10)
    request = request or Request("1", {}, list(tools), {})
    run = Run(jail, child, request, tool_handler, on_output, LIMITS, runs_per_child)
    return run.execute(wall_s, 0.2)
