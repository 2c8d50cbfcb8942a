"""`batch --ray` with no cluster at the address: a clear error within seconds (exit 2), and the
output file as it was, so the rerun runs every line once.

Each call runs in a network namespace of its own with only loopback up: nothing listens on
any port there, and Ray's resolution of a loopback address stays 127.0.0.1, so no connection
leaves the namespace. No Ray is started. The 60 s bound is generous: without the port probe
`ray.init` waits about two minutes.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EARLIER = b'{"id": "done", "status": "ok", "value": 1}\n'  # a result from an earlier run


@pytest.fixture(autouse=True)
def _ray():
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'lackjail[ray]')")


def write_input(tmp_path):
    lines = [
        {"id": "done", "program": "1"},
        {"id": "a", "program": "1 + 1"},
        {"id": "noprog"},  # invalid: a result that must not be written before the cluster answers
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def batch(prefix, tmp_path, *args, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_TMPDIR")}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "lackjail.cli", "batch", "in.jsonl", "-o", "out.jsonl"]
        + list(args),
        cwd=tmp_path,
        env={**base, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_clear_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


def assert_rerun_runs_each_line_once(tmp_path, skipped):
    proc = batch([], tmp_path)  # on this machine's pool, outside the namespace
    assert proc.returncode == 1, proc.stderr  # the line without a program is a failure
    assert f"{3 - skipped} run, {skipped} already in the output" in proc.stderr, proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(row["id"] for row in rows) == ["a", "done", "noprog"]
    status = {row["id"]: row["status"] for row in rows}
    assert (status["a"], status["noprog"]) == ("ok", "invalid")


@pytest.mark.parametrize("address", ["127.0.0.1:6399", "ray://127.0.0.1:6399"])
def test_nothing_at_the_address_is_a_clear_error_and_nothing_is_written(
    own_netns, require_nsjail, tmp_path, address
):
    write_input(tmp_path)
    proc = batch(own_netns, tmp_path, "--ray", address)
    assert_clear_error(
        proc,
        f"cannot reach the Ray cluster at '{address}'",
        "nothing listens at 127.0.0.1:6399 (connection refused)",
        "ray start --head",
    )
    assert not (tmp_path / "out.jsonl").exists()
    assert_rerun_runs_each_line_once(tmp_path, skipped=0)


def test_auto_with_a_recorded_cluster_that_is_gone_names_it(own_netns, require_nsjail, tmp_path):
    # `ray start` records the cluster's address in <Ray temp dir>/ray/ray_current_cluster;
    # here it names a port nothing listens on, as when that cluster runs in another namespace.
    # Ray prefers a cluster it sees running on this machine when there is exactly one (other
    # tests may run one, in a namespace of their own): unreachable from here just the same.
    (tmp_path / "raytmp" / "ray").mkdir(parents=True)
    (tmp_path / "raytmp" / "ray" / "ray_current_cluster").write_text("127.0.0.1:6398\n")
    write_input(tmp_path)
    (tmp_path / "out.jsonl").write_bytes(EARLIER)
    proc = batch(own_netns, tmp_path, "--ray", "auto", RAY_TMPDIR=str(tmp_path / "raytmp"))
    assert_clear_error(
        proc,
        "cannot reach the Ray cluster at 'auto'",
        "the cluster last started here with `ray start`",
        "--ray HOST:PORT",
        "another network namespace",
    )
    assert re.search(r"\): .*\d:\d+", proc.stderr), proc.stderr  # names the host:port it tried
    assert (tmp_path / "out.jsonl").read_bytes() == EARLIER  # untouched
    assert_rerun_runs_each_line_once(tmp_path, skipped=1)


def test_auto_takes_ray_address_from_the_environment(own_netns, tmp_path):
    write_input(tmp_path)
    proc = batch(own_netns, tmp_path, "--ray", "auto", RAY_ADDRESS="127.0.0.1:6397")
    assert_clear_error(
        proc, "at 'auto' (RAY_ADDRESS='127.0.0.1:6397')", "nothing listens at 127.0.0.1:6397"
    )
    assert not (tmp_path / "out.jsonl").exists()
