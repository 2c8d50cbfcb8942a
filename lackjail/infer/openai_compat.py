"""The openai tier: any server with OpenAI's chat completions API, through the `openai` client.

vLLM, LM Studio, llama.cpp's server and OpenAI itself speak it. The base URL
comes from the provider config (never a workspace's, see config), else the
client's own setting (`OPENAI_BASE_URL`, else OpenAI's). The key comes from
the environment variable the user's config names (`api_key_env`, by default
`OPENAI_API_KEY`), is looked for before the client is imported, and goes only
over https or plain http to this machine. Failures become ProviderErrors.
"""

from __future__ import annotations

import os

from lackjail.infer.client import ask
from lackjail.infer.errors import ProviderError, short


def unavailable(config) -> str | None:
    """Why this tier cannot answer, seen before the client is imported: no key."""
    env = config.api_key_env
    return None if os.environ.get(env) else f"{env} is not set (the key for {config.name})"


def complete(config, system: str, messages: list) -> str:
    """The model's reply text to MESSAGES (user/assistant turns) under SYSTEM."""
    env = config.api_key_env
    key = os.environ.get(env)
    if not key:
        raise ProviderError(unavailable(config) or f"{env} is not set", unavailable=True)
    reply, where = ask(
        "openai",
        "OpenAI",
        config,
        key,
        env,
        lambda client: client.chat.completions.create(
            model=config.model,
            messages=[{"role": "system", "content": system}, *messages],
            max_tokens=config.max_tokens,
            temperature=config.temperature,
        ),
        said=_said,
        missing_model=True,
    )
    return _text(reply, where)


def _said(exc) -> str:
    """The server's own message in an error reply (the client prefixes it with the code)."""
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    return short(message if isinstance(message, str) else exc.message)


def _text(reply, where: str) -> str:
    """The first choice's message text; the client does not check a body's shape, so this does."""
    choices = getattr(reply, "choices", None)
    first = choices[0] if isinstance(choices, list) and choices else None
    message = getattr(first, "message", None)
    content = getattr(message, "content", None)
    if message is None or not isinstance(content, (str, type(None))):
        raise ProviderError(f"{where} sent a reply that is not a chat completion")
    return content or ""
