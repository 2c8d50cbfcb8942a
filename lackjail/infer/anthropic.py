"""The anthropic tier: the Messages API through the official `anthropic` client.

The key comes only from `ANTHROPIC_API_KEY` (passed explicitly, so the client
looks for no other credentials); the base URL from the provider config (never
a workspace's, see config), else the client's own setting
(`ANTHROPIC_BASE_URL`). The key goes only over https, or plain http to this
machine. Failures become ProviderErrors.
"""

from __future__ import annotations

import os

from lackjail.infer.config import check_credential_endpoint
from lackjail.infer.errors import ProviderError, short


def unavailable(config) -> str | None:
    """Why this tier cannot answer, seen before the client's ~1 s import: no key."""
    return None if os.environ.get("ANTHROPIC_API_KEY") else "ANTHROPIC_API_KEY is not set"


def complete(config, system: str, messages: list) -> str:
    """The model's reply text to MESSAGES (user/assistant turns) under SYSTEM."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ProviderError("ANTHROPIC_API_KEY is not set", unavailable=True)
    try:
        import anthropic
    except ImportError:
        raise ProviderError(
            "the 'anthropic' package is not installed (pip install 'lackjail[llm]')",
            unavailable=True,
        ) from None
    client = anthropic.Anthropic(
        api_key=key,
        base_url=config.base_url,
        max_retries=config.max_retries,
        timeout=anthropic.Timeout(config.timeout, connect=config.connect_timeout),
    )
    where = str(client.base_url).rstrip("/")
    refused = check_credential_endpoint(where, "ANTHROPIC_API_KEY")
    if refused:
        raise ProviderError(refused, unavailable=True)
    try:
        reply = client.messages.create(
            model=config.model, max_tokens=config.max_tokens, system=system, messages=messages
        )
    except anthropic.APITimeoutError:
        raise ProviderError(f"{where} did not answer within {config.timeout:g}s") from None
    except anthropic.APIConnectionError:
        raise ProviderError(f"cannot reach {where}", unavailable=True) from None
    except anthropic.AuthenticationError:
        raise ProviderError(
            f"{where} refused the key in ANTHROPIC_API_KEY", unavailable=True
        ) from None
    except anthropic.APIStatusError as exc:
        raise ProviderError(f"{where} answered {exc.status_code}: {short(exc.message)}") from None
    except anthropic.APIError as exc:  # e.g. a body that is not a Messages response
        raise ProviderError(f"{where}: {short(exc)}") from None
    finally:
        client.close()
    return _text(reply, where)


def _text(reply, where: str) -> str:
    """The text blocks of a Messages reply; the client does not check a body's shape, so this
    does.
    """
    content = getattr(reply, "content", None)
    texts = (
        [getattr(b, "text", None) for b in content if getattr(b, "type", None) == "text"]
        if isinstance(content, list)
        else None
    )
    if texts is None or not all(isinstance(t, str) for t in texts):
        raise ProviderError(f"{where} sent a reply that is not a Messages response")
    return "".join(t for t in texts if isinstance(t, str))
