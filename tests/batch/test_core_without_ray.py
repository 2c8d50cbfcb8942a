"""Ray is an optional extra: the core never imports it, even where it is installed."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
import lackjail, lackjail.api
from lackjail.cli import main
try:
    main(["batch", "in.jsonl", "-o", "out.jsonl"])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "ray": sorted(m for m in sys.modules if m.split(".")[0] == "ray")}))
"""


def test_lackjail_and_a_local_batch_never_import_ray(require_nsjail, tmp_path):
    if importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed, so nothing could import it: make .venv/.ray")
    lines = [{"id": i, "program": f"{i} + 1"} for i in range(5)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen == {"code": 0, "ray": []}, proc.stderr
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 5
