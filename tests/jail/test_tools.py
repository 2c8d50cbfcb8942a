"""Tools across the jail boundary, end to end: every call crosses to the controller,
which checks it, runs it, stages writes, and writes the trace itself."""

import os

import pytest

from lackjail.api import Jail, Result
from lackjail.policy import load_policy


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("print('a')\n")
    (ws / "b.py").write_text("x = 1\n")
    (ws / "notes.txt").write_text("hello notes\n")
    return ws


@pytest.fixture
def files_jail(require_nsjail, workspace):
    with Jail(kit="files", workspace=workspace, workers=1) as jail:
        yield jail


def test_read_and_find_through_the_controller(files_jail):
    r = files_jail.run(
        "paths = sorted(find_files('*.py'))\ntext = read_file('notes.txt')\n[paths, text]"
    )
    assert r.status == "ok", r.errors
    assert r.value == [["a.py", "b.py"], "hello notes\n"]
    assert [e["tool"] for e in r.trace] == ["find_files", "read_file"]
    assert [e["seq"] for e in r.trace] == sorted(e["seq"] for e in r.trace)
    assert all(e["ok"] for e in r.trace) and r.stats["tool_calls"] == 2


def test_writes_commit_only_on_success(files_jail, workspace):
    r = files_jail.run("write_file('out.txt', 'done')\nedit_file('notes.txt', 'hello', 'bye')\n1")
    assert r.status == "ok", r.errors
    assert (workspace / "out.txt").read_text() == "done"
    assert (workspace / "notes.txt").read_text() == "bye notes\n"
    assert sorted(r.written) == ["notes.txt", "out.txt"]


def test_writes_roll_back_when_the_run_fails(files_jail, workspace):
    r = files_jail.run("write_file('partial.txt', 'half')\nx = read_file('partial.txt')\ny = 1 / 0")
    assert r.status == "error"
    assert not (workspace / "partial.txt").exists()
    assert [e["tool"] for e in r.trace] == ["write_file", "read_file"]


def test_dry_run_shows_the_diff_and_writes_nothing(files_jail, workspace):
    r = files_jail.run("edit_file('notes.txt', 'hello', 'bye')", dry_run=True)
    assert r.status == "ok"
    assert "-hello notes" in r.diff and "+bye notes" in r.diff
    assert (workspace / "notes.txt").read_text() == "hello notes\n"


def test_escaping_the_workspace_is_refused(files_jail, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    for path in ("../secret.txt", str(secret), "/etc/passwd", "/proc/self/fd/1"):
        r = files_jail.run(f"read_file({path!r})")
        assert r.status == "error", path
        assert "TOPSECRET" not in str(r.to_dict())
        assert r.errors[0]["message"].startswith("read_file:")
        assert r.trace[0]["ok"] is False


def test_tool_error_names_the_tool_and_line(files_jail):
    r = files_jail.run("x = 1\ny = read_file('missing.txt')")
    assert r.status == "error"
    assert r.errors[0]["line"] == 2
    assert "read_file" in r.errors[0]["message"]


def test_unknown_tool_is_rejected_before_the_jail(files_jail):
    r = files_jail.run("delete_everything('/')")
    assert r.status == "invalid"


def test_stream_delivers_calls_as_they_happen(files_jail):
    events = list(
        files_jail.stream("print('before')\nx = read_file('notes.txt')\nprint('after')\nx")
    )
    kinds = [e["event"] for e in events[:-1]]
    assert kinds == ["output", "call", "output"]
    assert isinstance(events[-1], Result) and events[-1].value == "hello notes\n"
    assert events[1]["tool"] == "read_file" and events[1]["ok"] is True
    assert events[-1].trace[0]["seq"] == events[1]["seq"]


def test_denied_approval_ends_the_run(require_nsjail, workspace):
    base = load_policy("default")
    policy = base.replace(tools=base.tools.__class__(approval=("write_file",)))
    asked = []

    def approve(call):
        asked.append(call)
        return False

    with Jail(policy=policy, kit="files", workspace=workspace, workers=1, approve=approve) as jail:
        r = jail.run("write_file('x.txt', 'no')\nprint('unreachable')")
    assert r.status == "denied" and r.exit_code == 1
    assert asked and not (workspace / "x.txt").exists()
    assert r.output == ""


def test_granted_approval_lets_the_write_through(require_nsjail, workspace):
    base = load_policy("default")
    policy = base.replace(tools=base.tools.__class__(approval=("write_file",)))
    with Jail(
        policy=policy, kit="files", workspace=workspace, workers=1, approve=lambda call: True
    ) as jail:
        r = jail.run("write_file('x.txt', 'yes')")
    assert r.status == "ok" and (workspace / "x.txt").read_text() == "yes"


def test_tool_call_budget(require_nsjail, workspace):
    base = load_policy("default")
    policy = base.replace(limits=base.limits.__class__(tool_calls=5))
    with Jail(policy=policy, kit="files", workspace=workspace, workers=1) as jail:
        r = jail.run("for i in range(100):\n    x = read_file('notes.txt')")
    assert r.status == "limit"
    assert len(r.trace) <= 6


def test_read_only_workspace_policy(require_nsjail, workspace):
    with Jail(policy="ci", kit="files", workspace=workspace, workers=1) as jail:
        r = jail.run("write_file('x.txt', 'no')")
    assert r.status in ("error", "denied")
    assert not (workspace / "x.txt").exists()


def test_jail_placed_tools_skip_the_round_trip(require_nsjail, workspace):
    with Jail(kit="text", workspace=workspace, workers=1) as jail:
        r = jail.run("word_count('a b c')")
    assert r.status == "ok" and r.value == 3
    assert r.trace == []


def test_a_commit_that_fails_is_an_error_not_an_exception(files_jail, workspace):
    """The staged write is fine; the disk refuses it at commit (an immutable folder, even for
    root).
    """
    import shutil
    import subprocess

    if shutil.which("chattr") is None:
        pytest.skip("chattr (e2fsprogs) is needed to make a folder refuse writes")
    if subprocess.run(["chattr", "+i", str(workspace)], capture_output=True).returncode != 0:
        pytest.skip("this file system does not support the immutable attribute")
    try:
        r = files_jail.run("write_file('new.txt', 'x')\n1")
    finally:
        subprocess.run(["chattr", "-i", str(workspace)], check=True)
    assert r.status == "error" and "could not be committed" in r.errors[0]["message"], r
    assert r.value is None
    assert not (workspace / "new.txt").exists()


def test_runs_hold_no_descriptor_after_they_end(files_jail):
    """Each run's session closes its workspace root itself: with the cycle collector off, a
    hundred runs (ok, failed, written) leave the controller's open descriptors as they were."""
    import gc

    def open_fds():
        # pipes and sockets are the pool's: spare children's channels come and go with
        # the zygote's timing; a workspace root is a directory
        fds = os.listdir("/proc/self/fd")
        return len([fd for fd in fds if not _readlink(fd).startswith(("pipe:", "socket:"))])

    files_jail.run("read_file('notes.txt')")  # the pool's own descriptors are settled
    gc.collect()
    gc.disable()
    try:
        before = open_fds()
        for i in range(35):
            assert files_jail.run("read_file('notes.txt')").status == "ok"
            assert files_jail.run(f"write_file('w{i}.txt', 'x')\n1").status == "ok"
            assert files_jail.run("read_file('missing.txt')").status == "error"
        assert open_fds() == before
    finally:
        gc.enable()


def _readlink(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:  # the listing's own descriptor, closed since
        return "pipe:"
