"""`lackjail batch --processes`: the batch's pool sharded over controller processes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _batch(tmp_path, *args):
    lines = [{"id": f"p{i}", "program": f"{i} * 2"} for i in range(20)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return subprocess.run(
        [sys.executable, "-m", "lackjail.cli", "batch", "in.jsonl", "-o", "out.jsonl", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_sharded_batch_writes_every_result(require_nsjail, tmp_path):
    done = _batch(tmp_path, "--workers", "2", "--processes", "2")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted((r["id"], r["value"]) for r in rows) == sorted(
        (f"p{i}", i * 2) for i in range(20)
    )
    assert {r["isolation"] for r in rows} == {"nsjail"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--processes", "two"), "'two' is neither 'auto' nor a whole number"),
        (("--workers", "2", "--processes", "3"), "3 is more than --workers 2"),
    ],
)
def test_a_bad_processes_value_is_a_usage_error(tmp_path, args, says):
    done = _batch(tmp_path, *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "out.jsonl").exists()
