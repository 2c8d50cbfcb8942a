"""An integer past Python's digit limit in one input line is that line's `invalid` result: it
never stops the batch, on the first run or on a rerun."""

import json

import pytest
from test_batch_cli import batch, results, write_input

from lackjail.batch import parse_line

HUGE = b"9" * 5000


def test_a_huge_integer_is_the_lines_own_bad_input():
    ident, message = parse_line(b'{"id": 1, "program": "n", "params": {"n": ' + HUGE + b"}}", 2,
                                None, "default", "in.jsonl")  # fmt: skip
    assert ident == "line:2" and message.startswith("in.jsonl:2: not JSON")
    assert "more than 4300 digits" in message


@pytest.mark.usefixtures("require_nsjail")
def test_the_batch_goes_on_and_a_rerun_too(tmp_path):
    write_input(
        tmp_path,
        [
            {"id": "a", "program": "1"},
            b'{"id": "b", "program": "n", "params": {"n": ' + HUGE + b"}}",
            b'{"id": ' + HUGE + b', "program": "2"}',
            {"id": "c", "program": "3"},
        ],
    )
    code, err = batch(tmp_path)
    assert code == 1 and "Traceback" not in err, err
    got = results(tmp_path)
    assert (got["a"]["value"], got["c"]["value"]) == (1, 3)
    for ident in ("line:2", "line:3"):
        assert got[ident]["status"] == "invalid"
        assert "more than 4300 digits" in got[ident]["errors"][0]["message"]
    before = (tmp_path / "out.jsonl").read_bytes()
    code, err = batch(tmp_path)
    assert code == 1 and "0 run, 4 already in the output" in err, err
    assert (tmp_path / "out.jsonl").read_bytes() == before
    assert all(json.loads(line) for line in before.splitlines())
