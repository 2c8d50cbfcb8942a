"""Fixtures for the generation tests: a scripted loopback LLM server, a clean environment, a kit."""

import os
import socket

import pytest
from infer_support import LLMServer, clear_provider_env


@pytest.fixture
def llm():
    with LLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No provider settings leak in from the host; each test works in its own project folder."""
    clear_provider_env(monkeypatch, tmp_path)
    yield


@pytest.fixture(scope="session")
def kit():
    from lackjail.kit import resolve_kit

    return resolve_kit("readonly", workspace=os.getcwd())


@pytest.fixture
def closed_port():
    """A loopback port nothing listens on."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port
