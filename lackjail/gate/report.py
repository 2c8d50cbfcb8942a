"""What a gate found, per program and overall, and its text and JSON renderings.

Columns in `errors` are 1-based everywhere (validator, `lackjail run --json`,
the text report and SARIF alike).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lackjail.jsondata import dumps
from lackjail.terminal import terminal_safe

PASSING = ("valid", "ok", "ignored")


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
    diff: str = ""  # what a dry run would have written

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
        if self.diff:
            out["diff"] = self.diff
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
            "rules": rule_counts(self),
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


def rule_matches(rule: str, patterns) -> bool:
    """True when RULE is one of PATTERNS or starts with one ending in '/' or '-' (a family:
    `verdict/`, `forbidden-`)."""
    return any(rule == p or (p.endswith(("/", "-")) and rule.startswith(p)) for p in patterns)


def unknown_rules(patterns, known) -> list[str]:
    """The PATTERNS that are neither one of the KNOWN rule ids nor a family (a prefix ending in
    '/' or '-') of at least one of them: a typo must not select or ignore nothing."""
    return [p for p in patterns if not any(rule_matches(rule, (p,)) for rule in known)]


def select_rules(program: ProgramReport, select=(), ignore=()) -> ProgramReport:
    """PROGRAM with only the findings of the SELECTed rules (all when empty) minus the IGNOREd
    ones; a program left with no finding is `ignored` (it passes the gate, and never ran)."""
    if not select and not ignore:
        return program
    kept = [
        e
        for e in program.errors
        if (not select or rule_matches(e["rule"], select)) and not rule_matches(e["rule"], ignore)
    ]
    if program.errors and not kept and not program.passed:
        program.status = "ignored"
    program.errors = kept
    return program


def render_json(report: GateReport) -> str:
    return dumps(report.to_dict(), indent=2) + "\n"


def _verdict(program: ProgramReport) -> str:
    if not program.ran:
        return program.status
    calls = f"{program.tool_calls} tool call{'' if program.tool_calls == 1 else 's'}"
    return f"ran: {program.status} in {program.duration_ms:.0f} ms, {calls}"


def _plain_style(word: str, good: bool) -> str:
    return word


def program_lines(program: ProgramReport, style=_plain_style) -> list[str]:
    """The text report's lines for one program: its verdict, then each error with its rule.

    STYLE(word, good) may colour PASS/FAIL for a terminal."""
    from lackjail.checker import format_error

    mark = style("PASS", True) if program.passed else style("FAIL", False)
    lines = [f"{mark}  {terminal_safe(program.name)}  {_verdict(program)}"]
    lines += [f"    {format_error(error, program.name)}" for error in program.errors]
    lines += [f"    {line}" for line in terminal_safe(program.diff, multiline=True).splitlines()]
    return lines


def rule_counts(report: GateReport) -> dict[str, int]:
    """How many errors each rule found, most frequent first."""
    counts: dict[str, int] = {}
    for program in report.programs:
        for error in program.errors:
            counts[error["rule"]] = counts.get(error["rule"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summary_lines(report: GateReport) -> list[str]:
    """The per-rule counts and the summary line."""
    s = report.summary()
    lines = []
    counts = rule_counts(report)
    if counts:
        lines.append("by rule: " + ", ".join(f"{terminal_safe(r)} {n}" for r, n in counts.items()))
    detail = (
        f" ({s['rejected']} rejected, {s['run_failed']} failed when run)" if s["failed"] else ""
    )
    lines.append(
        f"{s['programs']} program{'' if s['programs'] == 1 else 's'}: "
        f"{s['passed']} passed, {s['failed']} failed{detail}"
    )
    return lines


def render_text(report: GateReport, style=_plain_style) -> str:
    """One line per program, its errors below it, the per-rule counts and a summary line."""
    lines = [line for program in report.programs for line in program_lines(program, style)]
    return "\n".join(lines + summary_lines(report)) + "\n"
