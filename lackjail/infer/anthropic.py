"""The anthropic tier: the Messages API through the official `anthropic` client.

The key comes only from `ANTHROPIC_API_KEY` (passed explicitly, so the client
looks for no other credentials); the base URL from the provider config (never
a workspace's, see config), else the client's own setting
(`ANTHROPIC_BASE_URL`). The key goes only over https, or plain http to this
machine. Failures become ProviderErrors.
"""

from __future__ import annotations

import os

from lackjail.infer.client import ask
from lackjail.infer.errors import ProviderError


def unavailable(config) -> str | None:
    """Why this tier cannot answer, seen before the client's ~1 s import: no key."""
    return None if os.environ.get("ANTHROPIC_API_KEY") else "ANTHROPIC_API_KEY is not set"


def complete(config, system: str, messages: list) -> str:
    """The model's reply text to MESSAGES (user/assistant turns) under SYSTEM."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ProviderError("ANTHROPIC_API_KEY is not set", unavailable=True)
    reply, where = ask(
        "anthropic",
        "Anthropic",
        config,
        key,
        "ANTHROPIC_API_KEY",
        lambda client: client.messages.create(
            model=config.model, max_tokens=config.max_tokens, system=system, messages=messages
        ),
    )
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
