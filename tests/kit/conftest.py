"""Fixtures for the kit tests: a workspace with files, a secret outside it, and a session maker."""

import pytest
from kit_support import make_outside, make_policy, make_workspace

from lackjail.kit import resolve_kit


@pytest.fixture
def outside(tmp_path):
    """A folder next to the workspace holding a secret no tool may read or overwrite."""
    return make_outside(tmp_path)


@pytest.fixture
def ws(tmp_path, outside):
    """The workspace: a.txt, src/main.py, docs/guide.md."""
    return make_workspace(tmp_path)


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
