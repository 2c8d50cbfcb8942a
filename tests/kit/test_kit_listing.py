"""list_dir and grep: the read-only kit's listing and search tools, confined like read_file."""

import os

import pytest


def test_list_dir_names_folders_with_a_slash_and_shows_staged_files(session_for, ws):
    s = session_for("files")
    assert s.call("write_file", ["src/new.py", "x = 1\n"], {}).ok
    assert s.call("list_dir", ["."], {}).value == ["a.txt", "docs/", "src/"]
    assert s.call("list_dir", ["src"], {}).value == ["main.py", "new.py"]
    assert s.call("list_dir", [], {}).value == ["a.txt", "docs/", "src/"]  # default: the root


@pytest.mark.parametrize("path", ["..", "../outside", "/etc", "src/../.."])
def test_list_dir_never_leaves_the_workspace(session_for, path):
    out = session_for("readonly").call("list_dir", [path], {})
    assert not out.ok and out.verdict is None
    assert "outside" not in str(out.value)


def test_list_dir_refuses_a_symlink_out_and_a_file(session_for, ws, outside):
    os.symlink(outside, ws / "out")
    s = session_for("readonly")
    out = s.call("list_dir", ["out"], {})
    assert not out.ok and "outside the workspace" in out.error
    assert not s.call("list_dir", ["a.txt"], {}).ok


def test_list_dir_of_a_protected_folder_is_refused(session_for, ws):
    (ws / ".ssh").mkdir()
    (ws / ".ssh" / "id_rsa").write_text("KEY")
    out = session_for("readonly").call("list_dir", [".ssh"], {})
    assert not out.ok and "read_deny" in out.error


def test_grep_finds_literal_text_with_1_based_lines(session_for, ws):
    (ws / "src" / "util.py").write_text("a = 1\n# TODO: tidy (.*)\nb = 2  # TODO\n")
    s = session_for("readonly")
    assert s.call("grep", ["TODO"], {}).value == [
        {"path": "src/util.py", "line": 2, "text": "# TODO: tidy (.*)"},
        {"path": "src/util.py", "line": 3, "text": "b = 2  # TODO"},
    ]
    # the text is literal, never a regular expression
    assert s.call("grep", ["(.*)"], {}).value == [
        {"path": "src/util.py", "line": 2, "text": "# TODO: tidy (.*)"}
    ]
    assert s.call("grep", ["alpha", "*.txt"], {}).value == [
        {"path": "a.txt", "line": 1, "text": "alpha"}
    ]
    assert not s.call("grep", [""], {}).ok


def test_grep_skips_binary_and_protected_files_and_never_follows_links_out(
    session_for, ws, outside
):
    (ws / "blob.bin").write_bytes(b"\xff\xfeTOP SECRET")
    (ws / ".env").write_text("TOP SECRET\n")
    os.symlink(outside / "secret.txt", ws / "leak.txt")
    out = session_for("readonly").call("grep", ["SECRET"], {"pattern": "**/*"})
    assert out.ok and out.value == []
    out = session_for("readonly").call("grep", ["SECRET", ".*"], {})
    assert out.ok and out.value == []  # .env matched the glob but its read rule skips it


def test_grep_charges_the_read_budget(session_for, ws):
    (ws / "big.txt").write_text("x" * 5000)
    out = session_for("readonly", read_bytes=1000).call("grep", ["x", "*.txt"], {})
    assert not out.ok and "read budget" in out.error
