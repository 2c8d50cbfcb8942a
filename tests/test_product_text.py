"""Product text cites what the repository carries: ARCHITECTURE.md, never a design brief or an
issue number from a tracker it does not have (the CHANGELOG records history and may)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"DESIGN\.md|\b[Ii]ssues? #?\d+|\b[Ii]ssue #\d+")


def test_no_product_text_cites_a_design_brief_or_an_issue_number():
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    found = []
    for name in filter(None, (n.decode() for n in tracked)):
        path = ROOT / name
        if name == "CHANGELOG.md" or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        found += [f"{name}: {m.group(0)}" for m in CITATION.finditer(text)]
    assert found == []
    assert (ROOT / "ARCHITECTURE.md").is_file()
