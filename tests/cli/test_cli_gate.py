"""The gate end to end on the fixture tree: in process with a real jail, through click's runner,
and as a subprocess for exit codes, stdin, reports and bad input."""

import json
import os
import xml.etree.ElementTree as ET

import pytest
from cli_support import lackjail, on_a_terminal
from click.testing import CliRunner
from gate_support import PROGRAMS, check_sarif, make_tree

from lackjail.cli.gate import gate
from lackjail.gate import Gate, discover, render
from lackjail.kit import resolve_kit
from lackjail.policy import load_policy


def invoke(*args):
    return CliRunner().invoke(gate, list(args), catch_exceptions=False)


# -- in process, with a real jail ------------------------------------------------


@pytest.fixture(scope="module")
def ran(tmp_path_factory, require_nsjail):
    """The tree gated with --run once: (tree, report)."""
    from lackjail.api import Jail

    tree = make_tree(tmp_path_factory.mktemp("gate") / "repo")
    policy = load_policy(str(tree / "tree-policy.toml"))
    kit = resolve_kit("files", workspace=str(tree))
    with Jail(policy=policy, kit=kit, workers=2, workspace=str(tree)) as jail:
        report = Gate(policy, kit, jail=jail, root=str(tree)).run_all(
            discover([str(tree)], root=str(tree))
        )
    return tree, report


def test_every_program_gets_its_verdict(ran):
    tree, report = ran
    assert {p.name: p.status for p in report.programs} == {
        name: want[2] for name, want in PROGRAMS.items()
    }
    assert report.isolation == "nsjail" and report.ran and report.exit_code == 1
    by_name = {p.name: p for p in report.programs}
    assert by_name["ok/sum.lackpy"].value == 6 and by_name["ok/sum.lackpy"].output == "total 6\n"
    assert by_name["ok/read.lackpy"].tool_calls == 1 and by_name["ok/read.lackpy"].value == 5
    assert by_name["fail/divide.lackpy"].errors[0] | {"message": ""} == {
        "message": "",
        "line": 2,
        "col": 5,
        "rule": "verdict/error",
        "traceback": [{"function": "<module>", "line": 2, "col": 5}],
    }
    assert by_name["fail/slow.lackpy"].errors[0]["rule"] == "verdict/timeout"
    assert not by_name["bad/imports.lackpy"].ran  # a rejected program never reaches the jail
    assert by_name["fail/write.lackpy"].trace[0]["tool"] == "write_file"


def test_the_workspace_stays_read_only_under_the_ci_policy(ran):
    tree, report = ran
    denied = next(p for p in report.programs if p.name == "fail/write.lackpy")
    assert "read-only" in denied.errors[0]["message"]
    assert not (tree / "out.txt").exists()


def test_reports_of_a_real_run(ran):
    _, report = ran
    log = json.loads(render(report, "sarif"))
    check_sarif(log)
    rules = {r["ruleId"] for r in log["runs"][0]["results"]}
    assert rules == {
        "forbidden-node",
        "forbidden-name",
        "syntax",
        "verdict/error",
        "verdict/denied",
        "verdict/timeout",
    }
    suites = ET.fromstring(render(report, "junit"))
    cases = suites.findall("testsuite/testcase")
    failed = sum(1 for want in PROGRAMS.values() if want[2] not in ("ok",))
    assert (len(cases), int(suites.get("tests")), int(suites.get("failures"))) == (
        len(PROGRAMS),
        len(PROGRAMS),
        failed,
    )
    assert sum(1 for c in cases if c.find("failure") is not None) == failed


# -- click's runner: validation only ---------------------------------------------


def test_validation_only(tree, monkeypatch):
    monkeypatch.chdir(tree)
    result = invoke("--kit", "files")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "FAIL  bad/imports.lackpy  rejected" in lines
    assert (
        "    bad/imports.lackpy:1:1: 'import' is not allowed in lackpy: call a tool of the kit, "
        "or a builtin [forbidden-node]"
    ) in lines
    assert "PASS  fail/divide.lackpy  valid" in lines
    assert lines[-1] == "7 programs: 5 passed, 2 failed (2 rejected, 0 failed when run)"
    assert "skipped" not in result.stdout  # hidden folders are not searched


def test_passing_paths_exit_0(tree, monkeypatch):
    monkeypatch.chdir(tree)
    result = invoke("ok", "fail", "--kit", "files")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "5 programs: 5 passed, 0 failed"


def test_unknown_tools_are_rejected_without_the_kit(tree, monkeypatch):
    monkeypatch.chdir(tree)
    result = invoke("ok/read.lackpy", "--json")
    assert result.exit_code == 1
    [program] = json.loads(result.stdout)["programs"]
    assert program["errors"][0]["rule"] == "unknown-call"


def test_glob_option(tree, monkeypatch):
    monkeypatch.chdir(tree)
    data = json.loads(invoke("--glob", "ok/*.lackpy", "--kit", "files", "--json").stdout)
    assert [p["path"] for p in data["programs"]] == ["ok/read.lackpy", "ok/sum.lackpy"]
    assert data["passed"] is True and data["run"] is False


def test_output_file_and_text_on_stdout(tree, monkeypatch):
    monkeypatch.chdir(tree)
    result = invoke("--kit", "files", "--format", "junit", "--output", "reports.xml")
    assert result.exit_code == 1
    assert "FAIL  bad/imports.lackpy  rejected" in result.stdout.splitlines()
    suites = ET.parse(tree / "reports.xml").getroot()
    assert (suites.get("tests"), suites.get("failures")) == ("7", "2")
    assert not [
        p for p in os.listdir(tree) if p.startswith(".lackjail-gate-")
    ]  # no temp file left behind


