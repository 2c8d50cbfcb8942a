"""The pre-commit hooks and the documented commands use options the gate really has."""

import re
import shlex

import pytest
from gate_support import ROOT

from lackjail.cli.gate import gate

DOC = (ROOT / "docs" / "ci-gate.md").read_text()


def gate_command_lines():
    """Every `lackjail gate ...` invocation in the doc's code blocks, as argument lists."""
    commands = []
    for line in DOC.splitlines():
        found = re.search(r'lackjail"?\)?"? gate(?P<args>( .*)?)$', line)
        if found and not line.lstrip().startswith("|"):
            args = shlex.split(found.group("args").split("#")[0].split("<")[0])
            commands.append(args)
    return commands


def test_the_doc_shows_gate_commands():
    assert len(gate_command_lines()) >= 5


@pytest.mark.parametrize("args", gate_command_lines())
def test_documented_commands_parse(args):
    gate.make_context("gate", list(args))  # raises on an unknown option or a bad choice


def test_pre_commit_hooks():
    yaml = pytest.importorskip("yaml")
    hooks = {
        hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    }
    assert set(hooks) == {"lackjail-gate", "lackjail-gate-run"}
    for hook in hooks.values():
        command = shlex.split(hook["entry"])
        assert command[:2] == ["lackjail", "gate"] and hook["language"] == "python"
        gate.make_context("gate", command[2:] + ["x.lackpy"])
        assert re.search(hook["files"], "agents/task.lackpy") and not re.search(
            hook["files"], "task.lackpy.md"
        )
        assert hook["require_serial"] is True  # one gate, one jail pool, for all the files
    assert (
        "--run" in hooks["lackjail-gate-run"]["entry"]
        and "--run" not in hooks["lackjail-gate"]["entry"]
    )


def test_the_documented_pre_commit_rev_is_a_commit_with_these_hooks():
    """pre-commit needs a tag or a full sha; lackjail has no tags, so the doc names a commit
    of this repository whose hooks file has the hooks the doc uses."""
    import subprocess

    revs = re.findall(r"^\s+rev: (\S+)", DOC, re.M)
    assert revs and all(re.fullmatch(r"[0-9a-f]{40}", rev) for rev in revs), revs
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an sdist): the commit cannot be looked up")
    for rev in revs:
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:.pre-commit-hooks.yaml"],
            capture_output=True,
            text=True,
        )
        assert shown.returncode == 0, shown.stderr
        used = set(re.findall(r"- id: (lackjail-[a-z-]+)", DOC))
        assert used and all(f"id: {hook}" in shown.stdout for hook in used)


def test_the_workflow_installs_the_wheel_make_dist_builds_and_names_no_placeholder():
    """The workflow works as written: the wheel it installs is the file `make dist` makes
    (name and version from pyproject.toml), and no example asks the reader to fill in a name."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wheel = f"{project['name']}-{project['version']}-py3-none-any.whl"
    installs = re.findall(r"pip install (\S+)", DOC)
    assert installs == [f"ci/{wheel}"], installs
    assert f"dist/{wheel}" in DOC  # where `make dist` leaves it
    assert not re.search(r"\bOWNER\b|<[A-Z_]+>|example\.com", DOC)
