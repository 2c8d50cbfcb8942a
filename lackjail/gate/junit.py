"""The gate's findings as JUnit XML: one testcase per program, a failure per failing one.

Program output and file names are hostile text: every control or format
character (those XML 1.0 cannot hold, lone surrogates, and the C1 controls and
bidi overrides a terminal would act on when the report is printed) is written
as a `\\xNN`-style escape, so the file always parses and prints inert.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from lackjail.gate.report import GateReport

SUITE = "lackjail gate"
_SUSPECT = re.compile("[^\t\n\r\x20-\x7e]")


def _xml_text(text) -> str:
    return _SUSPECT.sub(_escape_unprintable, str(text))


def _escape_unprintable(match: re.Match) -> str:
    char = match.group()
    return char if char.isprintable() else repr(char)[1:-1]


def _failure_text(program) -> str:
    lines = []
    for error in program.errors:
        where = (
            f"{error['line']}:{error['col']}"
            if error.get("col") is not None and error.get("line")
            else str(error.get("line") or "")
        )
        lines.append(
            f"{program.name}{':' + where if where else ''}: {error['message']} [{error['rule']}]"
        )
    return "\n".join(lines) or program.status


def _failure_message(program) -> str:
    first = program.errors[0]["message"] if program.errors else ""
    kind = "rejected" if program.status == "rejected" else f"run failed ({program.status})"
    more = f" (+{len(program.errors) - 1} more)" if len(program.errors) > 1 else ""
    return f"{kind}: {first}{more}" if first else kind


def render_junit(report: GateReport) -> str:
    summary = report.summary()
    seconds = f"{report.duration_ms / 1000:.3f}"
    counts = {
        "tests": str(summary["programs"]),
        "failures": str(summary["failed"]),
        "errors": "0",
        "skipped": "0",
        "time": seconds,
    }
    suites = ET.Element("testsuites", {"name": SUITE, **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": SUITE, **counts})
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("policy", report.policy),
        ("kit", report.kit),
        ("run", str(report.ran).lower()),
        ("isolation", report.isolation),
    ):
        ET.SubElement(properties, "property", {"name": name, "value": _xml_text(value)})
    for program in report.programs:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": "lackjail.gate",
                "name": _xml_text(program.name),
                "file": _xml_text(program.name),
                "time": f"{program.duration_ms / 1000:.3f}",
            },
        )
        if not program.passed:
            rule = program.errors[0]["rule"] if program.errors else f"verdict/{program.status}"
            failure = ET.SubElement(
                case,
                "failure",
                {"message": _xml_text(_failure_message(program)), "type": _xml_text(rule)},
            )
            failure.text = _xml_text(_failure_text(program))
        if program.output:
            ET.SubElement(case, "system-out").text = _xml_text(program.output)
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
