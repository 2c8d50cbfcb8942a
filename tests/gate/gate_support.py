"""Helpers for the gate tests: a fixture tree of valid, rejected and failing programs; SARIF
checks.
"""

import json
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((Path(__file__).with_name("sarif-schema-2.1.0.json")).read_text())

# name -> (source, status without --run, status with --run under the kit `files` and tree policy)
PROGRAMS = {
    "ok/sum.lackpy": ("total = sum([1, 2, 3])\nprint('total', total)\ntotal\n", "valid", "ok"),
    "ok/read.lackpy": ("text = read_file('data.txt')\nlen(text)\n", "valid", "ok"),
    "bad/imports.lackpy": ("import os\nx = eval('1')\n", "rejected", "rejected"),
    "bad/syntax.lackpy": ("x = (1,\n", "rejected", "rejected"),
    "fail/divide.lackpy": ("y = 2\nx = y / 0\n", "valid", "error"),
    "fail/write.lackpy": ("write_file('out.txt', 'x')\n", "valid", "denied"),
    "fail/slow.lackpy": (
        "n = 0\nfor i in range(1000000000):\n    n = n + i\nn\n",
        "valid",
        "timeout",
    ),
}
POLICY = """\
# the ci policy with a short wall clock, so the timeout case is quick
name = "tree"
isolation = "nsjail"
[limits]
wall_s = 1.0
cpu_s = 1
[pool]
mode = "fresh"
[tools]
workspace_writable = false
"""


def make_tree(root: Path) -> Path:
    for name, (source, _, _) in PROGRAMS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    (root / "data.txt").write_text("hello")
    (root / "notes.txt").write_text("not a program")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skipped.lackpy").write_text("import os\n")
    (root / "tree-policy.toml").write_text(POLICY)
    return root


def check_sarif(log: dict) -> None:
    """Valid SARIF 2.1.0, plus what GitHub code scanning needs beyond the schema."""
    jsonschema.Draft7Validator(
        SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    ).validate(log)
    [run] = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    # a helpUri only where the package's metadata names its rules page (test_rules_page)
    uris = [r["helpUri"] for r in rules if "helpUri" in r]
    assert all(u.startswith("https://") and "#rule-" in u for u in uris)
    prints = [r["partialFingerprints"]["lackjail/v1"] for r in run["results"]]
    assert all(len(p) == 32 for p in prints)
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file:///") and base.endswith("/")
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        [location] = result["locations"]
        artifact = location["physicalLocation"]["artifactLocation"]
        assert "\\" not in artifact["uri"]
        if "uriBaseId" in artifact:
            assert artifact["uriBaseId"] == "%SRCROOT%" and not artifact["uri"].startswith(
                ("/", "file:")
            )
        assert location["physicalLocation"]["region"]["startLine"] >= 1
