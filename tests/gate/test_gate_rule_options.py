"""The gate's options cannot quietly turn CI green: an unknown rule id in --select/--ignore and
run verdicts selected without --run are usage errors; `--run --dry-run` writes nothing."""

import json

import pytest
from click.testing import CliRunner

from lackjail.cli.gate import gate


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.lackpy").write_text("import os\n")
    return tmp_path


@pytest.mark.parametrize(
    "args, option, named",
    [
        (["--select", "nosuchrule"], "--select", "'nosuchrule'"),
        (["--select", "forbidden-node,forbiden-name"], "--select", "'forbiden-name'"),
        (["--ignore", "verdict/timout", "--run"], "--ignore", "'verdict/timout'"),
        (["--ignore", "nosuch-"], "--ignore", "'nosuch-'"),
    ],
)
def test_an_unknown_rule_or_family_is_a_usage_error(tree, args, option, named):
    out = CliRunner().invoke(gate, [".", *args])
    assert out.exit_code == 2, out.output
    assert option in out.output and named in out.output and "lackjail spec" in out.output


def test_known_ids_and_families_still_select(tree):
    for args in (["--select", "forbidden-"], ["--ignore", "verdict/"], ["--select", "read"]):
        assert CliRunner().invoke(gate, [".", *args]).exit_code in (0, 1), args
    out = CliRunner().invoke(gate, [".", "--select", "forbidden-node"])
    assert out.exit_code == 1 and "FAIL" in out.output


@pytest.mark.parametrize("select", ["verdict/", "verdict/timeout", "forbidden-node,verdict/error"])
def test_selecting_run_verdicts_without_run_is_an_error(tree, select):
    out = CliRunner().invoke(gate, [".", "--select", select])
    assert out.exit_code == 2 and "without --run nothing runs" in out.output, out.output


def test_dry_run_needs_run(tree):
    out = CliRunner().invoke(gate, [".", "--dry-run"])
    assert out.exit_code == 2 and "--dry-run needs --run" in out.output


@pytest.mark.nsjail
def test_run_dry_run_shows_the_writes_and_makes_none(tmp_path, monkeypatch, require_nsjail):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("old\n")
    (tmp_path / "edit.lackpy").write_text('write_file("notes.txt", "new\\n")\n')
    args = [".", "--run", "--kit", "files", "--policy", "default"]
    out = CliRunner().invoke(gate, [*args, "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "-old" in out.output and "+new" in out.output
    assert (tmp_path / "notes.txt").read_text() == "old\n"
    data = json.loads(CliRunner().invoke(gate, [*args, "--dry-run", "--json"]).output)
    assert "+new" in data["programs"][0]["diff"]
    assert (tmp_path / "notes.txt").read_text() == "old\n"
    assert CliRunner().invoke(gate, args).exit_code == 0  # without --dry-run it writes
    assert (tmp_path / "notes.txt").read_text() == "new\n"
