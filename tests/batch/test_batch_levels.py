"""A batch line chooses its language level among its policy's, and may come in a Markdown fence."""

import pytest
from test_batch_cli import batch, results, write_input

DEF = "def f(x):\n    return 10 // x\n\nf(0)"


@pytest.fixture(autouse=True)
def _nsjail(require_nsjail):
    pass


def test_lines_choose_their_level_within_the_policy(tmp_path):
    write_input(
        tmp_path,
        [
            {"id": "plain", "program": DEF},
            {"id": "ext", "program": DEF, "language": "extended"},
            {"id": "strict", "program": DEF, "language": "extended", "policy": "strict"},
            {"id": "nope", "program": DEF, "language": "cobol"},
            {"id": "fenced", "program": f"Here:\n```python\n{DEF}\n```\n", "language": "extended"},
        ],
    )
    (tmp_path / "only.toml").write_text('name = "only"\nlanguages = ["lackpy"]\n')
    code, err = batch(tmp_path)
    assert code == 1, err
    got = results(tmp_path)
    assert got["plain"]["status"] == "invalid"
    assert got["plain"]["errors"][0]["message"].endswith("accepted with language='extended'")
    for ident, above in (("ext", 0), ("strict", 0), ("fenced", 2)):
        error = got[ident]["errors"][0]
        assert got[ident]["status"] == "error" and "ZeroDivisionError" in error["message"]
        assert error["line"] == 2 + above  # in the line's program as it was sent
        assert [f["line"] for f in error["traceback"]] == [4 + above, 2 + above]
    assert got["nope"]["status"] == "invalid"
    assert "'language' must be one of lackpy, extended" in got["nope"]["errors"][0]["message"]


def test_a_level_the_policy_refuses_is_each_of_its_lines_invalid(tmp_path):
    (tmp_path / "only.toml").write_text('name = "only"\nlanguages = ["lackpy"]\n')
    write_input(tmp_path, [{"id": "a", "program": DEF, "language": "extended"}])
    code, err = batch(tmp_path, "--policy", "only.toml")
    assert code == 1, err
    message = results(tmp_path)["a"]["errors"][0]["message"]
    assert "not allowed by policy 'only'; it allows: lackpy" in message


def test_language_given_holds_for_every_line(tmp_path):
    write_input(
        tmp_path,
        [
            {"id": "a", "program": DEF},
            {"id": "b", "program": DEF, "language": "lackpy"},
        ],
    )
    code, err = batch(tmp_path, "--language", "extended")
    assert code == 1, err
    got = results(tmp_path)
    assert got["a"]["status"] == "error"  # ran at extended: ZeroDivisionError
    assert got["b"]["status"] == "invalid"
    assert "runs every line with --language 'extended'" in got["b"]["errors"][0]["message"]


def test_language_the_policy_refuses_is_bad_input(tmp_path):
    (tmp_path / "only.toml").write_text('name = "only"\nlanguages = ["lackpy"]\n')
    write_input(tmp_path, [{"id": "a", "program": "1"}])
    code, err = batch(tmp_path, "--policy", "only.toml", "--language", "extended")
    assert code == 2 and "not allowed by policy 'only'" in err
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()
