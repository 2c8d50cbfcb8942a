"""Defaults for the CLI: the user's own config, and what a (hostile) workspace may add to it.

`~/.config/lackjail/config.toml` (or `$XDG_CONFIG_HOME/lackjail/config.toml`)
is the user's: its `[defaults]` table may set `kit`, `policy` and `language`, and its
`[server]` table `enabled` (false: `lackjail run` runs without the user's resident server).
A workspace's `.lackjail/config.toml` was possibly written by an attacker:
its `[defaults]` may only choose a `kit` and a `language` (among the levels
the policy allows), and its `[limits]` may only tighten the policy (a
repository must not loosen its own sandbox). The user's own choices, flags
first, then their config, win over the workspace's. The `[inference]` table
of either file belongs to
`lackjail.infer.config`; other tables are ignored here.
"""

from __future__ import annotations

import errno
import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from lackjail.errors import InputError, unknown_key

USER_KEYS = ("kit", "policy", "language")
WORKSPACE_KEYS = ("kit", "language")
WORKSPACE_CONFIG = os.path.join(".lackjail", "config.toml")
MAX_CONFIG_BYTES = 1 << 20
WORKSPACE_KIT = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_]+)*(,[A-Za-z0-9_-]+(\.[A-Za-z0-9_]+)*)*")


class ConfigError(InputError, ValueError):
    """A config file that cannot be used; the message names the file, the key and the fix."""


@dataclass
class Defaults:
    """What the configs chose; `limits` are upper bounds on the policy's limits."""

    kit: str | None = None
    policy: str | None = None
    language: str | None = None
    limits: dict = field(default_factory=dict)


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "lackjail" / "config.toml"


def user_defaults() -> Defaults:
    """The `[defaults]` of the user's own config (none when it does not exist)."""
    path = user_config_path()
    data = _parse(_read_user(path), path)
    _server_table(data, path)
    return Defaults(**_defaults_table(data, path, USER_KEYS))


def server_enabled() -> bool:
    """The `[server] enabled` of the user's own config (true when it does not say)."""
    path = user_config_path()
    return _server_table(_parse(_read_user(path), path), path)


def _server_table(data: dict, path: Path) -> bool:
    table = data.get("server", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: 'server' must be a table: [server]")
    problem = unknown_key(table, ["enabled"], "server.")
    if problem:
        raise ConfigError(f"{path}: {problem}")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{path}: 'server.enabled' must be true or false")
    return enabled


def workspace_defaults(root) -> Defaults:
    """The kit and the limit tightenings a workspace's `.lackjail/config.toml` asks for."""
    path = Path(root) / WORKSPACE_CONFIG
    data = _parse(_read_workspace(root, path), path)
    chosen = _defaults_table(data, path, WORKSPACE_KEYS)
    kit = chosen.get("kit")
    if kit is not None and (not WORKSPACE_KIT.fullmatch(kit) or kit.endswith(".kit")):
        raise ConfigError(
            f"{path}: 'defaults.kit' must name a kit or tools (letters, digits, '_', '-', '.', "
            "','), not a path"
        )
    language = chosen.get("language")
    if language is not None:
        from lackjail.lang import LANGUAGES

        if language not in LANGUAGES:
            raise ConfigError(
                f"{path}: 'defaults.language' must be one of {', '.join(LANGUAGES)}, "
                f"not {language!r}"
            )
    return Defaults(**chosen, limits=_limits_table(data, path))


def tighten(policy, bounds: dict, source: str):
    """POLICY with each limit in BOUNDS lowered to it; a bound above the policy's value is a
    ConfigError naming SOURCE (a flag or a workspace config can tighten, never loosen)."""
    from lackjail.policy import positive_number

    limits = policy.limits
    changes = {}
    for key, value in bounds.items():
        current = getattr(limits, key)
        if not positive_number(value):
            raise ConfigError(f"{source} asks for {key} = {value}; a limit is a positive number")
        if value > current:
            raise ConfigError(
                f"{source} asks for {key} = {value}, above policy '{policy.name}'s {current}; "
                f"it may only tighten the policy (use a value up to {current}, or another policy)"
            )
        if isinstance(current, int) and value != int(value):
            if key != "cpu_s":  # only CPU seconds may be a fraction
                raise ConfigError(f"{source} asks for {key} = {value}; use a whole number")
            changes[key] = float(value)
        else:
            changes[key] = type(current)(value)
    if not changes:
        return policy
    from dataclasses import replace

    return policy.replace(limits=replace(limits, **changes))


def _read_user(path: Path) -> bytes | None:
    """The user's own config (None when absent); FIFOs and devices are refused, never block."""
    from lackjail.workspace.hostfs import explain, read_file

    try:
        return read_file(path, MAX_CONFIG_BYTES, own_links=True)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES} bytes") from None
        raise ConfigError(f"cannot read {path}: {explain(exc)}") from None


def _read_workspace(root, path: Path) -> bytes | None:
    """The workspace's config (None when absent), read as a tool reads a workspace file: beneath
    the workspace with no symlink leading out (`.lackjail` may be one), as the owner."""
    from lackjail.errors import KitError, ToolCallError
    from lackjail.workspace.files import FileTooLarge, read_beneath

    try:
        return read_beneath(root, WORKSPACE_CONFIG, MAX_CONFIG_BYTES)
    except KitError as exc:  # no folder to read from
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except FileTooLarge:
        raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES} bytes") from None
    except ToolCallError as exc:
        if "no such file" in str(exc):
            return None
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _parse(raw: bytes | None, path: Path) -> dict:
    """The TOML in RAW ({} for no file); ConfigError naming PATH when it is not TOML."""
    if raw is None:
        return {}
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"{path} is nested too deeply to be a config") from None


def _defaults_table(data: dict, path: Path, allowed: tuple) -> dict:
    table = data.get("defaults", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: 'defaults' must be a table: [defaults]")
    out = {}
    for key, value in table.items():
        if key not in allowed:
            raise ConfigError(
                f"{path}: 'defaults.{key}' is not allowed here; allowed keys: {', '.join(allowed)}"
            )
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{path}: 'defaults.{key}' must be a non-empty string")
        out[key] = value
    return out


def _limits_table(data: dict, path: Path) -> dict:
    from lackjail.policy import Limits, positive_number

    table = data.get("limits", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: 'limits' must be a table: [limits]")
    problem = unknown_key(table, sorted(f.name for f in fields(Limits)), "limits.")
    if problem:
        raise ConfigError(f"{path}: {problem}")
    for key, value in table.items():
        if not positive_number(value):  # nan passed `> limit` and `<= 0` alike
            raise ConfigError(f"{path}: 'limits.{key}' must be a positive number")
    return dict(table)
