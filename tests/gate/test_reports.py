"""The renderers on hand-made reports: SARIF against the schema, JUnit through the standard library,
text, JSON.
"""

import json
import xml.etree.ElementTree as ET

from gate_support import check_sarif

from lackjail.gate import GateReport, ProgramReport, render


def sample(root="/work/repo") -> GateReport:
    programs = [
        ProgramReport(
            "ok.lackpy", "ok", ran=True, duration_ms=12.5, tool_calls=2, output="hi\n", value=3
        ),
        ProgramReport(
            "dir with space/bad.lackpy",
            "rejected",
            [
                {
                    "message": "'import' is not allowed in lackpy",
                    "rule": "forbidden-node",
                    "line": 1,
                    "col": 1,
                },
                {
                    "message": "'eval' is a forbidden name in lackpy",
                    "rule": "forbidden-name",
                    "line": 3,
                    "col": 8,
                },
            ],
        ),
        ProgramReport(
            "slow.lackpy",
            "timeout",
            [{"message": "wall-clock limit of 1 s exceeded", "rule": "verdict/timeout"}],
            ran=True,
            duration_ms=1003.0,
            output="a\x00b\x1b[31m\ud800 end",
        ),
        ProgramReport(
            "/elsewhere/x.lackpy",
            "rejected",
            [{"message": "custom says no", "rule": "my-rule", "line": 2}],
        ),
        ProgramReport("fine.lackpy", "valid"),
    ]
    return GateReport(programs, "ci", "files", True, root, "nsjail", 1020.0)


def test_sarif_validates_and_places_each_error():
    log = json.loads(render(sample(), "sarif"))
    check_sarif(log)
    [run] = log["runs"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///work/repo/"
    places = [
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"],
        )
        for r in run["results"]
    ]
    assert places == [
        ("forbidden-node", "dir%20with%20space/bad.lackpy", {"startLine": 1, "startColumn": 1}),
        ("forbidden-name", "dir%20with%20space/bad.lackpy", {"startLine": 3, "startColumn": 8}),
        ("verdict/timeout", "slow.lackpy", {"startLine": 1}),
        ("my-rule", "file:///elsewhere/x.lackpy", {"startLine": 2}),
    ]
    outside = run["results"][3]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert "uriBaseId" not in outside
    rule_ids = {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert {
        "forbidden-node",
        "syntax",
        "verdict/timeout",
        "verdict/error",
        "verdict/denied",
        "my-rule",
    } <= rule_ids
    assert (
        run["results"][2]["message"]["text"]
        == "run failed (timeout): wall-clock limit of 1 s exceeded"
    )


def test_sarif_of_a_clean_gate_has_no_results():
    report = GateReport([ProgramReport("a.lackpy", "valid")], "ci", "none", False, "/r")
    log = json.loads(render(report, "sarif"))
    check_sarif(log)
    assert log["runs"][0]["results"] == []


def test_junit_parses_and_counts_match():
    text = render(sample(), "junit")
    suites = ET.fromstring(text.encode())
    [suite] = suites.findall("testsuite")
    cases = suite.findall("testcase")
    assert (
        suites.get("tests"),
        suites.get("failures"),
        suite.get("tests"),
        suite.get("failures"),
    ) == ("5", "3", "5", "3")
    assert len(cases) == 5 and sum(1 for c in cases if c.find("failure") is not None) == 3
    bad = next(c for c in cases if c.get("name") == "dir with space/bad.lackpy").find("failure")
    assert bad.get("type") == "forbidden-node"
    assert bad.get("message") == "rejected: 'import' is not allowed in lackpy (+1 more)"
    assert (
        "dir with space/bad.lackpy:3:8: 'eval' is a forbidden name in lackpy [forbidden-name]"
        in bad.text
    )
    slow = next(c for c in cases if c.get("name") == "slow.lackpy")
    assert slow.find("failure").get("message").startswith("run failed (timeout)")
    assert slow.get("time") == "1.003"
    # hostile output: characters XML cannot hold arrive escaped, the rest intact
    assert slow.find("system-out").text == "a\\x00b\\x1b[31m\\ud800 end"


def test_text_report_and_summary():
    text = render(sample(), "text")
    lines = text.splitlines()
    assert lines[0] == "PASS  ok.lackpy  ran: ok in 12 ms, 2 tool calls"
    assert "FAIL  dir with space/bad.lackpy  rejected" in lines
    assert (
        "    dir with space/bad.lackpy:3:8: 'eval' is a forbidden name in lackpy [forbidden-name]"
        in lines
    )
    assert "    slow.lackpy: wall-clock limit of 1 s exceeded [verdict/timeout]" in lines
    assert "    /elsewhere/x.lackpy:2: custom says no [my-rule]" in lines
    assert lines[-1] == "5 programs: 2 passed, 3 failed (2 rejected, 1 failed when run)"


def test_text_escapes_control_characters():
    report = GateReport(
        [
            ProgramReport(
                "a\x1b[2J.lackpy",
                "rejected",
                [{"message": "bad \x1b]0;title\x07", "rule": "syntax"}],
            )
        ],
        "ci",
        "none",
        False,
        "/r",
    )
    text = render(report, "text")
    assert "\x1b" not in text and "\x07" not in text and "\\x1b[2J" in text


def test_json_report():
    data = json.loads(render(sample(), "json"))
    assert data["passed"] is False
    assert data["summary"] == {
        "programs": 5,
        "passed": 2,
        "failed": 3,
        "rejected": 2,
        "run_failed": 1,
        "rules": {"forbidden-name": 1, "forbidden-node": 1, "my-rule": 1, "verdict/timeout": 1},
    }
    assert "by rule: forbidden-name 1, forbidden-node 1, my-rule 1, verdict/timeout 1" in render(
        sample(), "text"
    )
    first = data["programs"][0]
    assert (
        first["path"],
        first["status"],
        first["tool_calls"],
        first["value"],
        first["output"],
    ) == ("ok.lackpy", "ok", 2, 3, "hi\n")
    assert "tool_calls" not in data["programs"][-1]  # not run: no run fields
    assert GateReport([], "ci", "none", False, "/r").exit_code == 0 and sample().exit_code == 1
