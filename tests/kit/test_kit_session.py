"""The mediated call path: approval, policy, timeouts, tool failures, results, writes, budgets,
trace.
"""

import os
import threading
import time

import pytest
from kit_support import make_policy, no_temp_files, py_tool

from lackjail.kit import CommitError, StagingArea, ToolSpec, Workspace, resolve_kit

# --- approval -------------------------------------------------------------------------------------


def test_approval_granted_sees_the_call(session_for, ws):
    seen = []
    s = session_for(approval=("write_file",), approve=lambda call: seen.append(call) or True)
    out = s.call("write_file", ["new.txt", "hello"], {})
    assert out.ok and out.verdict is None
    assert seen == [
        {
            "tool": "write_file",
            "args": ["new.txt", "hello"],
            "kwargs": {},
            "reason": "policy 'test' requires approval for it",
        }
    ]
    assert s.call("read_file", ["a.txt"], {}).ok and len(seen) == 1  # read_file needs none


def test_approval_denied_ends_the_run(session_for, ws):
    s = session_for(approval=("write_file",), approve=lambda call: False)
    out = s.call("write_file", ["new.txt", "hello"], {})
    assert (out.ok, out.verdict) == (False, "denied")
    assert "not approved" in out.error
    s.commit()
    assert not (ws / "new.txt").exists()


def test_no_approver_means_denied(session_for):
    out = session_for(approval=("write_file",)).call("write_file", ["new.txt", "x"], {})
    assert (out.ok, out.verdict) == (False, "denied")
    # the words hold for every front end: an MCP client has no flag to pass
    assert "nobody is there to approve it" in out.error and "--" not in out.error


def test_approver_that_fails_or_answers_oddly_denies(session_for):
    def broken(call):
        raise RuntimeError("tty gone")

    out = session_for(approval=("write_file",), approve=broken).call(
        "write_file", ["n.txt", "x"], {}
    )
    assert out.verdict == "denied" and "tty gone" in out.error
    out = session_for(approval=("write_file",), approve=lambda c: "yes").call(
        "write_file", ["n.txt", "x"], {}
    )
    assert out.verdict == "denied"  # only True approves


def test_tool_spec_can_require_approval_and_aliases_do_not_escape_policy(session_for):
    kit_spec = {"w": {"tool": "write_file", "approval": "required"}}
    assert session_for(kit_spec).call("w", ["n.txt", "x"], {}).verdict == "denied"
    # the policy names the tool; calling it through an alias or a pack changes nothing
    assert (
        session_for({"put": "write_file"}, approval=("write_file",))
        .call("put", ["n.txt", "x"], {})
        .verdict
        == "denied"
    )
    assert (
        session_for("fs", approval=("write_file",)).call("fs.write", ["n.txt", "x"], {}).verdict
        == "denied"
    )
    assert session_for("fs", deny=("fs",)).call("fs.read", ["a.txt"], {}).verdict == "denied"


def test_policy_allow_and_deny(session_for):
    s = session_for({"r": "read_file", "w": "write_file"}, deny=("write_file",))
    assert s.call("r", ["a.txt"], {}).ok
    out = s.call("w", ["n.txt", "x"], {})
    assert out.verdict == "denied" and "tools.deny" in out.error
    out = session_for(allow=("read_file",)).call("find_files", ["*"], {})
    assert out.verdict == "denied" and "tools.allow" in out.error


def test_read_only_workspace_denies_writes(session_for, ws):
    s = session_for(workspace_writable=False)
    assert s.call("read_file", ["a.txt"], {}).ok
    for call in (("write_file", ["a.txt", "x"]), ("edit_file", ["a.txt", "alpha", "beta"])):
        out = s.call(*call, {})
        assert out.verdict == "denied" and "read-only" in out.error
    s.commit()
    assert (ws / "a.txt").read_text() == "alpha\n"


# --- timeouts and failing tools -------------------------------------------------------------------


