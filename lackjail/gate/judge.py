"""Judging programs for the gate: read, validate, and (with a jail) run each one once.

Validation is the jail's own (the kit's names, the policy's size limit), so
a program the gate passes is one `lackjail run` would accept; a rejected
program never reaches the jail. Runs share one Jail, through its `as_completed`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from lackjail.errors import InputError
from lackjail.gate.discover import STDIN, Found, open_program
from lackjail.gate.report import GateReport, ProgramReport

if TYPE_CHECKING:
    from lackjail.result import Result


class Gate:
    """Validates under POLICY and KIT (both resolved); runs valid programs in JAIL, if given."""

    def __init__(
        self,
        policy,
        kit,
        params=None,
        jail=None,
        root=None,
        language=None,
        audience="library",
        dry_run=False,
    ):
        from lackjail.checker import Checker

        self.policy = policy
        self.kit = kit
        self.params = dict(params or {})
        self.jail = jail
        self.dry_run = dry_run  # run, but write nothing: each program's diff is reported
        self.root = os.path.abspath(root or os.getcwd())
        self.checker = (
            jail.checker if jail is not None else Checker(policy, kit, language, audience=audience)
        )

    def check(self, program: Found) -> tuple[ProgramReport, bytes | None]:
        """The validation report, and the source when it is valid (None otherwise)."""
        started = time.perf_counter()
        if program.finding:
            return ProgramReport(
                program.name, "rejected", [{"message": program.finding, "rule": "gate/symlink"}]
            ), None
        try:
            source = read_program(program.path, self.policy.limits.program_bytes, self.root)
        except ReadError as exc:
            return ProgramReport(
                program.name, "rejected", [{"message": str(exc), "rule": exc.rule}]
            ), None
        result = self.checker.check(source, self.params)
        report = ProgramReport(
            program.name,
            "valid" if result.valid else "rejected",
            [e.to_dict() for e in result.errors],
            _ms(started),
            calls=list(result.calls),
        )
        return report, source if result.valid else None

    def fold(self, report: ProgramReport, result: Result) -> ProgramReport:
        """Fold the Result of a valid program's one run into its report (a run the jail could
        not do at all is a `killed` Result: the program was not judged, so it fails)."""
        report.ran = result.status != "invalid"  # the jail refused the inputs: nothing ran
        report.status = result.status if report.ran else "rejected"
        report.errors = [
            {**e, "rule": e.get("rule") or f"verdict/{result.status}"} for e in result.errors
        ]
        report.duration_ms = round(report.duration_ms + result.stats.get("wall_ms", 0.0), 3)
        report.tool_calls = len(result.trace)
        report.trace, report.output, report.value = result.trace, result.output, result.value
        report.diff = result.diff or ""
        return report

    def run_all(self, programs, on_done=None) -> GateReport:
        """Check (and run) every program; ON_DONE(report) is called in this thread as each ends."""
        started = time.perf_counter()
        reports: list[ProgramReport] = []
        to_run = []
        for program in programs:
            report, source = self.check(program)
            reports.append(report)
            if source is not None and self.jail is not None:
                to_run.append((report, source))
            elif on_done:
                on_done(report)
        if to_run and self.jail is not None:
            jobs = ((report, source, self.params) for report, source in to_run)
            for report, result in self.jail.as_completed(jobs, dry_run=self.dry_run):
                done = self.fold(report, result)
                if on_done:
                    on_done(done)
        return GateReport(
            reports,
            self.policy.name,
            self.kit.name,
            self.jail is not None,
            self.root,
            self.jail.isolation if self.jail is not None else "",
            _ms(started),
        )


class ReadError(InputError):
    """A program file that cannot be judged; `rule` says why (read, or the size limit)."""

    def __init__(self, message: str, rule: str = "read"):
        super().__init__(message)
        self.rule = rule


def read_program(path: str, limit: int, root: str | None = None) -> bytes:
    """The bytes of the regular file PATH ('-': stdin), at most LIMIT of them; FIFOs and devices
    are refused, never block. A file below ROOT is opened beneath it (see open_program)."""
    if path == STDIN:
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise ReadError(
                f"the program is over {limit} bytes, the most the policy allows",
                rule="limit-source-bytes",
            )
        return data
    try:
        fd = open_program(path, os.path.abspath(root or os.getcwd()))
    except OSError as exc:
        raise ReadError(f"cannot read the program: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise ReadError(
                f"the program is {info.st_size} bytes; the policy allows at most {limit}",
                rule="limit-source-bytes",
            )
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(
            chunks
        )  # a file that grew past LIMIT meanwhile is rejected by the validator
    except OSError as exc:
        raise ReadError(f"cannot read the program: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
