"""Commits are all or nothing, survive kill -9, and never lose a concurrent edit."""

import json
import os
import signal
import subprocess
import sys

import pytest
from host_support import session

from lackjail.errors import CommitError
from lackjail.workspace import Workspace

pytestmark = pytest.mark.usefixtures("private_state")


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("old a\n")
    (root / "b.txt").write_text("old b\n")
    return root


def leftovers(root):
    return sorted(
        os.path.join(d, n) for d, _, files in os.walk(root) for n in files if ".lackjail-" in n
    )


def test_file_and_folder_of_the_same_name_writes_nothing(ws):
    s = session(ws)
    assert s.call("write_file", ["a.txt", "new a\n"], {}).ok
    assert s.call("write_file", ["z", "1"], {}).ok
    assert s.call("write_file", ["z/q", "2"], {}).ok
    with pytest.raises(CommitError, match="'z'.*folder"):
        s.commit()
    assert (ws / "a.txt").read_text() == "old a\n"
    assert not (ws / "z").exists()
    assert leftovers(ws) == []


def test_a_file_in_the_way_of_a_folder_writes_nothing(ws):
    (ws / "f").write_text("a file\n")
    s = session(ws)
    assert s.call("write_file", ["a.txt", "new a\n"], {}).ok
    assert s.call("write_file", ["new/dir/x.txt", "x"], {}).ok
    (ws / "new").write_text("appeared\n")  # a file appears where a folder must go
    with pytest.raises(CommitError):
        s.commit()
    assert (ws / "a.txt").read_text() == "old a\n"
    assert (ws / "new").read_text() == "appeared\n"
    assert leftovers(ws) == []


def test_failure_while_replacing_restores_what_was_replaced(ws):
    s = session(ws)
    for name in ("a.txt", "b.txt", "c/new.txt"):
        assert s.call("write_file", [name, f"new {name}\n"], {}).ok
    steps = []

    def fault(step):
        steps.append(step)
        if steps.count("replace") == 3:  # a.txt and b.txt replaced, then the disk fails
            raise OSError(5, "Input/output error")

    with pytest.raises(CommitError, match="nothing was written"):
        s.workspace.commit(fault=fault)
    assert (ws / "a.txt").read_text() == "old a\n"
    assert (ws / "b.txt").read_text() == "old b\n"
    assert not (ws / "c").exists()
    assert leftovers(ws) == []


def test_a_file_changed_after_the_run_read_it_is_a_conflict(ws):
    s = session(ws)
    assert s.call("edit_file", ["a.txt", "old", "agent's"], {}).ok
    assert s.call("write_file", ["b.txt", "agent's b\n"], {}).ok
    (ws / "a.txt").write_text("a user's concurrent edit\n")
    with pytest.raises(CommitError, match="'a.txt' changed on disk"):
        s.commit()
    assert (ws / "a.txt").read_text() == "a user's concurrent edit\n"
    assert (ws / "b.txt").read_text() == "old b\n"


def test_a_file_changed_after_it_was_staged_unread_is_a_conflict(ws):
    s = session(ws)
    assert s.call("write_file", ["b.txt", "agent's b\n"], {}).ok
    (ws / "b.txt").write_text("a user's concurrent edit\n")
    with pytest.raises(CommitError, match="'b.txt' changed on disk"):
        s.commit()
    assert (ws / "b.txt").read_text() == "a user's concurrent edit\n"


def test_a_file_created_meanwhile_is_a_conflict(ws):
    s = session(ws)
    assert s.call("write_file", ["new.txt", "agent's\n"], {}).ok
    (ws / "new.txt").write_text("someone else's\n")
    with pytest.raises(CommitError, match="'new.txt' changed on disk"):
        s.commit()
    assert (ws / "new.txt").read_text() == "someone else's\n"


