"""Inference settings: which tiers run, in what order, and how each provider is reached.

Read from the user's own `~/.config/lackjail/config.toml` (trusted) and the
workspace's `.lackjail/config.toml` (`[inference]` and
`[inference.providers.NAME]`), the workspace's keys winning. A workspace is
hostile: it may choose tiers, models and timeouts, never where a credential
is sent nor which one. Its endpoints (`host`, `base_url`) and credential
choices (`api_key_env`) are ignored with a note unless the user lists the
workspace under `[trust] workspaces` in their own config (or a caller passes
trusted=True); they otherwise come from the user's config or the environment
(`ANTHROPIC_BASE_URL`, `OLLAMA_HOST`, `OPENAI_BASE_URL`). Every key is
checked: a typo or a bad value is a ConfigError that names the key and the
fix, so a misspelt timeout never silently becomes "wait forever".
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from lackjail.errors import InputError, KitError, ToolCallError, unknown_key
from lackjail.userconfig import user_config_path
from lackjail.workspace.files import read_beneath
from lackjail.workspace.hostfs import Root, explain, read_file

CONFIG_PATH = Path(".lackjail") / "config.toml"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_CONFIG_BYTES = 1 << 20
# What only the user may set: where a credential goes, and which one (a workspace that named
# AWS_SECRET_ACCESS_KEY as an openai key would have it sent); the environment's say for each.
CREDENTIAL_KEYS = {
    "host": "OLLAMA_HOST",
    "base_url": "ANTHROPIC_BASE_URL or OPENAI_BASE_URL",
    "api_key_env": "the default, OPENAI_API_KEY",
}
BUILTIN_TIERS = ("templates", "rules")
PROVIDER_KINDS = ("ollama", "anthropic", "openai")
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
    "openai": {  # any server with OpenAI's chat completions API: vLLM, LM Studio, llama.cpp
        **_COMMON,
        "base_url": (str, '"http://127.0.0.1:8000/v1"'),
        "api_key_env": ("env", '"OPENAI_API_KEY"'),
        "temperature": ("number", "0.2"),
        "max_retries": ("count0", "1"),
    },
}
DEFAULT_MODELS = {
    "ollama": "qwen2.5-coder:7b",
    "anthropic": "claude-haiku-4-5",
    "openai": "gpt-4o-mini",
}
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
INFERENCE_KEYS = {
    "order": 'a list of tier names, e.g. ["templates", "rules", "ollama", "anthropic"]',
    "feedback_rounds": "how often a model sees the validator's errors before the next tier, e.g. 1",
    "provider_timeout": "seconds a model tier may take to answer, for every provider, e.g. 30",
    "providers": "a table of [inference.providers.NAME] tables",
}


class ConfigError(InputError, ValueError):
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
    api_key_env: str = DEFAULT_KEY_ENV  # openai: the environment variable holding the key


def _default_providers() -> dict:
    tiers = [t for t in DEFAULT_ORDER if t not in BUILTIN_TIERS]
    return {kind: ProviderConfig(kind, kind, DEFAULT_MODELS[kind]) for kind in tiers}


@dataclass(frozen=True)
class InferenceConfig:
    order: tuple[str, ...] = DEFAULT_ORDER
    feedback_rounds: int = 1
    providers: dict = field(
        default_factory=_default_providers
    )  # name -> ProviderConfig for each model tier
    notes: tuple = ()  # settings that were ignored, and why

    @classmethod
    def from_dict(cls, data: dict, source: str = "config") -> InferenceConfig:
        """Build from the `[inference]` table (a plain dict); raise ConfigError on any bad key."""
        return _parse(data, source)

    def with_provider_timeout(self, seconds: float) -> InferenceConfig:
        """This config with every model tier's timeout set to SECONDS (`--provider-timeout`)."""
        if not _fits("positive", seconds):
            raise ConfigError(f"a provider timeout is a number of seconds > 0, not {seconds!r}")
        providers = {
            name: replace(
                p, timeout=float(seconds), connect_timeout=min(p.connect_timeout, seconds)
            )
            for name, p in self.providers.items()
        }
        return replace(self, providers=providers)


