"""`lackjail check` and `lackjail spec`: output, exit codes, unreadable files."""

import json

import pytest
from click.testing import CliRunner

from lackjail.cli.check import check, spec


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.lackpy"
    good.write_text("x = read_file(path)\nlen(x)\n")
    bad = tmp_path / "bad.lackpy"
    bad.write_text("x = 1\ny = x.__class__\n")
    return good, bad


def run(command, args, stdin=None):
    return CliRunner().invoke(command, args, input=stdin)


def test_valid_files_exit_zero(files):
    good, _ = files
    result = run(check, ["--kit", "read_file", "--param", "path=x", str(good)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


def test_errors_print_file_line_col_and_exit_two(files):
    good, bad = files
    result = run(check, [str(good), str(bad), "--param", "path=x"])
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [
        f"{good}:1:5: 'read_file' is not a tool, an allowed builtin or a parameter; "
        "the bundled kit 'readonly' has it [unknown-call]",
        f"{bad}:2:7: attribute '.__class__' is not allowed: attribute names must not start "
        "with '_' [dunder-attribute]",
    ]


def test_kit_and_params(files):
    good, _ = files
    assert (
        run(check, ["--kit", "find_files,read_file", "--param", "path=x", str(good)]).exit_code == 0
    )
    assert run(check, ["--kit", "find_files", "--param", "path=x", str(good)]).exit_code == 2


def test_stdin():
    assert run(check, ["-"], stdin="x = len([1])\nx\n").exit_code == 0
    result = run(check, ["-"], stdin="eval('1')\n")
    assert result.exit_code == 2
    assert result.stdout == "<stdin>:1:1: 'eval' is a forbidden name in lackpy [forbidden-name]\n"


def test_json(files):
    good, bad = files
    result = run(check, ["--json", "--kit", "read_file", "--param", "path=x", str(good), str(bad)])
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["valid"] is False
    assert [f["valid"] for f in data["files"]] == [True, False]
    assert data["files"][0]["calls"] == ["len", "read_file"]
    assert data["files"][1]["errors"] == [
        {
            "message": "attribute '.__class__' is not allowed: attribute names "
            "must not start with '_'",
            "rule": "dunder-attribute",
            "line": 2,
            "col": 7,
        }
    ]


def test_unreadable_file_is_reported_and_others_still_checked(files, tmp_path):
    good, _ = files
    missing = tmp_path / "missing.lackpy"
    result = run(check, ["--kit", "read_file", "--param", "path=x", str(missing), str(good)])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr and "Traceback" not in result.output
    data = json.loads(run(check, ["--json", str(missing)]).stdout)
    assert data["files"][0]["errors"][0]["rule"] == "read"


def test_binary_garbage_is_a_rejection_not_a_crash(tmp_path):
    junk = tmp_path / "junk.lackpy"
    junk.write_bytes(b"\xff\xfe\x00garbage")
    result = run(check, [str(junk)])
    assert result.exit_code == 2
    assert not isinstance(result.exception, Exception)  # SystemExit(2) only
    assert f"{junk}:1:1:" in result.stdout


def test_no_files_is_a_usage_error():
    assert run(check, []).exit_code == 2


def test_spec_text_and_json():
    text = run(spec, [])
    assert text.exit_code == 0 and "Builtins:" in text.stdout and "format-attribute" in text.stdout
    data = json.loads(run(spec, ["--json"]).stdout)
    assert data["language"] == "lackpy" and "len" in data["builtins"]


@pytest.mark.parametrize("level", ["lackpy", "extended"])
def test_spec_gives_every_rule_a_rejected_and_an_accepted_example(level):
    data = json.loads(run(spec, ["--json", "--language", level]).stdout)
    missing = [r["id"] for r in data["rules"] if not (r["rejected"] and r["accepted"])]
    assert missing == []
    text = run(spec, ["--language", level]).stdout
    assert "(no short example)" not in text
    assert "rejected: a str constant of 32,769 characters" in text  # words shown as words


def test_commands_are_in_the_group():
    from lackjail.cli import cli

    assert run(cli, ["check", "-"], "x = 1\n").exit_code == 0
    assert run(cli, ["check", "-"], "import os\n").exit_code == 2
    assert run(cli, ["spec", "--json"]).exit_code == 0


def test_spec_describes_the_level_asked_for():
    lackpy, extended = run(spec, []), run(spec, ["--language", "extended"])
    assert lackpy.exit_code == 0 and extended.exit_code == 0
    assert lackpy.output.startswith("lackpy ") and extended.output.startswith("extended ")
    assert "def/return" in extended.output and "def/return" not in lackpy.output
    data = json.loads(run(spec, ["--json", "--language", "extended"]).output)
    assert data["language"] == "extended" and "While" in data["nodes"]
    python = run(spec, ["--language", "python"])
    assert python.exit_code == 0 and python.output.startswith("python ")
    assert "json: JSONDecodeError" in python.output
    assert run(spec, ["--language", "cobol"]).exit_code == 2


def test_a_fenced_program_is_checked_as_run_would_with_the_sent_lines():
    fenced = "Try this:\n```python\nx = 1\nimport os\n```\n"
    text = run(check, ["-"], fenced)
    assert text.exit_code == 2
    assert text.stdout.startswith("<stdin>:4:1: 'import' is not allowed")
    assert run(check, ["-"], "```\nx = 1\n```\n").exit_code == 0
