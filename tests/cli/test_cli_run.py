"""`lackjail run` as a user runs it: a real subprocess, real exit codes, stdin, JSON."""

import json

import pytest
from cli_support import lackjail


@pytest.fixture(autouse=True)
def _nsjail(require_nsjail):
    pass


def test_json_contract():
    proc = lackjail("run", "-", "--json", "--param", "n=3", stdin="print('hi')\nn + 1")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("status", "value", "output", "errors", "trace", "isolation", "stats"):
        assert key in out
    assert (out["status"], out["value"], out["output"], out["isolation"]) == (
        "ok",
        4,
        "hi\n",
        "nsjail",
    )
    assert set(out["stats"]) >= {"wall_ms", "cpu_ms", "max_rss_kb", "tool_calls"}


def test_param_strings_and_scalars():
    proc = lackjail(
        "run",
        "-",
        "--json",
        "--param",
        "a=hello",
        "--param",
        "b=2.5",
        "--param",
        "c=true",
        stdin="[a, b, c]",
    )
    assert json.loads(proc.stdout)["value"] == ["hello", 2.5, True]


def test_exit_1_when_the_program_fails():
    proc = lackjail("run", "-", stdin="x = 1 / 0")
    assert proc.returncode == 1
    assert "<stdin>:1:5: error: ZeroDivisionError" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_exit_2_when_rejected():
    proc = lackjail("run", "-", stdin="import os")
    assert proc.returncode == 2
    assert proc.stderr.startswith("<stdin>:1:")


def test_human_output_prints_value_as_json():
    proc = lackjail("run", "examples/hello.lackpy", "--param", "name=world")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "hello, world"
    assert json.loads(lines[1]) == {"greeting": "hello, world", "words": 2, "longest": "hello"}


def test_stream_is_ndjson_ending_with_result():
    proc = lackjail("run", "-", "--stream", stdin="print('a')\n5")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0] == {"event": "output", "text": "a\n"}
    assert events[-1]["event"] == "result" and events[-1]["value"] == 5
    assert proc.returncode == 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "missing.lackpy"], "cannot read missing.lackpy"),
        (["run", "-", "--policy", "nosuch"], "no policy named 'nosuch'"),
        (["run", "-", "--param", "novalue"], "is not NAME=VALUE"),
        (["run", "-", "--mode", "fast"], "Invalid value for '--mode'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    proc = lackjail(*args, stdin="1")
    assert proc.returncode == 2, proc
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_trace_args_are_json_values_not_reprs(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    program = 'read_file("a.txt")\nfind_files("*.txt")\n'
    proc = lackjail(
        "run", "-", "--kit", "readonly", "--workspace", str(tmp_path), "--json", stdin=program
    )
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(proc.stdout)["trace"]
    assert [(t["tool"], t["args"]) for t in trace] == [
        ("read_file", ["a.txt"]),
        ("find_files", ["*.txt"]),
    ]


def test_param_lists_and_dicts_arrive_as_json_values():
    proc = lackjail(
        "run", "-", "--json", "--param", "l=[1,2]", "--param", 'd={"k": "v"}', stdin="[l, d]"
    )
    assert json.loads(proc.stdout)["value"] == [[1, 2], {"k": "v"}]


def test_a_failing_call_chain_is_shown_outermost_first():
    program = "def inner(x):\n    return 10 // x\n\ndef outer(y):\n    return inner(y - 1)\n\n"
    program += "outer(1)"
    proc = lackjail("run", "-", "--language", "extended", stdin=program)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    start = lines.index("  traceback (most recent call last):")
    assert lines[start - 1].startswith("<stdin>:2:12: error: ZeroDivisionError")
    assert lines[start + 1 : start + 4] == [
        "    <stdin>:7:1: in <module>",
        "    <stdin>:5:12: in outer",
        "    <stdin>:2:12: in inner",
    ]
    proc = lackjail("run", "-", "--language", "extended", "--json", stdin=program)
    data = json.loads(proc.stdout)
    assert [f["function"] for f in data["errors"][0]["traceback"]] == ["<module>", "outer", "inner"]


def test_a_fenced_program_runs_and_its_places_are_the_file_s(tmp_path):
    reply = "Sure, here it is:\n\n```python\nxs = [1, 2]\nxs[5]\n```\n\nIt fails on purpose.\n"
    (tmp_path / "reply.md").write_text(reply)
    proc = lackjail("run", str(tmp_path / "reply.md"))
    assert proc.returncode == 1
    assert f"{tmp_path / 'reply.md'}:5:1: error: IndexError" in proc.stderr


def test_a_rejection_names_the_flag_of_the_level_that_accepts_it():
    proc = lackjail("run", "-", stdin="```\ndef f():\n    return 1\nf()\n```\n")
    assert proc.returncode == 2
    assert proc.stderr.startswith("<stdin>:2:1: invalid: 'def'")
    assert "; accepted at --language extended [forbidden-node]" in proc.stderr


def test_the_workspace_chooses_a_level_only_among_the_policy_s(tmp_path):
    (tmp_path / ".lackjail").mkdir()
    (tmp_path / ".lackjail" / "config.toml").write_text('[defaults]\nlanguage = "extended"\n')
    program = "def f():\n    return 7\nf()"
    proc = lackjail("run", "-", "--workspace", str(tmp_path), stdin=program)
    assert (proc.returncode, proc.stdout) == (0, "7\n"), proc.stderr
    (tmp_path / "only.toml").write_text('name = "only"\nlanguages = ["lackpy"]\n')
    proc = lackjail(
        "run", "-", "--workspace", str(tmp_path), "--policy", str(tmp_path / "only.toml"),
        stdin=program,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "language level 'extended' (" in proc.stderr
    assert ".lackjail/config.toml [defaults] language) is not allowed by policy 'only'" in (
        proc.stderr
    )
    proc = lackjail("run", "-", "--policy", "strict", "--language", "lackpy", stdin="1")
    assert proc.returncode == 0


def test_seed_repeats_the_programs_random_numbers():
    draws = "import random\n[random.random() for _ in range(3)]"

    def value(*seed):
        proc = lackjail("run", "-", "--json", "--language", "python", *seed, stdin=draws)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["value"]

    assert value("--seed", "5") == value("--seed", "5") != value("--seed", "6")
    refused = lackjail("run", "-", "--seed", "5", stdin="1")  # the default level has no random
    assert refused.returncode == 2 and "only --language python has" in refused.stderr
    bad = lackjail("run", "-", "--language", "python", "--seed", "-1", stdin="1")
    assert bad.returncode == 2 and "--seed" in bad.stderr
