"""What a new user meets first: flags where they type them, a word on success, plain counts."""

import json

import pytest
from click.testing import CliRunner

from lackjail.cli import cli

PROGRAM = "x = 1\nx\n"


def invoke(*args, stdin=None):
    return CliRunner().invoke(cli, list(args), input=stdin)


@pytest.mark.parametrize("flags", [["-q"], ["--quiet"], ["-v"], ["--debug"]])
def test_output_flags_are_taken_after_the_subcommand_too(flags, tmp_path):
    (tmp_path / "p.lackpy").write_text(PROGRAM)
    after = invoke("check", str(tmp_path / "p.lackpy"), *flags)
    before = invoke(*flags, "check", str(tmp_path / "p.lackpy"))
    assert after.exit_code == before.exit_code == 0, after.output
    assert after.output == before.output


def test_quiet_and_verbose_disagree_wherever_they_are_given(tmp_path):
    (tmp_path / "p.lackpy").write_text(PROGRAM)
    done = invoke("-q", "check", str(tmp_path / "p.lackpy"), "-v")
    assert done.exit_code == 2 and "--quiet and --verbose disagree" in done.output


def test_check_says_in_one_line_what_passed(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.lackpy").write_text(PROGRAM)
    done = invoke("check", str(tmp_path))
    assert done.exit_code == 0 and done.output == "lackjail check: 2 programs valid\n"
    one = invoke("check", str(tmp_path / "a.lackpy"))
    assert one.output == "lackjail check: 1 program valid\n"
    assert invoke("-q", "check", str(tmp_path)).output == ""  # a note: --quiet drops it
    assert json.loads(invoke("check", str(tmp_path), "--json").output)["valid"] is True


def test_a_gate_over_an_empty_folder_says_so_once(tmp_path):
    done = invoke("gate", str(tmp_path))
    assert done.exit_code == 0 and done.output.count("no programs found") == 1


def test_kit_list_shows_the_packs_too(tmp_path):
    done = invoke("kit", "list", "--workspace", str(tmp_path))
    lines = {line.split()[0]: line for line in done.output.splitlines()}
    assert lines["fs"].split()[1] == "pack" and "tools" in lines["fs"]
    assert lines["files"].split()[1] == "bundled"  # the kits first, as before


@pytest.mark.nsjail
def test_one_tool_call_is_one_call(tmp_path, require_nsjail):
    (tmp_path / "a.txt").write_text("hello")
    done = invoke(
        "run", "-", "--kit", "readonly", "--workspace", str(tmp_path), "-v",
        stdin="len(read_file('a.txt'))",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "; 1 tool call; " in done.output
