"""Inference settings: which tiers run, in what order, and how each provider is reached.

Read from `.lackjail/config.toml` (`[inference]` and `[inference.providers.NAME]`).
Every key is checked: a typo or a bad value is a ConfigError that names the
key and the fix, so a misspelt timeout never silently becomes "wait forever".
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CONFIG_PATH = Path(".lackjail") / "config.toml"
BUILTIN_TIERS = ("templates", "rules")
PROVIDER_KINDS = ("ollama", "anthropic")
DEFAULT_ORDER = ("templates", "rules", "ollama", "anthropic")

# Per kind: key -> (check, example); the defaults live on ProviderConfig.
_COMMON = {
    "kind": (str, '"ollama"'),
    "model": (str, '"qwen2.5-coder:7b"'),
    "timeout": ("positive", "60"),
    "connect_timeout": ("positive", "2"),
    "max_tokens": ("count", "1024"),
}
PROVIDER_KEYS = {
    "ollama": {
        **_COMMON,
        "host": (str, '"http://127.0.0.1:11434"'),
        "temperature": ("number", "0.2"),
        "keep_alive": ("keep_alive", '"5m"'),
    },
    "anthropic": {
        **_COMMON,
        "base_url": (str, '"https://api.anthropic.com"'),
        "max_retries": ("count0", "1"),
    },
}
DEFAULT_MODELS = {"ollama": "qwen2.5-coder:7b", "anthropic": "claude-haiku-4-5"}
INFERENCE_KEYS = {
    "order": 'a list of tier names, e.g. ["templates", "rules", "ollama", "anthropic"]',
    "feedback_rounds": "how often a model sees the validator's errors before the next tier, e.g. 1",
    "providers": "a table of [inference.providers.NAME] tables",
}


class ConfigError(ValueError):
    """An inference setting that cannot be used; the message names the key and the fix."""


@dataclass(frozen=True)
class ProviderConfig:
    """One model tier: its name in `order`, the client it uses, and how to reach it."""

    name: str
    kind: str
    model: str
    temperature: float = 0.0
    timeout: float = 60.0
    connect_timeout: float = 2.0
    max_tokens: int = 1024
    host: str | None = None
    keep_alive: str | float | None = None
    base_url: str | None = None
    max_retries: int = 1


def _default_providers() -> dict:
    return {kind: ProviderConfig(kind, kind, DEFAULT_MODELS[kind]) for kind in PROVIDER_KINDS}


@dataclass(frozen=True)
class InferenceConfig:
    order: tuple[str, ...] = DEFAULT_ORDER
    feedback_rounds: int = 1
    providers: dict = field(
        default_factory=_default_providers
    )  # name -> ProviderConfig for each model tier

    @classmethod
    def from_dict(cls, data: dict, source: str = "config") -> InferenceConfig:
        """Build from the `[inference]` table (a plain dict); raise ConfigError on any bad key."""
        return _parse(data, source)


def load_config(root=None) -> InferenceConfig:
    """The `[inference]` settings of ROOT/.lackjail/config.toml, or the defaults when it is absent."""
    path = Path(root or ".") / CONFIG_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return _parse({}, str(path))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    inference = data.get("inference", {})
    if not isinstance(inference, dict):
        raise ConfigError(f"{path}: 'inference' must be a table: [inference]")
    return _parse(inference, str(path))


def _parse(data: dict, source: str) -> InferenceConfig:
    for key in data:
        if key not in INFERENCE_KEYS:
            known = ", ".join(INFERENCE_KEYS)
            raise ConfigError(f"{source}: unknown key 'inference.{key}'; known keys: {known}")
    tables = data.get("providers", {})
    if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
        raise ConfigError(
            f"{source}: 'inference.providers' must hold tables, e.g. [inference.providers.ollama]"
        )
    order = data.get("order", list(DEFAULT_ORDER))
    if not isinstance(order, list) or not order or not all(isinstance(t, str) for t in order):
        raise ConfigError(f"{source}: 'inference.order' must be {INFERENCE_KEYS['order']}")
    seen = set()
    for tier in order:
        if tier in seen:
            raise ConfigError(
                f"{source}: 'inference.order' names '{tier}' twice; list each tier once"
            )
        seen.add(tier)
        if tier not in BUILTIN_TIERS + PROVIDER_KINDS and tier not in tables:
            raise ConfigError(
                f"{source}: unknown tier '{tier}' in 'inference.order'; use templates, rules, ollama, "
                f'anthropic, or define [inference.providers.{tier}] with kind = "ollama" or "anthropic"'
            )
    rounds = data.get("feedback_rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 0 <= rounds <= 5:
        raise ConfigError(
            f"{source}: 'inference.feedback_rounds' must be an integer from 0 to 5, e.g. 1"
        )
    for name in tables:
        if name in BUILTIN_TIERS:
            raise ConfigError(
                f"{source}: '{name}' is a built-in tier and takes no [inference.providers.{name}] table"
            )
    providers = {}
    for tier in order:
        if tier not in BUILTIN_TIERS:
            providers[tier] = _provider(tier, tables.get(tier, {}), source)
    return InferenceConfig(order=tuple(order), feedback_rounds=rounds, providers=providers)


def _provider(name: str, table: dict, source: str) -> ProviderConfig:
    where = f"inference.providers.{name}"
    kind = table.get("kind", name)
    if kind not in PROVIDER_KINDS:
        raise ConfigError(
            f'{source}: \'{where}.kind\' must be "ollama" or "anthropic", not {kind!r}'
        )
    allowed = PROVIDER_KEYS[kind]
    values = {}
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(
                f"{source}: unknown key '{where}.{key}' for a {kind} provider; "
                f"known keys: {', '.join(allowed)}"
            )
        check, example = allowed[key]
        if not _fits(check, value):
            raise ConfigError(
                f"{source}: '{where}.{key}' must be {_describe(check)}, e.g. {key} = {example}"
            )
        values[key] = float(value) if check in ("number", "positive") else value
    values.pop("kind", None)
    values.setdefault("model", DEFAULT_MODELS[kind])
    return ProviderConfig(name=name, kind=kind, **values)


def _fits(check, value) -> bool:
    if isinstance(value, bool):
        return False
    if check is str:
        return isinstance(value, str) and bool(value.strip())
    if check in ("number", "positive"):
        ok = isinstance(value, (int, float)) and math.isfinite(value)
        return ok and (check == "number" or value > 0)
    if check in ("count", "count0"):
        return isinstance(value, int) and value >= (1 if check == "count" else 0)
    return isinstance(value, (str, int, float))  # keep_alive: "5m" or seconds


def _describe(check) -> str:
    return {
        str: "a non-empty string",
        "number": "a number",
        "positive": "a number of seconds > 0",
        "count": "an integer >= 1",
        "count0": "an integer >= 0",
        "keep_alive": 'a duration such as "5m" or seconds',
    }[check]
