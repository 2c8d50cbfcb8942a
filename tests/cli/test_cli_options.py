"""One set of shared options with one meaning on run, check, gate, delegate and serve; --param
values; bad input as JSON after --json; Ctrl-C."""

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

import click
import pytest
from cli_support import cli_env, lackjail, read_terminal
from click.testing import CliRunner

from lackjail.cli import cli, main
from lackjail.cli.common import parse_params

SHARED = ["--kit", "--policy", "--workspace", "--language"]
PROGRAM_COMMANDS = ["run", "check", "gate", "delegate"]


def options_of(name: str) -> dict:
    command = cli.get_command(None, name)
    return {opt: p for p in command.params if isinstance(p, click.Option) for opt in p.opts}


@pytest.mark.parametrize("name", [*PROGRAM_COMMANDS, "serve"])
def test_every_command_takes_the_shared_options(name):
    options = options_of(name)
    for opt in SHARED + (["--param", "--json"] if name != "serve" else []):
        assert opt in options, f"{name} lacks {opt}"


@pytest.mark.parametrize("opt", SHARED + ["--param", "--json"])
def test_a_shared_option_means_the_same_everywhere(opt):
    helps = {options_of(name)[opt].help.split(" [default: ")[0] for name in PROGRAM_COMMANDS}
    assert len(helps) == 1, helps
    kinds = {
        (options_of(name)[opt].multiple, options_of(name)[opt].metavar) for name in PROGRAM_COMMANDS
    }
    assert len(kinds) == 1


def test_language_choices_are_the_validators_levels():
    from lackjail.lang import LANGUAGES

    assert list(options_of("check")["--language"].type.choices) == list(LANGUAGES)


def invoke(*args, stdin=None):
    return CliRunner().invoke(cli, list(args), input=stdin)


@pytest.fixture
def hello(tmp_path):
    path = tmp_path / "hello.lackpy"
    path.write_text('f"hello, {name}"\n')
    return str(path)


def test_check_param_takes_name_equals_value_as_run_does(hello):
    assert invoke("check", hello, "--param", "name=world").exit_code == 0
    for bad, says in [("novalue", "is not NAME=VALUE"), ("len=3", "would hide the builtin")]:
        checked, ran = invoke("check", hello, "--param", bad), invoke("run", hello, "--param", bad)
        assert checked.exit_code == ran.exit_code == 2
        assert says in checked.output and says in ran.output


def test_check_unknown_kit_fails_like_run(hello):
    for command in ("check", "run", "gate"):
        result = invoke(command, hello, "--kit", "nokit")
        assert result.exit_code == 2 and "no kit named 'nokit'" in result.output, command