def test_json_mode_prints_only_json(tree, monkeypatch):
    monkeypatch.chdir(tree)
    result = invoke("--json", "--output", "r.json", "--kit", "files")
    assert (result.exit_code, result.stdout) == (1, "")
    assert json.loads((tree / "r.json").read_text())["summary"]["rejected"] == 2


def test_no_programs_is_said_and_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke()
    assert result.exit_code == 0
    assert "no programs found" in result.stderr


@pytest.mark.parametrize(
    "args, says",
    [
        (["nope"], "path 'nope' does not exist"),
        (["--format", "xml"], "'--format'"),
        (["--policy", "nope"], "no policy named 'nope'"),
        (["--kit", "no_such_tool"], "--kit"),
        (["--glob", "/abs/*.lackpy"], "must be a relative pattern"),
        (["--glob", "[ab"], "unclosed"),
        (["--json", "--format", "sarif"], "--json and --format sarif disagree"),
        (["--output", "missing/r.sarif"], "does not exist"),
        (["--param", "_x=1"], "parameter name '_x' must not start with '_'"),
        (["--param", "noequals"], "is not NAME=VALUE"),
        (["--param", "len=3"], "would hide the builtin"),
        (["--kit", "files", "--param", "read_file=x"], "would hide the builtin or tool"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tree, monkeypatch, args, says):
    monkeypatch.chdir(tree)
    result = invoke(*args)
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and says in errors[0], result.stderr


# -- a real subprocess -----------------------------------------------------------


def test_subprocess_run_with_sarif_output(tree, require_nsjail):
    proc = lackjail(
        "gate",
        "--run",
        "--kit",
        "files",
        "--policy",
        "tree-policy.toml",
        "--format",
        "sarif",
        "--output",
        "gate.sarif",
        cwd=tree,
    )
    assert proc.returncode == 1, proc.stderr
    assert "FAIL  fail/slow.lackpy  ran: timeout" in proc.stdout
    assert "7 programs: 2 passed, 5 failed (2 rejected, 3 failed when run)" in proc.stdout
    log = json.loads((tree / "gate.sarif").read_text())
    check_sarif(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {
        "verdict/timeout",
        "verdict/denied",
        "syntax",
    }
    assert "Traceback" not in proc.stderr


def test_subprocess_all_pass_exit_0(tree, require_nsjail):
    proc = lackjail("gate", "ok", "--run", "--kit", "files", "--json", cwd=tree)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["passed"] and data["run"] and data["isolation"] == "nsjail"
    assert [p["status"] for p in data["programs"]] == ["ok", "ok"]


def test_subprocess_stdin(tree):
    proc = lackjail("gate", "-", "--json", cwd=tree, stdin="import os\n")
    assert proc.returncode == 1
    [program] = json.loads(proc.stdout)["programs"]
    assert (program["path"], program["status"]) == ("<stdin>", "rejected")
    assert lackjail("gate", "-", cwd=tree, stdin="x = 1\nx\n").returncode == 0


def test_subprocess_junit_counts(tree):
    proc = lackjail("gate", "--kit", "files", "--format", "junit", cwd=tree)
    assert proc.returncode == 1
    suites = ET.fromstring(proc.stdout)
    assert (suites.get("tests"), suites.get("failures")) == ("7", "2")


def test_subprocess_bad_input_exit_2(tree):
    proc = lackjail("gate", "nope", cwd=tree)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("Error")] == [
        "Error: path 'nope' does not exist"
    ]


def test_help_documents_exit_codes(tree):
    proc = lackjail("gate", "--help", cwd=tree)
    assert proc.returncode == 0
    assert "0 every program passed; 1 a program failed the gate" in " ".join(proc.stdout.split())


def _stderr_on_a_terminal(args, cwd):
    """Run the gate with stderr on a pseudo-terminal; return what the terminal showed."""
    return on_a_terminal(["gate", *args], cwd, "stderr", COLUMNS="100")


def test_progress_bar_on_a_terminal_and_silent_in_json_mode(tree):
    # last in order, so the final bar shows it: a file name, not rich markup
    (tree / "zz[red]odd.lackpy").write_text("1\n")
    shown, code = _stderr_on_a_terminal(["--kit", "files", "zz[red]odd.lackpy", "."], tree)
    assert "8/8" in shown and "zz[red]odd.lackpy" in shown and code == 1
    assert _stderr_on_a_terminal(["--kit", "files", "--json"], tree) == ("", 1)


def test_subprocess_params_reach_every_program(tree, require_nsjail):
    proc = lackjail("gate", "-", "--run", "--param", "n=21", "--json", cwd=tree, stdin="n * 2\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["programs"][0]["value"] == 42


def test_gate_language_is_a_choice_among_the_policy_s_levels(tmp_path):
    (tmp_path / "f.lackpy").write_text("def f():\n    return 1\nf()\n")
    plain = lackjail("gate", "f.lackpy", cwd=tmp_path)
    assert plain.returncode == 1 and "accepted at --language extended" in plain.stdout
    assert lackjail("gate", "f.lackpy", "--language", "extended", cwd=tmp_path).returncode == 0
    (tmp_path / "only.toml").write_text('name = "only"\nlanguages = ["lackpy"]\n')
    refused = lackjail(
        "gate", "f.lackpy", "--language", "extended", "--policy", "only.toml", cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "not allowed by policy 'only'; it allows: lackpy" in refused.stderr
