"""GitHub annotations, rule selection, per-rule counts and SARIF helpUri/partialFingerprints."""

import json
import os

from click.testing import CliRunner
from test_reports import sample

from lackjail.cli.gate import gate
from lackjail.gate import render
from lackjail.gate.github import annotation
from lackjail.gate.report import ProgramReport, select_rules


def test_github_annotations_one_per_error_then_the_summary():
    lines = render(sample(), "github").splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert errors[0] == (
        "::error file=dir with space/bad.lackpy,line=1,col=1,"
        "title=lackjail rejected%3A forbidden-node::'import' is not allowed in lackpy"
    )
    assert len(errors) == 4  # two + the timeout + the custom rule; passing programs have none
    assert "::error file=slow.lackpy,title=lackjail timeout%3A verdict/timeout::" in lines[2]
    assert lines[-1].startswith("5 programs: 2 passed, 3 failed")


def test_github_annotations_cannot_be_injected():
    hostile = {"message": "x\n::add-mask::secret\r\x1b[2J 100%", "rule": "r", "line": 1}
    line = annotation("a,b:c\n::stop-commands::z.lackpy", hostile, "rejected")
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line.startswith("::error file=a%2Cb%3Ac\\n%3A%3Astop-commands%3A%3Az.lackpy,line=1,")
    assert line.endswith("::x\\n::add-mask::secret\\r\\x1b[2J 100%25")


def test_select_and_ignore_rules():
    def program():
        return ProgramReport(
            "p.lackpy",
            "rejected",
            [
                {"message": "a", "rule": "forbidden-node"},
                {"message": "b", "rule": "forbidden-name"},
                {"message": "c", "rule": "unknown-call"},
            ],
        )

    assert [e["rule"] for e in select_rules(program(), select=("forbidden-",)).errors] == [
        "forbidden-node",
        "forbidden-name",
    ]
    assert [e["rule"] for e in select_rules(program(), ignore=("forbidden-name",)).errors] == [
        "forbidden-node",
        "unknown-call",
    ]
    left = select_rules(program(), ignore=("forbidden-", "unknown-call"))
    assert left.status == "ignored" and left.passed and left.errors == []
    assert select_rules(program(), select=("forbidden-node",)).status == "rejected"


def test_gate_select_ignore_and_rule_counts_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.lackpy").write_text("import os\neval('1')\n")
    (tmp_path / "b.lackpy").write_text("eval('2')\n")
    out = CliRunner().invoke(gate, ["."])
    assert out.exit_code == 1
    assert "by rule: forbidden-name 2, forbidden-node 1" in out.output
    ignored = CliRunner().invoke(gate, [".", "--ignore", "forbidden-name,forbidden-node"])
    assert ignored.exit_code == 0, ignored.output
    selected = CliRunner().invoke(gate, [".", "--select", "forbidden-node", "--json"])
    data = json.loads(selected.output)
    assert data["summary"]["rules"] == {"forbidden-node": 1}
    assert {p["path"]: p["status"] for p in data["programs"]} == {
        "a.lackpy": "rejected",
        "b.lackpy": "ignored",
    }
    github = CliRunner().invoke(gate, [".", "--format", "github"])
    assert github.exit_code == 1 and github.output.count("::error file=") == 3


def test_sarif_rules_have_help_uris_and_results_fingerprints(monkeypatch):
    from lackjail.gate import sarif

    page = "https://example.org/lackjail/blob/main/docs/rules.md"
    monkeypatch.setattr(sarif, "help_base", lambda: page)
    log = json.loads(render(sample(), "sarif"))
    [run] = log["runs"]
    assert all(r["helpUri"].startswith(page + "#rule-") for r in run["tool"]["driver"]["rules"])
    prints = [r["partialFingerprints"]["lackjail/v1"] for r in run["results"]]
    assert len(prints) == len(set(prints)) == 4
    moved = sample()
    moved.programs[1].errors[0]["line"] = 40  # the same finding further down: the same print
    again = json.loads(render(moved, "sarif"))["runs"][0]["results"]
    assert [r["partialFingerprints"]["lackjail/v1"] for r in again] == prints


def test_a_file_name_that_is_not_utf8_cannot_break_a_report(tmp_path, monkeypatch):
    """A workspace may name a program with bytes that are no UTF-8 (b'\\xff'): every report
    format still renders as valid UTF-8 (SARIF and JSON parse), naming the file with the byte
    escaped; the gate judges the program rather than crashing on its name."""
    folder = os.fsencode(tmp_path)
    with open(os.path.join(folder, b"bad\xff\x1b[31m.lackpy"), "w") as fh:
        fh.write("import os\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(gate, ["--format", "sarif", "."])
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output
    log = json.loads(result.output)
    [finding] = log["runs"][0]["results"]
    uri = finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert "%5Cxff" in uri  # the escaped byte, percent-encoded
    for fmt in ("text", "junit", "github"):
        result = CliRunner().invoke(gate, ["--format", fmt, "."])
        assert result.exit_code == 1, (fmt, result.output)
        result.output.encode("utf-8")  # no lone surrogate reaches the output
        assert "bad\\xff" in result.output and "\x1b" not in result.output
    [program] = json.loads(CliRunner().invoke(gate, ["--format", "json", "."]).output)["programs"]
    assert program["path"] == "bad\\xff\x1b[31m.lackpy"