def test_check_walks_folders_like_the_gate(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ok.lackpy").write_text("1 + 1\n")
    (tmp_path / "a" / "bad.lackpy").write_text("import os\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "skipped.lackpy").write_text("import os\n")
    (tmp_path / "notes.txt").write_text("import os\n")
    result = invoke("check", str(tmp_path), "--json")
    assert result.exit_code == 2
    files = {os.path.basename(f["file"]): f["valid"] for f in json.loads(result.output)["files"]}
    assert files == {"ok.lackpy": True, "bad.lackpy": False}


def test_param_values_parse_as_json_else_strings():
    assert parse_params(
        ["l=[1,2]", 'd={"a": 1}', "n=3", "f=2.5", "b=true", "z=null", 's="x"', "path=notes.txt"]
    ) == {
        "l": [1, 2],
        "d": {"a": 1},
        "n": 3,
        "f": 2.5,
        "b": True,
        "z": None,
        "s": "x",
        "path": "notes.txt",
    }
    assert parse_params(["e=", "t=[1,", "deep=" + "[" * 100_000]) == {
        "e": "",
        "t": "[1,",
        "deep": "[" * 100_000,
    }


@pytest.mark.parametrize(
    "args, says",
    [
        (["run", "missing.lackpy", "--json"], "cannot read missing.lackpy"),
        (["run", "-", "--json", "--mode", "fast"], "'--mode'"),
        (["run", "-", "--json", "--policy", "nosuch"], "no policy named 'nosuch'"),
        (["run", "-", "--json", "--param", "1x=2"], "not a valid identifier"),
        (["check", "-", "--json", "--kit", "nokit"], "no kit named 'nokit'"),
    ],
)
def test_json_callers_get_bad_input_as_one_json_object(args, says, capsys):
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2
    out = capsys.readouterr().out
    error = json.loads(out)
    assert error["status"] == "invalid" and says in error["errors"][0]["message"]


def test_every_json_object_of_run_has_the_keys_of_a_finished_run(tmp_path, require_nsjail):
    """Bad input and a rejected program print one object with the same keys as a run that ran
    (neutral values where nothing ran), and exit 2."""
    finished = lackjail("run", "-", "--json", stdin="print('hi')\n1")
    assert finished.returncode == 0, finished.stderr
    keys = set(json.loads(finished.stdout))
    assert keys >= {"trace", "isolation", "mode", "stats", "written", "diff"}
    bad_policy = tmp_path / "bad.toml"
    bad_policy.write_text('name = "bad"\n[limits]\nwall_s = "soon"\n')
    cases = [
        (["missing.lackpy"], "", "cannot read missing.lackpy"),
        (["-", "--kit", "nokit"], "1", "no kit named 'nokit'"),
        (["-", "--param", "1x=2"], "1", "not a valid identifier"),
        (["-", "--param", "novalue"], "1", "is not NAME=VALUE"),
        (["-", "--policy", "nosuch"], "1", "no policy named 'nosuch'"),
        (["-", "--policy", str(bad_policy)], "1", "limits.wall_s"),
        (["-"], "import os", "'import' is not allowed"),
    ]
    for args, program, says in cases:
        proc = lackjail("run", *args, "--json", stdin=program, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        error = json.loads(proc.stdout)
        assert set(error) == keys, args
        assert error["status"] == "invalid" and says in error["errors"][0]["message"], args
        assert (error["value"], error["output"], error["trace"], error["written"]) == (
            None,
            "",
            [],
            [],
        )
        assert error["stats"] == {"wall_ms": 0.0, "cpu_ms": 0.0, "max_rss_kb": 0, "tool_calls": 0}


@pytest.fixture
def interrupt_after_first_output(monkeypatch):
    """Ctrl-C in the middle of a real run: Jail.stream raises KeyboardInterrupt right after the
    first output event, as the signal would while the program still runs."""
    from lackjail.api import Jail

    real = Jail.stream

    def stream(self, *args, **kwargs):
        for event in real(self, *args, **kwargs):
            yield event
            if event["event"] == "output":
                raise KeyboardInterrupt

    monkeypatch.setattr(Jail, "stream", stream)


@pytest.mark.parametrize("mode", ["--json", "--stream", "text"])
def test_ctrl_c_keeps_what_the_program_did(
    mode, tmp_path, capsys, interrupt_after_first_output, require_nsjail
):
    (tmp_path / "notes.txt").write_text("hello")
    program = tmp_path / "p.lackpy"
    program.write_text("text = read_file('notes.txt')\nprint(text)\nlen(text)\n")
    args = ["run", str(program), "--kit", "readonly", "--workspace", str(tmp_path)]
    with pytest.raises(SystemExit) as done:
        main(args + ([] if mode == "text" else [mode]))
    assert done.value.code == 130
    out, err = capsys.readouterr()
    assert "interrupted" in err and "Traceback" not in err
    if mode == "text":
        assert out == "hello\n"
        return
    stopped = json.loads(out.splitlines()[-1])
    if mode == "--stream":
        assert [json.loads(line)["event"] for line in out.splitlines()] == [
            "call",
            "output",
            "result",
        ]
        assert stopped.pop("event") == "result"
    assert stopped["status"] == "interrupted" and stopped["output"] == "hello\n"
    assert [call["tool"] for call in stopped["trace"]] == ["read_file"]
    assert stopped["trace"][0]["ok"] is True and stopped["stats"]["tool_calls"] == 1
    assert (stopped["value"], stopped["written"], stopped["isolation"]) == (None, [], "nsjail")
    assert set(stopped) == {
        "status",
        "value",
        "output",
        "errors",
        "trace",
        "isolation",
        "mode",
        "stats",
        "written",
        "diff",
    }


def test_ctrl_c_exits_130_in_process(monkeypatch, capsys):
    from lackjail.cli import check as check_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(check_module, "setup", interrupted)
    with pytest.raises(SystemExit) as done:
        main(["check", "-"])
    assert done.value.code == 130
    assert "interrupted" in capsys.readouterr().err


def _reading_stdin(pid: int) -> bool:
    """True while PID sits in read(0, ...) (the program is being read from stdin)."""
    try:
        with open(f"/proc/{pid}/syscall") as fh:
            fields = fh.read().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == "0" and int(fields[1], 16) == 0


def piped(*args) -> subprocess.Popen:
    """`python -m lackjail.cli ARGS` started with stdin, stdout and stderr as text pipes."""
    return subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        text=True,
    )


def test_ctrl_c_exits_130_as_a_user_sees_it():
    proc = piped("run", "-")
    try:
        deadline = time.monotonic() + 60
        while not _reading_stdin(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


@pytest.mark.parametrize("stream", [False, True])
def test_ctrl_c_during_a_run_keeps_its_output(stream, tmp_path, require_nsjail):
    """A real SIGINT while a long program runs: what it printed stays on stdout (text mode) or in
    the last event, a result with status "interrupted" (--stream); exit 130."""
    (tmp_path / "slow.toml").write_text('name = "slow"\n[limits]\nwall_s = 600.0\ncpu_s = 600\n')
    program = "print('started')\ntotal = 0\nfor i in range(10000000000):\n    total = total + i\n"
    proc = piped("run", "-", "--policy", str(tmp_path / "slow.toml"), *(["--stream"] * stream))
    try:
        proc.stdin.write(program)
        proc.stdin.close()
        # shown while the program still runs (600 s of work); not shown in 120 s is a failure
        assert select.select([proc.stdout], [], [], 120)[0], "nothing shown while it ran"
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        rest = proc.stdout.read()
        err = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    if not stream:
        assert (first, rest) == ("started\n", "")
        return
    assert json.loads(first) == {"event": "output", "text": "started\n"}
    last = json.loads(rest.splitlines()[-1])
    assert (last["event"], last["status"], last["output"]) == ("result", "interrupted", "started\n")


def _running() -> dict[int, tuple[int, str]]:
    """Every process that has not ended (a zombie has): pid -> (parent pid, start time)."""
    found = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue  # it ended meanwhile
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] not in "ZX":
            found[int(name)] = (int(fields[1]), fields[19])
    return found


def _descendants(pid: int) -> dict[int, str]:
    """PID's processes below it now: pid -> start time (a reused pid is another process)."""
    running, found = _running(), {pid}
    while more := {p for p, (parent, _) in running.items() if parent in found} - found:
        found |= more
    return {p: running[p][1] for p in found - {pid}}


def test_ctrl_c_leaves_no_process_of_the_jail(tmp_path, require_nsjail):
    """A real SIGINT while a long program runs in the command's own process (no server): when
    the command has exited, every process of its jail (nsjail, the zygote nsjail puts in a
    session of its own, the child running the program) has ended, none left to die later."""
    (tmp_path / "slow.toml").write_text('name = "slow"\n[limits]\nwall_s = 600.0\ncpu_s = 600\n')
    program = "print('started')\ntotal = 0\nfor i in range(10000000000):\n    total = total + i\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from lackjail.console import main; main()"]
        + ["run", "-", "--policy", str(tmp_path / "slow.toml")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(LACKJAIL_SERVER="0"),
        text=True,
    )
    try:
        proc.stdin.write(program)
        proc.stdin.close()
        assert select.select([proc.stdout], [], [], 120)[0], "nothing shown while it ran"
        assert proc.stdout.readline() == "started\n"
        jail = _descendants(proc.pid)  # the program runs: its child is forked, so all are there
        assert len(jail) >= 3, jail  # nsjail, its zygote, the child running the program
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 130, err
    finally:
        proc.kill()
        proc.wait()
    running = _running()
    left = {pid: start for pid, start in jail.items() if running.get(pid, (0, ""))[1] == start}
    assert not left, f"processes of the jail outlived the command: {left}"


def test_ctrl_c_while_a_tool_call_awaits_approval(tmp_path, require_nsjail):
    """The question is asked from the thread that runs the program; Ctrl-C (in the main thread)
    still ends the run at once: the question is denied, exit 130, nothing hangs."""
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "ask.toml").write_text('name = "ask"\n[tools]\napproval = ["read_file"]\n')
    (tmp_path / "p.lackpy").write_text("t = read_file('notes.txt')\nprint(t)\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", "run", "p.lackpy"]
        + ["--kit", "readonly", "--policy", "ask.toml"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=tmp_path,
        env=cli_env(),
    )
    os.close(slave)
    shown = b""
    try:
        while b"[y/N]" not in shown:
            assert select.select([master], [], [], 120)[0], shown
            shown += os.read(master, 4096)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        shown += read_terminal(master)
    finally:
        proc.kill()
        os.close(master)
    assert b"interrupted" in shown and b"Traceback" not in shown and b"hello" not in shown


def test_version_flag():
    for flag in ("-V", "--version"):
        proc = lackjail(flag)
        assert proc.returncode == 0 and proc.stdout.startswith("lackjail, version ")
