"""Product text cites what the repository carries: ARCHITECTURE.md, never a design brief or an
issue number from a tracker it does not have (the CHANGELOG records history and may)."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = r"DESIGN\.md|\b[Ii]ssues? #?[0-9]+"


def test_no_product_text_cites_a_design_brief_or_an_issue_number():
    found = subprocess.run(
        ["git", "grep", "--untracked", "-I", "-n", "-E", CITATION, "--", ".", ":!CHANGELOG.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1, found.stdout  # 1: git grep found nothing
    assert (ROOT / "ARCHITECTURE.md").is_file()