KILLED_COMMIT = """
import os, signal, sys
sys.path.insert(0, sys.argv[4])
from host_support import session
s = session(sys.argv[1])
for name in ("a", "b", "sub/c"):
    s.call("write_file", [name + ".txt", "new " + name + "\\n"], {})
seen = []
def fault(name):
    seen.append(name)
    if name == sys.argv[2] and seen.count(name) == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
s.workspace.commit(fault=fault)
"""


@pytest.mark.parametrize(
    "step, count",
    [("journal", 1), ("prepare", 1), ("prepare", 3), ("replace", 1), ("replace", 2),
     ("replace", 3), ("finish", 1)],
)  # fmt: skip
def test_kill_9_during_a_commit_leaves_old_or_new_and_recovery_cleans_up(ws, step, count):
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_COMMIT, str(ws), step, str(count), here], timeout=120
    )
    assert proc.returncode == -signal.SIGKILL
    for name in ("a", "b"):  # never partial
        assert (ws / f"{name}.txt").read_text() in (f"old {name}\n", f"new {name}\n")
    Workspace(ws)  # the next run on this workspace rolls the interrupted commit back
    assert leftovers(ws) == []
    assert (ws / "a.txt").read_text() == "old a\n"
    assert (ws / "b.txt").read_text() == "old b\n"
    assert not (ws / "sub").exists()


def test_a_failed_undo_is_reported_as_written_and_finished_by_the_next_run(ws, monkeypatch):
    s = session(ws)
    for name in ("a.txt", "b.txt", "c.txt"):
        assert s.call("write_file", [name, f"new {name}\n"], {}).ok
    steps = []
    real_rename = os.rename

    def broken_rename(*args, **kwargs):
        raise OSError(5, "Input/output error")

    def fault(step):
        steps.append(step)
        if steps.count("replace") == 3:  # a.txt and b.txt replaced; the disk now fails
            monkeypatch.setattr(os, "rename", broken_rename)
            raise OSError(5, "Input/output error")

    with pytest.raises(CommitError) as caught:
        s.workspace.commit(fault=fault)
    assert caught.value.written == ["a.txt", "b.txt"]
    assert "could not be put back" in str(caught.value)
    assert (ws / "a.txt").read_text() == "new a.txt\n"  # the truth: written
    monkeypatch.setattr(os, "rename", real_rename)
    Workspace(ws)  # the journal was kept: the next run finishes the undo
    assert (ws / "a.txt").read_text() == "old a\n"
    assert (ws / "b.txt").read_text() == "old b\n"
    assert not (ws / "c.txt").exists() and leftovers(ws) == []


def test_commits_work_when_the_state_folder_cannot_be_written(ws, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker / "state"))
    s = session(ws)
    assert s.call("write_file", ["a.txt", "new a\n"], {}).ok
    assert s.commit() == ["a.txt"]
    assert (ws / "a.txt").read_text() == "new a\n"


def test_a_journal_others_can_write_is_never_obeyed(ws, tmp_path):
    folder = tmp_path / "state" / "lackjail" / "journal"
    folder.mkdir(parents=True, mode=0o700)
    info = os.stat(ws)
    forged = folder / f"{info.st_dev}-{info.st_ino}-forged.json"
    placed = os.stat(ws / "a.txt").st_ino  # the record says a.txt is a file the commit made
    entry = {"rel": "a.txt", "tmp": "", "backup": None, "placed": placed}
    forged.write_text(json.dumps({"targets": [entry], "made": []}))
    os.chmod(folder, 0o777)  # anyone could have planted that record
    Workspace(ws)
    assert (ws / "a.txt").read_text() == "old a\n"


def test_a_run_that_staged_no_write_commits_without_a_journal(ws, monkeypatch):
    """Nothing staged: no journal written, synced and removed (a tool run's commit at every
    run cost two fsyncs for nothing)."""
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    s = session(ws)
    assert s.call("read_file", ["a.txt"], {}).ok
    assert s.commit() == []
    assert synced == [] and leftovers(ws) == []
    assert s.call("write_file", ["a.txt", "new a\n"], {}).ok
    assert s.commit() == ["a.txt"] and synced  # a write is journalled as before
