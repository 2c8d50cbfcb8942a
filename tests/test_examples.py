"""The bundled examples (the README uses them) validate and run as documented."""

from pathlib import Path

import pytest

from lackjail import lang
from lackjail.api import Jail

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# example -> (kit, params, check of the result value)
CASES = {
    "hello.lackpy": (
        None,
        {"name": "world"},
        lambda v: v == {"greeting": "hello, world", "words": 2, "longest": "hello"},
    ),
    "stats.lackpy": (
        None,
        {},
        lambda v: v == {"total": 39, "mean": 3.9, "median": 3.5, "distinct": 7},
    ),
    "count_lines.lackpy": ("readonly", {}, lambda v: v["files"] == 2 and v["lines"] == 3),
    "rename_todo.lackpy": ("files", {"path": "notes.txt"}, lambda v: v == 2),
}


def test_every_example_has_a_case():
    assert sorted(p.name for p in EXAMPLES.glob("*.lackpy")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_validates(name):
    kit, params, _ = CASES[name]
    names = {
        "readonly": ("read_file", "find_files"),
        "files": ("read_file", "find_files", "write_file", "edit_file"),
    }
    result = lang.validate(
        (EXAMPLES / name).read_text(), tools=names.get(kit, ()), params=list(params)
    )
    assert result.valid, result.errors


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs(require_nsjail, tmp_path, name):
    kit, params, check = CASES[name]
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text("z = 3\n")
    (tmp_path / "notes.txt").write_text("a TODO\nb TODO\n")
    with Jail(kit=kit, workspace=tmp_path, workers=1) as jail:
        result = jail.run((EXAMPLES / name).read_text(), params)
    assert result.status == "ok", result.errors
    assert check(result.value), result.value
    if name == "rename_todo.lackpy":
        assert (tmp_path / "notes.txt").read_text() == "a DONE\nb TODO\n"


def test_the_demo_check_line_passes():
    """`make demo` checks every example with this exact command line before it runs one."""
    from click.testing import CliRunner

    from lackjail.cli import cli

    result = CliRunner().invoke(
        cli,
        ["check", str(EXAMPLES), "--kit", "files", "--param", "name=world", "--param", "path=x"],
    )
    assert result.exit_code == 0, result.output
    makefile = (EXAMPLES.parent / "Makefile").read_text()
    assert (
        "lackjail check examples --kit files --param name=world --param path=notes.txt" in makefile
    )
