"""The gate's findings as GitHub Actions workflow commands: one `::error` annotation per error.

GitHub shows each on the pull request at its file, line and column. Values are
escaped as workflow commands require (`%`, CR, LF; also `:` and `,` inside
properties), and control characters are escaped first, so a program cannot
inject commands of its own (`::add-mask::`, `::stop-commands::`) or drive a log
viewer.
"""

from __future__ import annotations

from lackjail.gate.report import GateReport, summary_lines
from lackjail.terminal import terminal_safe


def _data(text: str) -> str:
    return terminal_safe(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(name: str, error: dict, status: str) -> str:
    """One `::error file=...,line=...,col=...,title=...::message` line."""
    props = [f"file={_property(name)}"]
    if error.get("line") is not None:
        props.append(f"line={int(error['line'])}")
        if error.get("col") is not None:
            props.append(f"col={int(error['col'])}")
    props.append(f"title={_property(f'lackjail {status}: {error["rule"]}')}")
    return f"::error {','.join(props)}::{_data(error['message'])}"


def render_github(report: GateReport) -> str:
    """An annotation per error of every failed program, then the text summary."""
    lines = [
        annotation(program.name, error, program.status)
        for program in report.failed
        for error in program.errors
        or [{"message": program.status, "rule": f"verdict/{program.status}"}]
    ]
    return "\n".join(lines + summary_lines(report)) + "\n"
