"""The CI gate: find lackpy programs, validate each, optionally run each once in the jail, report.

programs = discover(["src"], "**/*.lackpy")
report = Gate(policy, kit, jail=jail).run_all(programs)
print(render(report, "sarif"))
"""

from lackjail.gate.discover import DEFAULT_GLOB, DiscoveryError, Found, discover
from lackjail.gate.github import render_github
from lackjail.gate.judge import Gate
from lackjail.gate.junit import render_junit
from lackjail.gate.report import GateReport, ProgramReport, render_json, render_text
from lackjail.gate.sarif import render_sarif

RENDERERS = {
    "text": render_text,
    "json": render_json,
    "junit": render_junit,
    "sarif": render_sarif,
    "github": render_github,
}
FORMATS = tuple(RENDERERS)


def render(report: GateReport, fmt: str) -> str:
    """REPORT in one of FORMATS."""
    return RENDERERS[fmt](report)


__all__ = [
    "DEFAULT_GLOB",
    "DiscoveryError",
    "FORMATS",
    "Found",
    "Gate",
    "GateReport",
    "ProgramReport",
    "discover",
    "render",
]
