"""OLLAMA_API_KEY, which the ollama client sends to whatever host it is given, goes only over
https or to this machine: plain http to another host is refused before anything is sent."""

from types import SimpleNamespace

import httpx
import pytest

from lackjail.infer import ollama
from lackjail.infer.errors import ProviderError


def config(host):
    return SimpleNamespace(
        host=host, model="m", temperature=0.1, max_tokens=64, timeout=5.0,
        connect_timeout=1.0, keep_alive="1m",
    )  # fmt: skip


@pytest.fixture
def sent(monkeypatch):
    """Every request the client tries to send (none leaves this machine: each fails)."""
    tried = []

    def send(self, request, **kwargs):
        tried.append(request)
        raise httpx.ConnectError("not sent by this test", request=request)

    monkeypatch.setattr(httpx.Client, "send", send)
    return tried


@pytest.mark.parametrize("host", ["http://gpu.example:11434", "gpu.example", "10.1.2.3:11434"])
def test_the_key_is_never_sent_over_plain_http_to_another_host(monkeypatch, sent, host):
    monkeypatch.setenv("OLLAMA_API_KEY", "sk-secret")
    with pytest.raises(ProviderError, match="refusing to send OLLAMA_API_KEY") as caught:
        ollama.complete(config(host), "system", [{"role": "user", "content": "hi"}])
    assert caught.value.unavailable and "sk-secret" not in str(caught.value)
    assert sent == []


@pytest.mark.parametrize("host", ["http://127.0.0.1:9", ":9", "https://gpu.example"])
def test_https_or_this_machine_may_receive_it(monkeypatch, sent, host):
    monkeypatch.setenv("OLLAMA_API_KEY", "sk-secret")
    with pytest.raises(ProviderError, match="no Ollama server answers"):
        ollama.complete(config(host), "system", [{"role": "user", "content": "hi"}])
    assert [r.headers["authorization"] for r in sent] == ["Bearer sk-secret"]


def test_without_a_key_any_host_may_be_asked(monkeypatch, sent):
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="no Ollama server answers"):
        ollama.complete(config("http://gpu.example:11434"), "s", [{"role": "user", "content": "x"}])
    assert len(sent) == 1 and "authorization" not in sent[0].headers