def test_hung_tool_times_out_without_blocking_other_runs(session_for):
    slow = session_for("none", extra_tools=[py_tool("nap", timeout_s=0.5)])
    fast = session_for()
    result = {}
    started = time.monotonic()
    # the nap is far longer than the timeout and the bound: only a working timeout passes,
    # however loaded the machine
    thread = threading.Thread(target=lambda: result.setdefault("out", slow.call("nap", [20.0], {})))
    thread.start()
    time.sleep(0.05)
    assert fast.call("read_file", ["a.txt"], {}).ok  # another run is answered meanwhile
    assert thread.is_alive() and "out" not in result
    thread.join(15)
    assert time.monotonic() - started < 15
    out = result["out"]
    assert not out.ok and out.verdict is None and "timed out after 0.5 s" in out.error
    assert slow.trace[-1]["ok"] is False and "timed out" in slow.trace[-1]["error"]


def test_policy_timeout_overrides_the_spec(session_for):
    s = session_for("none", extra_tools=[py_tool("nap")], timeouts={"nap": 0.2})
    started = time.monotonic()
    out = s.call("nap", [20.0], {})
    assert "timed out after 0.2 s" in out.error and time.monotonic() - started < 15


class LateWriter:
    """A custom provider whose tool writes through the confined view after sleeping."""

    name = "late"

    def check(self, spec):
        pass

    def bind(self, spec, ctx):
        def write_later(delay: float) -> bool:
            time.sleep(delay)
            ctx.workspace.write_bytes("late.txt", b"too late")
            return True

        return write_later


def test_timed_out_call_keeps_nothing_it_writes(ws):
    kit = resolve_kit("none")
    kit.toolbox.register_provider(LateWriter())
    spec = ToolSpec("late_write", "late", args=({"name": "delay", "type": "float"},), timeout_s=0.1)
    kit = resolve_kit(kit, extra_tools=[spec])
    s = kit.session(make_policy(), ws)
    assert "timed out" in s.call("late_write", [0.3], {}).error
    time.sleep(0.4)  # the abandoned thread wakes and tries to write
    assert s.call("late_write", [0.0], {}).ok  # a call that finishes in time does write
    assert s.commit() == ["late.txt"]
    s2 = kit.session(make_policy(), ws)
    s2.call("late_write", [0.3], {})
    time.sleep(0.4)
    assert s2.workspace.staged_paths() == []


class Gate:
    """A custom provider whose tool blocks until the test opens its gate; it notes its thread."""

    name = "gate"

    def __init__(self):
        self.opened, self.threads = threading.Event(), []

    def check(self, spec):
        pass

    def bind(self, spec, ctx):
        def wait() -> bool:
            self.threads.append(threading.current_thread())
            self.opened.wait()
            return True

        return wait


def test_a_timed_out_call_s_thread_ends_when_the_call_does(ws):
    """After a tool call timed out, the session started a new tool thread but never stopped the
    old one: when the hung call returned, that thread waited for calls forever. A long-lived
    server leaked one thread per timed-out call."""
    kit = resolve_kit("none")
    gate = Gate()
    kit.toolbox.register_provider(gate)
    kit = resolve_kit(kit, extra_tools=[ToolSpec("wait", "gate", timeout_s=0.1)])
    s = kit.session(make_policy(), ws)
    assert "timed out" in s.call("wait", [], {}).error
    [abandoned] = gate.threads
    gate.opened.set()  # the hung call returns now
    abandoned.join(60)
    assert not abandoned.is_alive()
    assert s.call("wait", [], {}).ok  # the next call has a thread of its own
    s.close()


def test_tool_that_raises(session_for):
    s = session_for("none", extra_tools=[py_tool("boom"), py_tool("bad_message")])
    out = s.call("boom", ["disk on fire"], {})
    assert not out.ok and out.verdict is None
    assert out.error == "ValueError: disk on fire"  # the program reads "boom: " before it
    assert s.trace[-1]["error"] == out.error and s.trace[-1]["summary"] == "error"
    out = s.call("bad_message", [], {})
    assert not out.ok and "BadMessage" in out.error


@pytest.mark.parametrize(
    "function, message",
    [
        ("gives_object", "the result of gives_object is of type Opaque, which is not plain data"),
        ("gives_set", "the result of gives_set is of type set, which is not plain data"),
        (
            "gives_int_keys",
            "the result of gives_int_keys has a key of type int; dict keys must be str",
        ),
    ],
)
def test_results_must_be_plain_data(session_for, function, message):
    out = session_for("none", extra_tools=[py_tool(function)]).call(function, [], {})
    assert not out.ok and out.verdict is None and out.error.startswith(message), out.error


