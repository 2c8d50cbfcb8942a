"""Fixtures for the kit tests: a workspace with files, a secret outside it, and a session maker."""

import pytest
from kit_support import make_policy

from lackjail.kit import resolve_kit


@pytest.fixture
def outside(tmp_path):
    """A folder next to the workspace holding a secret no tool may read or overwrite."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n")
    return folder


@pytest.fixture
def ws(tmp_path, outside):
    """The workspace: a.txt, src/main.py, docs/guide.md."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "docs" / "guide.md").write_text("# Guide\n")
    return root


@pytest.fixture
def session_for(ws):
    """session_for(kit_spec, **policy_changes, approve=..., workspace=..., dry_run=...) ->
    ToolSession.
    """

    def make(
        spec="files",
        approve=None,
        workspace=None,
        dry_run=False,
        on_event=None,
        extra_tools=None,
        **changes,
    ):
        kit = resolve_kit(spec, workspace=ws, extra_tools=extra_tools)
        return kit.session(
            make_policy(**changes),
            workspace if workspace is not None else ws,
            approve=approve,
            on_event=on_event,
            dry_run=dry_run,
        )

    return make
