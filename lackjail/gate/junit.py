"""The gate's findings as JUnit XML: one testcase per program, a failure per failing one.

Program output is hostile text: characters XML 1.0 cannot hold (most control
characters, lone surrogates) are written as `\\xNN`-style escapes, so the file
always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from lackjail.gate.report import GateReport

SUITE = "lackjail gate"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text) -> str:
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], str(text))


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