def test_tuples_become_lists(session_for):
    out = session_for("none", extra_tools=[py_tool("gives_tuple")]).call("gives_tuple", [], {})
    assert out.ok and out.value == [1, ["two", b"3"], {"k": None}]
    assert type(out.value[1]) is list


def test_edit_of_missing_text_fails_clearly(session_for):
    out = session_for().call("edit_file", ["a.txt", "omega", "x"], {})
    assert not out.ok and "old_str was not found" in out.error


# --- write verification and the transaction ------------------------------------------------------


class CorruptingStaging(StagingArea):
    """A disk that hands back other bytes than were written."""

    def read(self, key):
        return super().read(key).replace(b"o", b"0")


def test_write_verification_mismatch_fails_the_call(ws):
    kit = resolve_kit("files")
    s = kit.session(make_policy(), Workspace(ws, staging=CorruptingStaging()))
    out = s.call("write_file", ["new.txt", "hello world"], {})
    assert not out.ok and "write verification failed" in out.error
    assert s.workspace.staged_paths() == []
    assert s.call("write_file", ["new.txt", "HELL"], {}).ok  # bytes the fault does not touch pass
    s.commit()
    assert (ws / "new.txt").read_text() == "HELL"


def test_staged_writes_are_visible_then_committed(session_for, ws):
    os.chmod(ws / "a.txt", 0o600)
    s = session_for()
    assert s.call("write_file", ["new/deep/c.txt", "gamma"], {}).ok
    assert s.call("edit_file", ["a.txt", "alpha", "ALPHA"], {}).ok
    assert s.call("edit_file", ["new/deep/c.txt", "gam", "GAM"], {}).ok
    assert s.call("read_file", ["new/deep/c.txt"], {}).value == "GAMma"
    assert s.call("find_files", ["**/*.txt"], {}).value == ["a.txt", "new/deep/c.txt"]
    assert (ws / "a.txt").read_text() == "alpha\n" and not (
        ws / "new"
    ).exists()  # nothing on disk yet
    assert s.commit() == ["a.txt", "new/deep/c.txt"]
    assert (ws / "a.txt").read_text() == "ALPHA\n"
    assert (ws / "new" / "deep" / "c.txt").read_text() == "GAMma"
    assert os.stat(ws / "a.txt").st_mode & 0o777 == 0o600  # the mode is kept
    assert no_temp_files(ws)
    assert s.stats["bytes_written"] == len("gamma") + len("ALPHA\n") + len("GAMma")


def test_rollback_changes_nothing(session_for, ws):
    s = session_for()
    s.call("write_file", ["a.txt", "changed"], {})
    s.call("write_file", ["b.txt", "new"], {})
    staging_dir = s.workspace.staging._dir
    assert staging_dir and os.path.isdir(staging_dir)
    s.rollback()
    assert (ws / "a.txt").read_text() == "alpha\n" and not (ws / "b.txt").exists()
    assert not os.path.exists(staging_dir)
    assert s.commit() == []


def test_commit_is_all_or_nothing(session_for, ws):
    s = session_for()
    assert s.call("write_file", ["a.txt", "changed"], {}).ok
    assert s.call("write_file", ["blocker/x.txt", "x"], {}).ok
    (ws / "blocker").write_text("now a file, so blocker/x.txt cannot be made")
    with pytest.raises(CommitError, match="nothing was written"):
        s.commit()
    assert (ws / "a.txt").read_text() == "alpha\n"
    assert no_temp_files(ws)


def test_dry_run_shows_the_diff_and_writes_nothing(session_for, ws):
    s = session_for(dry_run=True)
    s.call("edit_file", ["a.txt", "alpha", "beta"], {})
    s.call("write_file", ["n.txt", "no newline"], {})
    diff = s.diff()
    assert "--- a/a.txt\n+++ b/a.txt\n" in diff and "-alpha\n+beta\n" in diff
    assert (
        "--- /dev/null\n+++ b/n.txt\n" in diff
        and "+no newline\n\\ No newline at end of file\n" in diff
    )
    assert s.commit() == []
    assert (ws / "a.txt").read_text() == "alpha\n" and not (ws / "n.txt").exists()