def load_config(root=None, trusted: bool | None = None) -> InferenceConfig:
    """The `[inference]` settings for workspace ROOT (default: the current folder): the user's
    config, then the workspace's (see the module docstring); the defaults when neither exists."""
    user_path = user_config_path()  # its other tables belong to lackjail.userconfig
    user = _toml(_read_user(user_path), user_path)
    ws_path = Path(root or ".") / CONFIG_PATH
    # the folder opened once: its config is read, and its trust decided, from one descriptor
    opened = root if isinstance(root, Root) else _open(root)
    try:
        workspace = _toml(_read_workspace(opened), ws_path)
        if trusted is None:
            trusted = _is_trusted(user.get("trust", {}), opened, user_path)
    finally:
        if opened is not None and opened is not root:
            opened.close()
    user_inf = _table(user, "inference", user_path)
    ws_inf = _table(workspace, "inference", ws_path)
    notes = [] if trusted else _drop_credential_choices(ws_inf, ws_path, user_path)
    merged = {**user_inf, **{k: v for k, v in ws_inf.items() if k != "providers"}}
    providers = {name: dict(table) for name, table in user_inf.get("providers", {}).items()}
    for name, table in ws_inf.get("providers", {}).items():
        providers[name] = {**providers.get(name, {}), **table}
    if providers:
        merged["providers"] = providers
    source = str(ws_path) if workspace else str(user_path)
    return _parse(merged, source, tuple(notes))


def _read_user(path: Path) -> str | None:
    try:
        return read_file(path, MAX_CONFIG_BYTES, own_links=True).decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {explain(exc)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _open(root) -> Root | None:
    """The workspace folder ROOT (default: the current one) opened; None when it is none."""
    try:
        return Root(root)
    except KitError:
        return None


def _read_workspace(root: Root | None) -> str | None:
    """The workspace's config text, read as a tool would (confined, as the owner)."""
    if root is None:
        return None
    try:
        data = read_beneath(root, str(CONFIG_PATH), MAX_CONFIG_BYTES)
    except ValueError:  # KitError: no workspace folder there
        return None
    except ToolCallError as exc:
        if "no such file" in str(exc):
            return None
        raise ConfigError(f"cannot read {CONFIG_PATH}: {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{CONFIG_PATH} is not UTF-8 text") from None


def _toml(text: str | None, path: Path) -> dict:
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"{path} is nested too deeply to be a config") from None


def _table(data: dict, key: str, path: Path) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: '{key}' must be a table: [{key}]")
    return value


def _is_trusted(trust, root: Root | None, user_path: Path) -> bool:
    """True when the user's config lists this workspace under [trust] workspaces: a listed
    folder is the very folder ROOT holds open (by device and inode, never by a path that the
    workspace's owner could point elsewhere after its config was read)."""
    listed = trust.get("workspaces", []) if isinstance(trust, dict) else None
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise ConfigError(
            f"{user_path}: 'trust.workspaces' must be a list of folders, e.g. "
            'workspaces = ["/home/me/project"]'
        )
    if root is None:
        return False
    here = os.fstat(root.tree.fd)
    for path in listed:
        try:
            info = os.stat(os.path.expanduser(path))
        except (OSError, ValueError):
            continue
        if (info.st_dev, info.st_ino) == (here.st_dev, here.st_ino):
            return True
    return False


