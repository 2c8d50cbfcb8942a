"""The ollama tier: a local model through the official `ollama` client.

The host comes from the provider config, else `OLLAMA_HOST`, else the
client's default. The client sends `OLLAMA_API_KEY` (when set) to that host,
so the key goes only over https, or plain http to this machine. A missing
server is a quick, noted skip: on this machine a refused connection is seen
before the client is imported; elsewhere a short connect timeout. Any failure
becomes a ProviderError, never an exception upward.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from lackjail.infer.config import check_credential_endpoint
from lackjail.infer.errors import ProviderError, short

DEFAULT_HOST = "http://127.0.0.1:11434"


def complete(config, system: str, messages: list) -> str:
    """The model's reply text to MESSAGES (user/assistant turns) under SYSTEM."""
    host = _host(config)
    if os.environ.get("OLLAMA_API_KEY"):
        refused = check_credential_endpoint(endpoint(host), "OLLAMA_API_KEY")
        if refused:
            raise ProviderError(refused, unavailable=True)
    try:
        import httpx
        import ollama
    except ImportError:
        raise ProviderError(
            "the 'ollama' package is not installed (pip install 'lackjail[llm]')", unavailable=True
        ) from None
    options = {"temperature": config.temperature, "num_predict": config.max_tokens}
    client = ollama.Client(
        host=host, timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout)
    )
    try:
        reply = client.chat(
            model=config.model,
            messages=[{"role": "system", "content": system}, *messages],
            options=options,
            keep_alive=config.keep_alive,
            stream=False,
        )
    except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout):
        raise ProviderError(f"no Ollama server answers at {host}", unavailable=True) from None
    except httpx.TimeoutException:
        raise ProviderError(f"{host} did not answer within {config.timeout:g}s") from None
    except ollama.ResponseError as exc:
        if exc.status_code == 404:
            raise ProviderError(
                f"model {config.model!r} is not available at {host} "
                f"(ollama pull {config.model}): {short(exc.error)}",
                unavailable=True,
            ) from None
        raise ProviderError(f"{host} answered {exc.status_code}: {short(exc.error)}") from None
    except httpx.HTTPError as exc:
        raise ProviderError(f"{host}: {short(exc)}") from None
    except (ValueError, TypeError):  # the client's parse of a body that is not a chat response
        raise ProviderError(f"{host} sent a reply that is not a chat response") from None
    finally:
        client.close()
    return reply.message.content or ""


def endpoint(host: str) -> str:
    """HOST as the client reads it, as a URL: no scheme is plain http, no host name this
    machine."""
    url = host if "://" in host else f"http://{host}"
    scheme, _, rest = url.partition("://")
    return f"{scheme}://127.0.0.1{rest}" if rest.startswith(":") or not rest else url


def _host(config) -> str:
    return config.host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST


def unavailable(config) -> str | None:
    """Why this tier cannot answer, seen without importing the client: nothing listens at a
    host on this machine (a remote host may be behind a proxy the client knows: only the client
    can tell)."""
    host = _host(config)
    if not _listening(host, config.connect_timeout):
        return f"no Ollama server answers at {host}"
    return None


def _listening(host: str, timeout: float) -> bool:
    parts = urlsplit(host if "://" in host else f"http://{host}")
    name = parts.hostname or "127.0.0.1"
    if name not in ("127.0.0.1", "::1", "localhost", "0.0.0.0"):
        return True
    try:
        port = parts.port or 11434
        socket.create_connection((name, port), timeout=timeout).close()
    except (OSError, ValueError):
        return False
    return True
