"""lackjail on a real two-node Ray cluster, started by the test on this machine.

Ray binds to the machine's interface address even when told 127.0.0.1, so the
driver (tests/batch/ray_driver.py) runs inside a network namespace of its own
with only loopback up: Ray uses 127.0.0.1 there and nothing leaves the machine.
One cluster serves every scenario; each test below checks one part of its report.
"""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(require_nsjail, own_netns, tmp_path_factory):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'lackjail[ray]')")
    work = tmp_path_factory.mktemp("ray")
    out = work / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.run(
        [
            *own_netns,
            sys.executable,
            str(Path(__file__).with_name("ray_driver.py")),
            str(work),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=work,
    )
    assert out.exists(), proc.stderr[-4000:]
    data = json.loads(out.read_text())
    data["driver_stderr"] = proc.stderr[-4000:]
    assert proc.returncode == 0, data["driver_stderr"]
    return data


def by_id(rows):
    ids = [row[0] for row in rows]
    assert len(ids) == len(set(ids)), "an id has two results"
    return {row[0]: row[1:] for row in rows}


def test_two_nodes_run_a_mixed_batch_with_the_statuses_of_a_local_run(report):
    assert report["nodes"] == 2
    ray_run, local = report["mixed_ray"], report["mixed_local"]
    assert ray_run["code"] == 1 and local["code"] == 1, (ray_run["stderr"], local["stderr"])
    on_ray, here = by_id(ray_run["rows"]), by_id(local["rows"])
    assert len(on_ray) == 2000 + 10 + 4
    assert {k: v[0] for k, v in on_ray.items()} == {k: v[0] for k, v in here.items()}
    statuses = Counter(v[0] for v in on_ray.values())
    assert set(statuses) == {"ok", "error", "invalid", "memory", "denied"}, statuses
    assert on_ray["line:2011"][1].endswith("not JSON: Expecting value")
    assert "no kit named 'no-such-kit'" in on_ray["nokit"][1]


def test_a_killed_read_only_actor_s_programs_are_run_again(report):
    kill = report["kill_readonly"]
    rows = by_id(kill["rows"])
    assert sorted(rows) == list(range(400))
    assert (kill["actors_before"], kill["actors_after"]) == (2, 1)
    assert kill["retried"] > 0
    assert all(status == "ok" for status, _ in rows.values())


def test_a_killed_writing_actor_s_programs_are_reported_killed_never_rerun(report):
    kill = report["kill_writing"]
    rows = by_id(kill["rows"])
    assert sorted(rows) == list(range(400))
    assert kill["retried"] == 0
    killed = [msg for status, msg in rows.values() if status == "killed"]
    assert killed, "the killed actor held no program"
    assert all("its kit may write, so it was not run again" in msg for msg in killed)
    assert {status for status, _ in rows.values()} == {"ok", "killed"}


def test_sigint_then_rerun_gives_each_id_once(report):
    first, second = report["resume_first"], report["resume_second"]
    assert first["code"] == 130, first["stderr"]
    assert 60 <= first["lines"] < 600
    assert second["code"] == 0, second["stderr"]
    rows = by_id(report["resume_rows"])
    assert sorted(rows) == list(range(600))


def test_a_node_that_cannot_isolate_refuses_with_the_reason(report):
    message = report["refuse"]
    assert message.startswith("no node could start a jail pool"), message
    assert message.count("refuses:") == 2
    assert "requires nsjail isolation, which this host cannot provide" in message


def test_ray_map_keeps_input_order_and_per_program_params(report):
    assert report["map_values"] == [i + 1000 for i in range(150)] + [-1]
