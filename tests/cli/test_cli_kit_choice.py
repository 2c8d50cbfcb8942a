"""Who chooses the kit: the user (a flag, then their own config) before the repository, and a
tool named with --kit is that tool, never a workspace kit file of the same name."""

import pytest

from lackjail.cli.options import Shared, setup
from lackjail.kit import resolve_kit


@pytest.fixture
def repo(tmp_path):
    """A repository asking for the files kit, with a kit file named like a tool."""
    root = tmp_path / "repo"
    (root / ".lackjail" / "kits").mkdir(parents=True)
    (root / ".lackjail" / "config.toml").write_text('[defaults]\nkit = "files"\n')
    (root / ".lackjail" / "kits" / "read_file.kit").write_text("write_file\nedit_file\n")
    (root / ".lackjail" / "kits" / "mine.kit").write_text("read_file\nfind_files\n")
    return root


def test_the_users_own_config_beats_the_workspaces_kit(repo, home):
    config = home / ".config" / "lackjail" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[defaults]\nkit = "readonly"\n')
    assert setup(Shared(workspace=str(repo))).kit.name == "readonly"
    assert setup(Shared(workspace=str(repo), kit="none")).kit.name == "none"  # a flag, first
    config.unlink()
    assert setup(Shared(workspace=str(repo))).kit.name == "files"  # nobody else chose


def test_a_single_tool_kit_is_the_tool_not_a_workspace_kit_file(repo, home):
    chosen = setup(Shared(workspace=str(repo), kit="read_file"))
    assert sorted(chosen.kit.names) == ["read_file"]
    assert sorted(resolve_kit("read_file", workspace=repo).names) == ["read_file"]
    assert sorted(resolve_kit("read_file,find_files", workspace=repo).names) == [
        "find_files",
        "read_file",
    ]
    # a workspace kit whose name is no tool's is still found
    assert sorted(resolve_kit("mine", workspace=repo).names) == ["find_files", "read_file"]
