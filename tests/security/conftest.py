"""Fixtures of the host-side security tests."""

import pytest


@pytest.fixture
def private_state(tmp_path, monkeypatch):
    """Journals of interrupted commits go to a folder of this test, not the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
