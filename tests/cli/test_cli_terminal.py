"""Program- and workspace-chosen text never drives the terminal: every human output path escapes
control and format characters. --json output stays exact JSON."""

import json

import pytest
from cli_support import lackjail
from click.testing import CliRunner

from lackjail.cli import cli
from lackjail.cli.output import error_line
from lackjail.terminal import terminal_safe

HOSTILE = "\x1b[2K\x1b[1A\r\x1b]0;title\x07\u202e\x9b31m"
RAW = ("\x1b", "\r", "\x07", "\u202e", "\x9b")


def assert_inert(text: str) -> None:
    for char in RAW:
        assert char not in text, repr(text)


def test_terminal_safe_escapes_controls_and_bidi_but_keeps_lines_when_asked():
    assert terminal_safe(HOSTILE) == "\\x1b[2K\\x1b[1A\\r\\x1b]0;title\\x07\\u202e\\x9b31m"
    assert terminal_safe("a\tb\nc", multiline=True) == "a\tb\nc"
    assert terminal_safe("a\tb\nc") == "a\\tb\\nc"
    assert terminal_safe("plain text, ünïcode ✓") == "plain text, ünïcode ✓"


def test_error_lines_escape_file_names_and_messages():
    line = error_line({"message": f"bad {HOSTILE}", "line": 2, "col": 3}, f"x{HOSTILE}.lackpy")
    assert_inert(line)
    assert line.startswith("x\\x1b[2K") and ":2:3: bad " in line


@pytest.fixture(autouse=True)
def _nsjail(require_nsjail):
    pass


PRINTS = (
    f'print("{HOSTILE.encode("unicode_escape").decode()}")\n'
    f'"v{HOSTILE.encode("unicode_escape").decode()}"\n'
)


def test_run_output_and_value_are_escaped_for_a_person_and_exact_in_json():
    human = lackjail("run", "-", stdin=PRINTS)
    assert human.returncode == 0, human.stderr
    assert_inert(human.stdout)
    assert "\\x1b[2K" in human.stdout
    raw = lackjail("run", "-", "--json", stdin=PRINTS).stdout
    data = json.loads(raw)
    assert data["output"] == HOSTILE + "\n" and data["value"] == "v" + HOSTILE
    # json.dumps escapes only U+0000-U+001F: a C1 CSI (U+009B) or a bidi override reached
    # the terminal of whoever ran --json (or --stream) there
    assert_inert(raw)
    assert_inert(lackjail("run", "-", "--stream", stdin=PRINTS).stdout)


def test_run_errors_are_escaped(tmp_path):
    name = tmp_path / f"a{HOSTILE[:8]}.lackpy"
    name.write_text("x = 1 / 0\n")
    proc = lackjail("run", str(name))
    assert proc.returncode == 1
    assert_inert(proc.stderr)
    assert ":1:5: error: ZeroDivisionError" in proc.stderr


def test_dry_run_diff_is_escaped(tmp_path):
    (tmp_path / "notes.txt").write_text("TODO one\n")
    program = f'edit_file("notes.txt", "TODO", "{HOSTILE.encode("unicode_escape").decode()}")\n'
    proc = lackjail(
        "run", "-", "--kit", "files", "--workspace", str(tmp_path), "--dry-run", stdin=program
    )
    assert proc.returncode == 0, proc.stderr
    assert_inert(proc.stderr)
    assert "+\\x1b[2K" in proc.stderr and "-TODO one" in proc.stderr
    assert proc.stdout == "true\n"  # the value alone: the diff is under its heading on stderr
    assert "dry run: nothing was written" in proc.stderr
    assert (tmp_path / "notes.txt").read_text() == "TODO one\n"  # dry run: nothing written


def test_delegate_prints_a_generated_program_escaped(tmp_path, monkeypatch, clean_env):
    templates = tmp_path / ".lackjail" / "templates"
    raw = HOSTILE.replace("\r", "")  # other control characters are valid inside a string literal
    body = f'"{raw}"\n'
    (tmp_path / "t.lackpy").write_text(body)
    made = CliRunner().invoke(
        cli, ["template", "create", "t.lackpy", "--name", "t", "--pattern", "say it"]
    )
    assert made.exit_code == 0, made.output
    assert templates.is_dir()
    shown = CliRunner().invoke(cli, ["delegate", "say it", "--no-run"])
    assert shown.exit_code == 0, shown.output
    assert_inert(shown.stdout)
    assert "\\x1b[2K" in shown.stdout
    ran = CliRunner().invoke(cli, ["delegate", "say it"])
    assert ran.exit_code == 0, ran.output
    assert_inert(ran.stdout + ran.stderr)


def test_bad_input_messages_are_escaped(tmp_path):
    proc = lackjail("run", str(tmp_path / f"missing{HOSTILE}.lackpy"))
    assert proc.returncode == 2 and "cannot read" in proc.stderr
    assert_inert(proc.stderr)
    with_json = lackjail("run", str(tmp_path / f"missing{HOSTILE}.lackpy"), "--json")
    assert (
        with_json.returncode == 2
        and "cannot read" in json.loads(with_json.stdout)["errors"][0]["message"]
    )
    assert_inert(with_json.stdout)


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit"])
def test_gate_reports_escape_hostile_names(tmp_path, fmt):
    """JSON escaped only U+0000-U+001F and JUnit only what XML 1.0 cannot hold: a C1 CSI or a
    bidi override in a file name or output reached the terminal the report was printed on."""
    import xml.etree.ElementTree as ET

    (tmp_path / f"p{HOSTILE[-7:]}.lackpy").write_text("import os\n")
    proc = lackjail("gate", "--format", fmt, ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    json.loads(proc.stdout) if fmt != "junit" else ET.fromstring(proc.stdout.encode())
    assert_inert(proc.stdout)
