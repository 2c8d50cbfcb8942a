"""The batch file formats on their own (no jail): input lines and the output's resume scan."""

import pytest

from lackjail.batch import BatchInputError, Job, ResultWriter, parse_line, read_done
from lackjail.workspace.hostfs import HostFile


def test_a_good_line_becomes_a_job_with_the_defaults():
    job = parse_line(b'{"id": "x", "program": "1", "params": {"a": 1}}', 4, "files", "default")
    assert job == Job(4, "x", "1", {"a": 1}, "files", "default")
    job = parse_line(b'{"id": 7, "program": "1", "kit": "text", "policy": "p"}', 1, None, "d")
    assert (job.id, job.kit, job.policy, job.params) == (7, "text", "p", {})


@pytest.mark.parametrize(
    "raw, ident, message",
    [
        (b'{"id": true, "program": "1"}', "line:3", "f:3: the id must be a string or an integer"),
        (b'{"id": 1.5, "program": "1"}', "line:3", "the id must be a string or an integer"),
        (b'{"id": "a", "program": 3}', "a", "f:3: 'program' must be a string"),
        (b'{"id": "a", "program": "1", "params": []}', "a", "'params' must be an object"),
        (b'{"id": "a", "program": "1", "kit": 3}', "a", "'kit' must be a string"),
        (b'{"id": "a", "program": "1", "policy": "/tmp/loose.toml"}', "a", "a name, not a path"),
        (b'{"id": "a", "program": "1", "policy": "x.toml"}', "a", "pass a file with --policy"),
        (b'{"id": "a", "program": "1", "kit": "../k.kit"}', "a", "pass a file with --kit"),
        (b'"just a string"', "line:3", "a JSON object is needed, not str"),
        (b'{"id": "a"} trailing', "line:3", "f:3:13: not JSON: Extra data"),
    ],
)
def test_bad_lines_name_the_line_and_the_fix(raw, ident, message):
    got_ident, got_message = parse_line(raw, 3, None, "default", "f")
    assert got_ident == ident and message in got_message


def test_read_done_keeps_ids_apart_by_type(tmp_path):
    path = tmp_path / "out.jsonl"
    writer = ResultWriter(HostFile(path))
    writer.write(1, {"status": "ok"})
    writer.write("1", {"status": "error", "value": b"\xff"})
    writer.close()
    assert read_done(HostFile(path)) == {"1": "ok", '"1"': "error"}


def test_read_done_cuts_only_a_torn_last_line(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": 1, "status": "ok"}\n{"id": 2, "sta')
    assert read_done(HostFile(path)) == {"1": "ok"}
    assert path.read_bytes() == b'{"id": 1, "status": "ok"}\n'
    assert read_done(HostFile(tmp_path / "none.jsonl")) == {}


def test_read_done_refuses_a_file_that_is_not_results(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": 1, "status": "ok"}\n[]\n')
    with pytest.raises(BatchInputError, match=r"out.jsonl:2: not a result line"):
        read_done(HostFile(path))


def test_a_line_nested_too_deeply_is_its_own_bad_line():
    deep = b'{"id": 1, "program": "1", "params": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    ident, message = parse_line(deep, 5, None, "default", "f")
    assert ident == "line:5" and message == "f:5: not JSON this program reads: nested too deeply"


def test_a_result_line_nested_too_deeply_is_no_result_line(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"id": 1, "status": "ok"}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    with pytest.raises(BatchInputError, match=r"out.jsonl:2: not a result line"):
        read_done(HostFile(path))


@pytest.mark.parametrize("key, pinned_value", [("kit", "readonly"), ("policy", "strict")])
def test_a_pinned_kit_or_policy_cannot_be_chosen_by_a_line(key, pinned_value):
    kit, policy = ("readonly", "default") if key == "kit" else (None, "strict")
    loose = {"kit": "files", "policy": "default"}[key]
    line = f'{{"id": "x", "program": "1", "{key}": "{loose}"}}'.encode()
    ident, message = parse_line(line, 2, kit, policy, "f", frozenset({key}))
    assert ident == "x"
    assert message == (
        f"f:2: the line asks for {key} {loose!r}, but this batch runs every line with "
        f"--{key} {pinned_value!r} (drop the line's '{key}', or leave --{key} out to let "
        "the lines choose)"
    )
    same = f'{{"id": "x", "program": "1", "{key}": "{pinned_value}"}}'.encode()
    assert isinstance(parse_line(same, 2, kit, policy, "f", frozenset({key})), Job)
    chosen = parse_line(line, 2, kit, policy, "f")  # not pinned: the line chooses
    assert getattr(chosen, key) == loose
