"""Fixtures for the CLI tests, which exercise every subcommand (their owners' fixtures, shared)."""

import sys
from pathlib import Path

import pytest

# the support modules of the kit, generation and gate tests, importable by their unique names
for _folder in ("kit", "infer", "gate"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / _folder))

from gate_support import make_tree  # noqa: E402
from infer_support import LLMServer  # noqa: E402


@pytest.fixture
def outside(tmp_path):
    """A folder next to the workspace holding a secret no tool may read or overwrite."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n")
    return folder


@pytest.fixture
def ws(tmp_path, outside):
    """A workspace: a.txt, src/main.py, docs/guide.md."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "docs" / "guide.md").write_text("# Guide\n")
    return root


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
    for name in (
        "OLLAMA_HOST",
        "OLLAMA_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CUSTOM_HEADERS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "no-anthropic-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))  # the user's own config
    monkeypatch.chdir(tmp_path)
    yield


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty HOME and XDG config folder, so the user's own config never leaks into a test."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    return folder
