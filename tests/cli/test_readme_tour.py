"""The README's tour runs as written: every `sh` block (except the two `make` commands, which
the suite itself is) and the custom-tools example, from a fresh copy of the checkout."""

import re
import shutil
import subprocess
import sys

import pytest
from cli_support import ROOT, cli_env

README = (ROOT / "README.md").read_text()
SH_BLOCKS = [b for b in re.findall(r"```sh\n(.*?)```", README, re.S) if "make demo" not in b]
PY_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory, require_nsjail):
    """The tracked files of this checkout, copied (no .lackjail, no leftovers), sharing its venv."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    copy = tmp_path_factory.mktemp("fresh") / "lackjail"
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            (copy / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name.decode())
    (copy / ".venv").symlink_to(ROOT / ".venv")
    return copy


def test_the_tour_has_commands():
    assert len(SH_BLOCKS) >= 4
    assert any("rename_todo.lackpy" in b for b in SH_BLOCKS)


@pytest.mark.parametrize("block", SH_BLOCKS, ids=[b.splitlines()[0][:60] for b in SH_BLOCKS])
def test_every_sh_block_runs_as_written(block, checkout):
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
        env=cli_env(PYTHONPATH=str(checkout)),
    )
    assert proc.returncode == 0, f"{block}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    assert not (checkout / ".lackjail").exists()  # the tour leaves no state behind
    assert not (checkout / "results.jsonl").exists()  # nor the batch's results


def test_the_dry_run_changes_nothing(checkout):
    assert (checkout / "examples" / "notes.txt").read_text() == (
        ROOT / "examples" / "notes.txt"
    ).read_text()


@pytest.mark.parametrize("block", [b for b in PY_BLOCKS if "extra_tools" in b])
def test_the_custom_tools_example_runs(block, checkout, tmp_path):
    script = tmp_path / "custom_tools.py"
    script.write_text(block)
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "HI"
