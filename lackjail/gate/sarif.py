"""The gate's findings as SARIF 2.1.0, the format GitHub code scanning uploads.

One rule per validator rule and per run verdict (`verdict/timeout`, ...);
one result per error, at its line and (1-based) column, or at line 1 when it
has no place (a timeout belongs to the whole program). Paths are relative to
`%SRCROOT%` (the folder the gate ran from), with `/` separators.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from urllib.parse import quote

from lackjail import __version__ as version
from lackjail.gate.report import GateReport
from lackjail.jsondata import dumps
from lackjail.lang.custom_rules import SHIPPED
from lackjail.lang.rulebook import RULES

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
VERDICTS = {
    "verdict/error": "the program ran and raised an error",
    "verdict/timeout": "the program ran past its wall-clock or CPU time limit",
    "verdict/memory": "the program ran past its memory limit",
    "verdict/limit": "the program ran past a limit of the policy (output, value size, tool calls)",
    "verdict/killed": "the jail running the program died or was killed",
    "verdict/denied": "the policy denied one of the program's tool calls",
    "verdict/invalid": "the jail refused the run's inputs (a parameter name or value)",
}
OTHER = {
    "read": "the program file can be read as a regular file",
    "custom": "a custom validation rule passes",
    "gate/symlink": "a program found in a folder is not a symlink leading out of the tree",
}


def known_rules() -> list[tuple[str, str, str]]:
    """(id, what it asks, kind) of every rule a gate report can name."""
    known = [(r, t, "validator") for r, t in {**RULES, **SHIPPED}.items()]
    known += [(r, t, "verdict") for r, t in VERDICTS.items()]
    return known + [(r, t, "gate") for r, t in OTHER.items()]


@functools.cache
def help_base() -> str:
    """The rules page (docs/rules.md) as the package's metadata places it: its `Rules` URL,
    else `docs/rules.md` in its GitHub-style `Repository` (or `Source`) URL; "" when it
    names neither, and the rules then carry no helpUri rather than one to nowhere."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls = metadata("lackjail").get_all("Project-URL") or []
    except PackageNotFoundError:
        urls = []
    named = {label.lower(): url for label, _, url in (u.partition(", ") for u in urls)}
    if named.get("rules", "").startswith("https://"):
        return named["rules"]
    for label in ("repository", "source"):
        if named.get(label, "").startswith("https://"):
            return named[label].rstrip("/") + "/blob/main/docs/rules.md"
    return ""


def fingerprint(name: str, error: dict) -> str:
    """A stable id for one finding across runs: rule, file and message, not the line (so code
    moving down a file does not open a new alert)."""
    text = "\0".join([error["rule"], name, error["message"]])
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:32]


def _descriptor(rule_id: str, text: str, kind: str) -> dict:
    words = rule_id.replace("/", "-").split("-")
    descriptor = {
        "id": rule_id,
        "name": "".join(w.capitalize() for w in words),
        "shortDescription": {"text": text},
        "fullDescription": {"text": f"lackpy {kind} rule {rule_id}: {text}."},
        "help": {
            "text": f"{text}. Run `lackjail spec` for the lackpy language and `lackjail run FILE` "
            "to see what a program does in the jail."
        },
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["lackpy", kind]},
    }
    if help_base():
        descriptor["helpUri"] = f"{help_base()}#rule-{quote(rule_id, safe='')}"
    return descriptor


def _rules(report: GateReport) -> list[dict]:
    known = known_rules()
    ids = {r for r, _, _ in known}
    for program in report.programs:  # a custom rule id nobody declared still gets a descriptor
        for error in program.errors:
            if error["rule"] not in ids:
                ids.add(error["rule"])
                known.append((error["rule"], f"rule {error['rule']} passes", "validator"))
    return [_descriptor(r, t, kind) for r, t, kind in known]


def _location(name: str, error: dict) -> dict:
    """Names of files outside the root are absolute: they get a file: URI instead of %SRCROOT%."""
    path = Path(name)
    artifact = (
        {"uri": path.as_uri()}
        if path.is_absolute()
        else {"uri": quote(name, safe="/"), "uriBaseId": SRCROOT}
    )
    region = {"startLine": error.get("line") or 1}
    if error.get("line") and error.get("col") is not None:
        region["startColumn"] = error["col"]
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def _message(program, error: dict) -> str:
    if program.ran and program.status != "rejected":
        return f"run failed ({program.status}): {error['message']}"
    return f"rejected: {error['message']}"


def render_sarif(report: GateReport) -> str:
    rules = _rules(report)
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for program in report.failed:
        for error in program.errors or [
            {"message": program.status, "rule": f"verdict/{program.status}"}
        ]:
            results.append(
                {
                    "ruleId": error["rule"],
                    "ruleIndex": index[error["rule"]],
                    "level": "error",
                    "message": {"text": _message(program, error)},
                    "locations": [_location(program.name, error)],
                    "partialFingerprints": {"lackjail/v1": fingerprint(program.name, error)},
                }
            )
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "lackjail",
                        "version": version,
                        "semanticVersion": version,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {
                    SRCROOT: {"uri": Path(report.root).as_uri().rstrip("/") + "/"}
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return dumps(log, indent=2) + "\n"
