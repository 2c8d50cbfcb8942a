"""`lackjail kit list|info|create` and the terminal approver."""

import io
import json
import os
import pty
import threading

import pytest
from click.testing import CliRunner

from lackjail.cli.approve import terminal_approver
from lackjail.cli.kit import kit
from lackjail.errors import ToolDenied


def run(*args):
    result = CliRunner().invoke(kit, list(args))
    assert "Traceback" not in result.output
    return result


def test_list_shows_bundled_and_workspace_kits(ws):
    (ws / ".lackjail" / "kits").mkdir(parents=True)
    (ws / ".lackjail" / "kits" / "broken.kit").write_text("raed_file\n")
    result = run("list", "--workspace", str(ws))
    assert result.exit_code == 0
    assert "files            bundled   6 tools, w=3" in result.output
    assert "broken           workspace error: unknown tool 'raed_file'" in result.output
    rows = json.loads(run("list", "--workspace", str(ws), "--json").output)
    assert {r["name"] for r in rows} == {"broken", "files", "readonly", "text"}
    assert next(r for r in rows if r["name"] == "text")["grade"] == {"w": 0, "d": 0}


def test_info_text_and_json(ws):
    result = run("info", "readonly", "--workspace", str(ws))
    assert result.exit_code == 0 and result.output.startswith("kit readonly - Read and find files")
    assert "find_files(pattern: str) -> list[str]" in result.output
    data = json.loads(run("info", "read_file,fs", "--json", "--workspace", str(ws)).output)
    assert data["names"] == ["read_file", "fs"] and data["grade"] == {"w": 3, "d": 3}


def test_info_bad_input_exits_2_with_one_line(ws):
    result = run("info", "raed_file", "--workspace", str(ws))
    assert result.exit_code == 2
    assert (
        result.output.startswith("Error: no kit named 'raed_file'")
        and result.output.count("\n") == 1
    )


def test_create_then_use_then_refuse_overwrite(ws):
    result = run(
        "create",
        "review",
        "--tools",
        "read_file, find_files",
        "--description",
        "Review code",
        "--docs",
        "docs/guide.md",
        "--workspace",
        str(ws),
    )
    assert result.exit_code == 0 and "review.kit (2 tools)" in result.output
    assert (ws / ".lackjail" / "kits" / "review.kit").read_text() == (
        "---\nname: review\ndescription: Review code\ndocs: "
        "docs/guide.md\n---\nread_file\nfind_files\n"
    )
    data = json.loads(run("info", "review", "--json", "--workspace", str(ws)).output)
    assert data["description"] == "Review code" and data["docs"] == {"docs/guide.md": "kit review"}
    again = run("create", "review", "--tools", "read_file", "--workspace", str(ws))
    assert again.exit_code == 2 and "--force" in again.output
    assert (
        run("create", "review", "--tools", "read_file", "--force", "--workspace", str(ws)).exit_code
        == 0
    )


@pytest.mark.parametrize(
    "args, word",
    [
        (["create", "x", "--tools", "raed_file"], "did you mean 'read_file'"),
        (["create", "../x", "--tools", "read_file"], "kit name '../x' is not valid"),
        (["create", "x", "--tools", ","], "names no tool"),
        (["create", "x", "--tools", "read_file", "--description", "two\nlines"], "one line"),
    ],
)
def test_create_bad_input(ws, args, word):
    result = run(*args, "--workspace", str(ws))
    assert result.exit_code == 2 and word in result.output and result.output.startswith("Error: ")
    assert not (ws / ".lackjail" / "kits" / "x.kit").exists()


@pytest.fixture
def terminal(monkeypatch):
    """TYPE(text): stdin becomes a pseudo-terminal on which TEXT has been typed."""
    masters, stdins = [], []

    def type_(text: str):
        master, slave = pty.openpty()
        os.write(master, text.encode())
        if text:
            masters.append(master)
        else:
            os.close(master)  # the terminal hung up: EOF
        stdins.append(open(slave, encoding="utf-8"))
        monkeypatch.setattr("sys.stdin", stdins[-1])

    yield type_
    for stdin in stdins:
        stdin.close()
    for master in masters:
        os.close(master)


def test_terminal_approver(monkeypatch, capsys, terminal):
    call = {
        "tool": "write_file",
        "args": ["a.txt", "x"],
        "kwargs": {},
        "reason": "the tool requires approval",
    }
    assert terminal_approver(yes=True)(call) is True
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    with pytest.raises(ToolDenied, match="no terminal to ask: pass --yes") as denied:
        terminal_approver()(call)  # no terminal: deny without asking, saying how to approve
    assert "or use a policy that does not require approval" in str(denied.value)
    assert capsys.readouterr().err == ""  # and nothing was asked
    terminal("y\n")
    assert terminal_approver()(call) is True
    assert 'allow write_file("a.txt", "x")?' in capsys.readouterr().err
    terminal("yes\n")
    assert terminal_approver()(call) is True
    terminal("n\n")
    assert terminal_approver()(call) is False
    terminal("sure\n")
    assert terminal_approver()(call) is False  # only y or yes allows
    terminal("")  # EOF: the terminal hung up, so it may no longer be one; denied either way
    try:
        assert terminal_approver()(call) is False
    except ToolDenied as exc:
        assert "no terminal to ask" in str(exc)
    stopped = threading.Event()
    stopped.set()
    terminal("y\n")
    assert terminal_approver(stop=stopped)(call) is False  # Ctrl-C came: unanswered is denied
    capsys.readouterr()
    hostile = {**call, "args": ["\x1b[2K\x1b[1Aok.txt", "\u202ex"], "reason": "\x1b]0;t\x07"}
    terminal("n\n")
    assert terminal_approver()(hostile) is False
    asked = capsys.readouterr().err
    assert "\x1b" not in asked and "\u202e" not in asked and "\x07" not in asked
    assert "\\u001b[2K" in asked and "\\x1b]0;t" in asked