def _applied(diff: str, ws, tmp_path, name: str) -> str:
    """NAME after `patch -p1` applies DIFF to a copy of the workspace (checks the line numbers)."""
    import shutil
    import subprocess

    copy = tmp_path / "patched"
    shutil.copytree(ws, copy)
    subprocess.run(["patch", "-s", "-F0", "-p1"], input=diff, text=True, cwd=copy, check=True)
    return (copy / name).read_text()


def test_dry_run_diff_of_a_big_rewrite_is_one_replaced_span(session_for, ws, tmp_path):
    """difflib matches lines in time that grows with the cube of their number when lines recur
    (3,000 lines: seconds; 128,000: a 700 KB write kept the controller busy 3 minutes after
    the run). Past MAX_MATCHED_LINES changed lines the span is shown replaced whole, a valid
    unified diff found in linear time."""
    from lackjail.workspace.textdiff import MAX_MATCHED_LINES

    lines = 3 * MAX_MATCHED_LINES
    old = "".join(f"{i % 100}\n" for i in range(lines))
    new = "".join(f"{(i // 2) % 100}\n" for i in range(lines))
    (ws / "big.txt").write_text("head\n" + old + "tail\n")
    s = session_for(dry_run=True)
    assert s.call("write_file", ["big.txt", "head\n" + new + "tail\n"], {}).ok
    diff = s.diff()
    assert diff.count("\n@@ ") == 1, diff[:500]
    # one hunk: the equal lines before and after the span are its context, the span replaced
    assert f"@@ -1,{lines + 2} +1,{lines + 2} @@\n head\n 0\n-1\n-2\n" in diff
    assert diff.endswith("+98\n+98\n+99\n 99\n tail\n")
    assert _applied(diff, ws, tmp_path, "big.txt") == "head\n" + new + "tail\n"


def test_dry_run_diff_of_a_small_edit_in_a_big_file_keeps_its_line_numbers(
    session_for, ws, tmp_path
):
    text = "".join(f"line {i}\n" for i in range(1, 50_001))
    (ws / "big.txt").write_text(text)
    s = session_for(dry_run=True)
    assert s.call("edit_file", ["big.txt", "line 25000\n", "changed\n"], {}).ok
    diff = s.diff()
    assert "@@ -24997,7 +24997,7 @@\n line 24997\n" in diff and "-line 25000\n+changed\n" in diff
    assert _applied(diff, ws, tmp_path, "big.txt") == text.replace("line 25000\n", "changed\n")


def test_dry_run_diff_reads_and_shows_a_bounded_amount(session_for, ws, monkeypatch):
    """Hard links of one big file cost no disk: a program writing '' to thousands of them made
    the diff read each whole. Past MAX_DIFF_BYTES (old and new together) a file is named, not
    diffed, and its old content is not read."""
    from lackjail.workspace import transaction

    monkeypatch.setattr(transaction, "MAX_DIFF_BYTES", 1000)
    (ws / "one.txt").write_text("x\n" * 300)  # 600 bytes
    for name in ("two.txt", "three.txt"):
        os.link(ws / "one.txt", ws / name)
    s = session_for(dry_run=True)
    for name in ("one.txt", "three.txt", "two.txt"):
        assert s.call("write_file", [name, ""], {}).ok
    diff = s.diff()
    assert diff.splitlines().count("-x") == 300  # one file diffed
    assert diff.count("not shown") == 2 and "1000 bytes" in diff


# --- budgets --------------------------------------------------------------------------------------


def test_tool_call_budget(session_for):
    s = session_for(tool_calls=2)
    assert s.call("read_file", ["a.txt"], {}).ok
    assert not s.call("raed_file", [], {}).ok  # a bad call still spends one
    out = s.call("read_file", ["a.txt"], {})
    assert out.verdict == "limit" and "limits.tool_calls" in out.error
    assert s.stats["tool_calls"] == 2


