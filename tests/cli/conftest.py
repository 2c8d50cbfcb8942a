"""Fixtures for the CLI tests, which exercise every subcommand (their owners' fixtures, shared)."""

import sys
from pathlib import Path

import pytest

# the support modules of the kit, generation and gate tests, importable by their unique names
for _folder in ("kit", "infer", "gate"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _folder))

from gate_support import make_tree  # noqa: E402
from infer_support import LLMServer, clear_provider_env  # noqa: E402
from kit_support import make_outside, make_workspace  # noqa: E402


@pytest.fixture
def outside(tmp_path):
    """A folder next to the workspace holding a secret no tool may read or overwrite."""
    return make_outside(tmp_path)


@pytest.fixture
def ws(tmp_path, outside):
    """A workspace: a.txt, src/main.py, docs/guide.md."""
    return make_workspace(tmp_path)


@pytest.fixture
def tree(tmp_path):
    """A fresh copy of the gate's fixture tree."""
    return make_tree(tmp_path / "repo")


@pytest.fixture
def llm():
    """A scripted loopback model server (Ollama and Anthropic APIs)."""
    with LLMServer() as server:
        yield server


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No provider settings leak in from the host; the test works in its own project folder."""
    clear_provider_env(monkeypatch, tmp_path)
    yield


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty HOME and XDG config folder, so the user's own config never leaks into a test."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    return folder