def _drop_credential_choices(inference: dict, ws_path: Path, user_path: Path) -> list[str]:
    """Remove every endpoint and credential choice the workspace sets; a note for each."""
    notes = []
    tables = inference.get("providers", {})
    if not isinstance(tables, dict):
        return notes
    for name, table in tables.items():
        if not isinstance(table, dict):
            continue
        for key, env in CREDENTIAL_KEYS.items():
            if key in table:
                del table[key]
                notes.append(
                    f"{ws_path}: ignored 'inference.providers.{name}.{key}': a workspace may not "
                    f"choose where a credential is sent, nor which; set it in {user_path} (else "
                    f"{env} holds), or list the workspace under [trust] workspaces there"
                )
    return notes


def check_credential_endpoint(url: str, credential: str) -> str | None:
    """Why URL must not receive CREDENTIAL (plain http to a host that is not loopback), or None."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return None
    host = (parts.hostname or "").lower()
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if parts.scheme == "http" and loopback:
        return None
    return (
        f"refusing to send {credential} to {url!r}: only https, or plain http to this machine "
        "(127.0.0.1, ::1, localhost), may receive it"
    )


def _parse(data: dict, source: str, notes: tuple = ()) -> InferenceConfig:
    problem = unknown_key(data, INFERENCE_KEYS, "inference.")
    if problem:
        raise ConfigError(f"{source}: {problem}")
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
                f"{source}: unknown tier '{tier}' in 'inference.order'; use templates, rules, "
                "ollama, anthropic, openai, or define "
                f'[inference.providers.{tier}] with kind = "ollama", "anthropic" or "openai"'
            )
    rounds = data.get("feedback_rounds", 1)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 0 <= rounds <= 5:
        raise ConfigError(
            f"{source}: 'inference.feedback_rounds' must be an integer from 0 to 5, e.g. 1"
        )
    timeout = data.get("provider_timeout")
    if timeout is not None and not _fits("positive", timeout):
        raise ConfigError(
            f"{source}: 'inference.provider_timeout' must be a number of seconds > 0, e.g. 30"
        )
    for name in tables:
        if name in BUILTIN_TIERS:
            raise ConfigError(
                f"{source}: '{name}' is a built-in tier and takes no "
                f"[inference.providers.{name}] table"
            )
    providers = {}
    for tier in order:
        if tier not in BUILTIN_TIERS:
            providers[tier] = _provider(tier, tables.get(tier, {}), source, timeout)
    return InferenceConfig(
        order=tuple(order), feedback_rounds=rounds, providers=providers, notes=notes
    )


def _provider(name: str, table: dict, source: str, timeout=None) -> ProviderConfig:
    """One provider's table checked; TIMEOUT (`provider_timeout`) unless it sets its own."""
    where = f"inference.providers.{name}"
    kind = table.get("kind", name)
    if kind not in PROVIDER_KINDS:
        raise ConfigError(
            f'{source}: \'{where}.kind\' must be "ollama", "anthropic" or "openai", not {kind!r}'
        )
    allowed = PROVIDER_KEYS[kind]
    problem = unknown_key(table, allowed, f"{where}.", among=f" for an {kind} provider")
    if problem:
        raise ConfigError(f"{source}: {problem}")
    values: dict = {}
    for key, value in table.items():
        check, example = allowed[key]
        if not _fits(check, value):
            raise ConfigError(
                f"{source}: '{where}.{key}' must be {_describe(check)}, e.g. {key} = {example}"
            )
        values[key] = float(value) if check in ("number", "positive") else value
    values.pop("kind", None)
    values.setdefault("model", DEFAULT_MODELS[kind])
    if timeout is not None:
        values.setdefault("timeout", float(timeout))
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
    if check == "env":
        return isinstance(value, str) and bool(ENV_NAME.fullmatch(value))
    return isinstance(value, (str, int, float))  # keep_alive: "5m" or seconds


def _describe(check) -> str:
    return {
        str: "a non-empty string",
        "number": "a number",
        "positive": "a number of seconds > 0",
        "count": "an integer >= 1",
        "count0": "an integer >= 0",
        "env": "the name of an environment variable",
        "keep_alive": 'a duration such as "5m" or seconds',
    }[check]
