"""What the openai and anthropic tiers share: both official clients take the same key, base
URL, retry and timeout settings and fail with the same kinds of errors; the key must not leave
for an endpoint that would see it in the clear (see config)."""

from __future__ import annotations

import importlib

from lackjail.infer.config import check_credential_endpoint
from lackjail.infer.errors import ProviderError, short


def ask(
    package: str,
    client_class: str,
    config,
    key: str,
    env: str,
    request,
    *,
    said=None,
    missing_model: bool = False,
) -> tuple:
    """(what REQUEST(client) returns, the base URL it asked), with PACKAGE's CLIENT_CLASS made
    for CONFIG with KEY (from ENV) and closed after. Every failure is a ProviderError; SAID(exc)
    is the server's message in an error reply (default: the client's), and with MISSING_MODEL
    a 404 means the model is not there (unavailable)."""
    try:
        module = importlib.import_module(package)
    except ImportError:
        raise ProviderError(
            f"the {package!r} package is not installed (pip install 'lackjail[llm]')",
            unavailable=True,
        ) from None
    client = getattr(module, client_class)(
        api_key=key,
        base_url=config.base_url,
        max_retries=config.max_retries,
        timeout=module.Timeout(config.timeout, connect=config.connect_timeout),
    )
    where = str(client.base_url).rstrip("/")
    try:
        refused = check_credential_endpoint(where, env)
        if refused:
            raise ProviderError(refused, unavailable=True)
        reply = request(client)
    except module.APITimeoutError:
        raise ProviderError(f"{where} did not answer within {config.timeout:g}s") from None
    except module.APIConnectionError:
        raise ProviderError(f"cannot reach {where}", unavailable=True) from None
    except module.AuthenticationError:
        raise ProviderError(f"{where} refused the key in {env}", unavailable=True) from None
    except module.APIStatusError as exc:
        message = said(exc) if said else short(exc.message)
        if missing_model and isinstance(exc, module.NotFoundError):
            raise ProviderError(
                f"{where} has no model {config.model!r}: {message}", unavailable=True
            ) from None
        raise ProviderError(f"{where} answered {exc.status_code}: {message}") from None
    except module.APIError as exc:  # e.g. a body that is not a reply of this API
        raise ProviderError(f"{where}: {short(exc)}") from None
    finally:
        client.close()
    return reply, where
