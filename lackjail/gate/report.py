"""What a gate found, per program and overall, and its text and JSON renderings.

Columns in `errors` are 1-based everywhere (validator, `lackjail run --json`,
the text report and SARIF alike).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from lackjail.jsondata import jsonable
from lackjail.terminal import terminal_safe

PASSING = ("valid", "ok")


@dataclass
class ProgramReport:
    """One program's verdict: `valid` or `rejected` (not run), or the status of its run.

    Every error has a `rule`: the validator's rule id, or `verdict/<status>`
    for what went wrong when it ran.
    """

    name: str
    status: str
    errors: list = field(default_factory=list)
    duration_ms: float = 0.0
    ran: bool = False
    calls: list = field(default_factory=list)
    tool_calls: int = 0
    trace: list = field(default_factory=list)
    output: str = ""
    value: object = None

    @property
    def passed(self) -> bool:
        return self.status in PASSING

    def to_dict(self) -> dict:
        out = {
            "path": self.name,
            "status": self.status,
            "passed": self.passed,
            "errors": self.errors,
            "duration_ms": self.duration_ms,
            "ran": self.ran,
            "calls": self.calls,
        }
        if self.ran:
            out.update(
                tool_calls=self.tool_calls, trace=self.trace, output=self.output, value=self.value
            )
        return out


@dataclass
class GateReport:
    """Every program's report plus how the gate ran (policy, kit, isolation, root of the paths)."""

    programs: list
    policy: str
    kit: str
    ran: bool
    root: str
    isolation: str = ""
    duration_ms: float = 0.0

    @property
    def failed(self) -> list:
        return [p for p in self.programs if not p.passed]

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def summary(self) -> dict:
        failed = self.failed
        rejected = sum(1 for p in failed if p.status == "rejected")
        return {
            "programs": len(self.programs),
            "passed": len(self.programs) - len(failed),
            "failed": len(failed),
            "rejected": rejected,
            "run_failed": len(failed) - rejected,
        }

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "summary": self.summary(),
            "policy": self.policy,
            "kit": self.kit,
            "run": self.ran,
            "isolation": self.isolation,
            "duration_ms": self.duration_ms,
            "programs": [p.to_dict() for p in self.programs],
        }


def render_json(report: GateReport) -> str:
    return json.dumps(jsonable(report.to_dict()), ensure_ascii=False, indent=2) + "\n"


def _place(name: str, error: dict) -> str:
    if error.get("line") is None:
        return name
    if error.get("col") is None:
        return f"{name}:{error['line']}"
    return f"{name}:{error['line']}:{error['col']}"


def _verdict(program: ProgramReport) -> str:
    if not program.ran:
        return program.status
    calls = f"{program.tool_calls} tool call{'' if program.tool_calls == 1 else 's'}"
    return f"ran: {program.status} in {program.duration_ms:.0f} ms, {calls}"


def render_text(report: GateReport) -> str:
    """One line per program, its errors below it, and a summary line."""
    lines = []
    for program in report.programs:
        name = terminal_safe(program.name)
        lines.append(f"{'PASS' if program.passed else 'FAIL'}  {name}  {_verdict(program)}")
        for error in program.errors:
            where = terminal_safe(_place(program.name, error))
            lines.append(
                f"    {where}: {terminal_safe(error['message'])} [{terminal_safe(error['rule'])}]"
            )
    s = report.summary()
    if not s["programs"]:
        lines.append("no programs found")
    else:
        detail = (
            f" ({s['rejected']} rejected, {s['run_failed']} failed when run)" if s["failed"] else ""
        )
        lines.append(
            f"{s['programs']} program{'' if s['programs'] == 1 else 's'}: "
            f"{s['passed']} passed, {s['failed']} failed{detail}"
        )
    return "\n".join(lines) + "\n"