def test_read_and_write_budgets(session_for, ws):
    s = session_for(read_bytes=10, write_bytes=8)
    assert s.call("read_file", ["a.txt"], {}).ok  # 6 bytes
    assert s.call("read_file", ["a.txt"], {}).verdict == "limit"  # 12 > 10
    assert s.call("write_file", ["x.txt", "12345"], {}).ok
    out = s.call("write_file", ["y.txt", "1234"], {})  # 9 > 8
    assert out.verdict == "limit" and "limits.write_bytes" in out.error
    assert s.stats == {"tool_calls": 4, "bytes_read": 6, "bytes_written": 5}


# --- hostile calls --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, args, kwargs, word",
    [
        ("read_file", ["a.txt", "b.txt"], {}, "takes 1 argument"),
        ("read_file", [], {}, "missing required argument 'path'"),
        ("read_file", [], {"pathx": "a.txt"}, "unexpected keyword argument 'pathx'"),
        ("read_file", ["a.txt"], {"path": "a.txt"}, "multiple values"),
        ("read_file", [42], {}, "must be str, not int"),
        ("read_file", [b"a.txt"], {}, "must be str, not bytes"),
        ("write_file", ["a.txt", ["not", "text"]], {}, "must be str, not list"),
        ("raed_file", ["a.txt"], {}, "no tool named 'raed_file'"),
        (None, [], {}, "no tool named None"),
        (["read_file"], [], {}, "no tool named"),
        ("read_file", "a.txt", {}, "must be a list"),
        ("read_file", ["a.txt"], [("k", "v")], "must be a dict"),
        ("read_file", [{1: "x"}], {}, "keys must be str"),
        ("read_file", [{"a"}], {}, "not plain data"),
        ("read_file", [1 << 70], {}, "wider than 64 bits"),
        ("slugify", ["x"], {}, "runs inside the jail"),
    ],
)
def test_hostile_calls_get_clear_errors(session_for, name, args, kwargs, word):
    s = session_for(["read_file", "write_file", "slugify"])
    out = s.call(name, args, kwargs)
    assert not out.ok and out.verdict is None and word in out.error, out.error
    assert s.trace[-1]["ok"] is False and s.trace[-1]["seq"] == 1


def test_huge_and_deep_arguments(session_for):
    s = session_for("none", extra_tools=[py_tool("echo")])
    out = s.call("echo", ["x" * (100 << 20)], {})
    assert not out.ok and "larger than" in out.error
    deep = []
    for _ in range(10_000):
        deep = [deep]
    out = s.call("echo", [deep], {})
    assert not out.ok and "deeper than" in out.error
    out = s.call("echo", [list(range(200_000))], {})
    assert not out.ok and "items" in out.error
    assert s.call("echo", [], {"value": {"ok": [1, 2.5, None, True, b"b"]}}).value == {
        "ok": [1, 2.5, None, True, b"b"]
    }


def test_bool_is_not_an_int(session_for):
    s = session_for("none", extra_tools=[py_tool("add")])
    assert s.call("add", [2], {"b": 3}).value == 5
    assert s.trace[-1]["kwargs"] == {"b": 3}
    assert "must be int, not bool" in s.call("add", [True], {}).error


# --- trace ----------------------------------------------------------------------------------------


def test_trace_entries_and_events(session_for):
    events = []
    s = session_for(on_event=events.append)
    s.call("read_file", ["a.txt"], {})
    s.call("write_file", ["n.txt", "y" * 500], {})
    s.call("read_file", ["missing.txt"], {})
    first, second, third = s.trace
    assert first["seq"] == 1 and first["tool"] == "read_file" and first["args"] == ["a.txt"]
    assert first["ok"] is True and first["summary"] == "str (6 chars)" and "error" not in first
    assert isinstance(first["duration_ms"], float)
    assert second["args"][1].endswith("…(+420 chars)") and len(second["args"][1]) < 120
    assert third["ok"] is False and "no such file" in third["error"]
    assert events == s.trace and events[0] is not s.trace[0]


def test_trace_of_unknown_tool_does_not_echo_hostile_text(session_for):
    s = session_for()
    s.call("\x1b[2J" + "x" * 500, [], {})
    entry = s.trace[-1]
    assert "\x1b" not in entry["tool"] and len(entry["tool"]) < 100
