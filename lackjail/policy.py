"""Policies: the limits, tool rules and isolation demands a run obeys.

A policy is a TOML file (a bundled `lackjail/policies/NAME.toml`, or any path). Every key is
checked: an unknown key or a bad value is a PolicyError that names the key
and says what would fit, so a typo never silently weakens a limit.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from lackjail.errors import InputError, unknown_key
from lackjail.lang.grammar import LANGUAGES

POLICY_DIR = Path(__file__).resolve().parent / "policies"  # package data: ships in the wheel
MAX_POLICY_BYTES = 1 << 20  # a policy file is read whole
ISOLATION_LEVELS = ("nsjail", "landlock", "seccomp")  # strongest first
ISOLATION_DEMANDS = (*ISOLATION_LEVELS, "any")  # what a policy may demand
MODES = ("fresh", "reuse")
PATH_RULE_KEYS = ("write_deny", "read_deny", "write_allow", "read_allow")


class PolicyError(InputError, ValueError):
    """A policy file or value that cannot be used; the message names the key."""


@dataclass(frozen=True)
class Limits:
    """Per-run limits, enforced in the jail (rlimits) and by the controller."""

    wall_s: float = 10.0
    cpu_s: int | float = 5  # seconds; a fraction is kept (0.5 s is not 0 s, which is no limit)
    memory_mb: int = 256
    output_bytes: int = 1 << 20
    value_bytes: int = 8 << 20
    tool_calls: int = 10_000
    program_bytes: int = 64 << 10
    read_bytes: int = 64 << 20
    write_bytes: int = 16 << 20


@dataclass(frozen=True)
class PoolSettings:
    """How many jails, how long each lives, and how runs queue for them."""

    workers: int = 0  # 0: one per CPU
    recycle_after: int = 1000
    mode: str = "fresh"
    queue: int = 256
    start_timeout_s: float = 10.0
    kill_grace_s: float = 0.5
    spares: int = 2  # children each jail keeps forked, warmed and confined ahead of runs
    max_sessions: int = 16  # sessions open at once per Jail (each is a jail of its own)
    session_idle_s: float = 600.0  # a session left idle this long is closed
    processes: int = 0  # controller processes sharing the jails (0: auto, lackjail.shards)

    @property
    def worker_count(self) -> int:
        return self.workers or (os.cpu_count() or 1)


@dataclass(frozen=True)
class ToolRules:
    """What the controller checks before it runs a tool for a program."""

    allow: tuple[str, ...] = ()  # empty: every tool of the kit
    deny: tuple[str, ...] = ()
    approval: tuple[str, ...] = ()  # tools that need the caller's approval
    timeouts: dict = field(default_factory=dict)  # tool name -> seconds
    workspace_writable: bool = True
    # protected paths (lackjail.workspace.protect): rules added to the defaults,
    # and default rules a policy lifts by naming them
    write_deny: tuple[str, ...] = ()
    read_deny: tuple[str, ...] = ()
    write_allow: tuple[str, ...] = ()
    read_allow: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    name: str = "default"
    # the weakest isolation level accepted: the strongest this host has runs, down to it
    # ("any": the seccomp fallback too)
    isolation: str = "nsjail"
    language: str = "lackpy"  # the level programs are checked at unless one is chosen
    languages: tuple[str, ...] = LANGUAGES  # the levels a caller or a workspace may choose
    limits: Limits = field(default_factory=Limits)
    pool: PoolSettings = field(default_factory=PoolSettings)
    tools: ToolRules = field(default_factory=ToolRules)
    source: str = ""  # the file it was read from ("" for a bundled policy or one built in code)

    def replace(self, **sections) -> Policy:
        return dataclasses.replace(self, **sections)

    def check_language(self, level: str, chosen_by: str = "") -> str:
        """LEVEL when this policy allows it; a PolicyError naming the allowed levels (and
        CHOSEN_BY, where the choice came from) otherwise: a choice never loosens the policy."""
        if level in self.languages:
            return level
        where = f" ({chosen_by})" if chosen_by else ""
        raise PolicyError(
            f"language level {level!r}{where} is not allowed by policy {self.name!r}; "
            f"it allows: {', '.join(self.languages)}"
        )


_SECTIONS = {"limits": Limits, "pool": PoolSettings, "tools": ToolRules}
_TOP = {"name": str, "isolation": str, "language": str, "languages": list}
FRACTIONAL = ("limits.cpu_s",)  # whole-number limits that may be a fraction too


def positive_number(value) -> bool:
    """A finite number > 0, not a bool (TOML's nan and inf are floats too; nan passes `<= 0`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value > 0


def _check_value(key: str, value, default):
    """Coerce VALUE to the type of DEFAULT or raise a PolicyError naming KEY."""
    if key in FRACTIONAL:
        if not positive_number(value):
            raise PolicyError(
                f"policy key '{key}' must be a positive number of seconds, not {value!r}"
            )
        return value
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise PolicyError(f"policy key '{key}' must be true or false, not {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise PolicyError(f"policy key '{key}' must be a whole number, not {value!r}")
        if value < 0:
            raise PolicyError(f"policy key '{key}' must be >= 0, not {value}")
        return value
    if isinstance(default, float):
        if not positive_number(value):
            raise PolicyError(
                f"policy key '{key}' must be a positive number of seconds, not {value!r}"
            )
        return float(value)
    if isinstance(default, tuple) and key.rpartition(".")[2] in PATH_RULE_KEYS:
        if not isinstance(value, list) or not all(
            isinstance(v, str) and v.strip("/") and "\x00" not in v for v in value
        ):
            raise PolicyError(
                f'policy key \'{key}\' must be a list of path globs, e.g. [".git", "secrets/**"]'
            )
        return tuple(value)
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PolicyError(
                f"policy key '{key}' must be a list of tool names, e.g. [\"write_file\"]"
            )
        return tuple(value)
    if isinstance(default, dict):
        if not isinstance(value, dict) or not all(positive_number(v) for v in value.values()):
            raise PolicyError(
                f"policy key '{key}' must map tool names to positive seconds, "
                "e.g. { find_files = 30 }"
            )
        return {k: float(v) for k, v in value.items()}
    if isinstance(default, str):
        if not isinstance(value, str):
            raise PolicyError(f"policy key '{key}' must be a string, not {value!r}")
        return value
    raise PolicyError(f"policy key '{key}' has an unsupported value {value!r}")


def _section(name: str, cls, data) -> object:
    if not isinstance(data, dict):
        raise PolicyError(f"policy key '{name}' must be a table ([{name}])")
    defaults = cls()
    known = sorted(f.name for f in dataclasses.fields(cls))
    problem = unknown_key(data, known, f"{name}.", what="policy key", among=f" in [{name}]")
    if problem:
        raise PolicyError(problem)
    return cls(
        **{key: _check_value(f"{name}.{key}", v, getattr(defaults, key)) for key, v in data.items()}
    )


def policy_from_dict(data: dict, name: str = "custom") -> Policy:
    """Build a Policy from parsed TOML, checking every key and value."""
    known = sorted([*_SECTIONS, *_TOP])
    problem = unknown_key(data, known, what="policy key", among=" at the top level")
    if problem:
        raise PolicyError(problem)
    values: dict = {"name": name}
    for key, value in data.items():
        if key in _SECTIONS:
            values[key] = _section(key, _SECTIONS[key], value)
        elif key == "languages":
            values[key] = _check_languages(value)
        else:
            values[key] = _check_value(key, value, "")
    if values.get("language", "lackpy") not in LANGUAGES:
        raise PolicyError(
            f"policy key 'language' must be one of {', '.join(LANGUAGES)}; "
            f"not {values['language']!r}"
        )
    allowed = values.get("languages", LANGUAGES)
    if values.get("language", "lackpy") not in allowed:
        raise PolicyError(
            f"policy key 'language' ({values.get('language', 'lackpy')!r}, the level used when "
            f"none is chosen) must be one of its 'languages': {', '.join(allowed)}"
        )
    if values.get("isolation", "nsjail") not in ISOLATION_DEMANDS:
        raise PolicyError(
            "policy key 'isolation' must be one of nsjail, landlock, seccomp, any; "
            f"not {values['isolation']!r}"
        )
    pool = values.get("pool")
    if pool is not None:
        _check_pool(pool)
    if pool is not None and pool.mode not in MODES:
        raise PolicyError(
            f"policy key 'pool.mode' must be one of {', '.join(MODES)}; not {pool.mode!r}"
        )
    tools = values.get("tools")
    if tools is not None:
        _check_lifted(tools)
    limits = values.get("limits")
    if limits is not None:
        for key in ("memory_mb", "cpu_s", "program_bytes"):
            if getattr(limits, key) == 0:
                raise PolicyError(f"policy key 'limits.{key}' must be > 0")
    return Policy(**values)


def _check_languages(value) -> tuple[str, ...]:
    """The policy's `languages`: known level names, at least one, in the order given."""
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v in LANGUAGES for v in value)
    ):
        example = ", ".join(f'"{v}"' for v in LANGUAGES)
        raise PolicyError(
            "policy key 'languages' must list the language levels callers may choose, among "
            f"{', '.join(LANGUAGES)}; e.g. languages = [{example}]"
        )
    return tuple(dict.fromkeys(value))


# Bounds a typo must not pass: each jail is a process tree with its own memory, and every
# spare is a forked child waiting, so a stray zero or three means a host full of processes.
MAX_WORKERS = 1024
MAX_SPARES = 16
MAX_SESSIONS = 1024


def _check_pool(pool: PoolSettings) -> None:
    if not 1 <= pool.spares <= MAX_SPARES:
        raise PolicyError(
            f"policy key 'pool.spares' must be between 1 and {MAX_SPARES} (children kept "
            f"ready per jail; 2 is plenty for back-to-back runs), not {pool.spares}"
        )
    if pool.workers > MAX_WORKERS:
        raise PolicyError(
            f"policy key 'pool.workers' must be at most {MAX_WORKERS} (0: one per CPU), "
            f"not {pool.workers}"
        )
    if pool.processes > MAX_WORKERS:
        raise PolicyError(
            f"policy key 'pool.processes' must be at most {MAX_WORKERS} (0: auto), "
            f"not {pool.processes}"
        )
    if not 1 <= pool.max_sessions <= MAX_SESSIONS:
        raise PolicyError(
            f"policy key 'pool.max_sessions' must be between 1 and {MAX_SESSIONS} (sessions "
            f"open at once per Jail, each a jail of its own), not {pool.max_sessions}"
        )
    if pool.recycle_after < 1:
        raise PolicyError(
            "policy key 'pool.recycle_after' must be >= 1 (runs a jail serves before it is "
            "replaced; in reuse mode, runs per child)"
        )


def _check_lifted(tools: ToolRules) -> None:
    """A rule a policy lifts must be one of the defaults, or (for writes) a hidden path the `.*`
    rule covers: a typo must not pass silently."""
    from lackjail.workspace.protect import DEFAULT_READ_DENY, DEFAULT_WRITE_DENY, hidden

    for key, defaults in (("write_allow", DEFAULT_WRITE_DENY), ("read_allow", DEFAULT_READ_DENY)):
        writes = key == "write_allow"
        unknown = [
            r for r in getattr(tools, key) if r not in defaults and not (writes and hidden(r))
        ]
        if unknown:
            also = " nor a hidden path (one with a segment starting with '.')" if writes else ""
            raise PolicyError(
                f"policy key 'tools.{key}' names {unknown[0]!r}, which is not a default rule"
                f"{also}; the default rules are: {', '.join(defaults)}"
            )


def is_policy_name(text: str) -> bool:
    """True when TEXT names a bundled policy rather than a file."""
    return not text.endswith(".toml") and os.sep not in text


def policy_path(spec: str | os.PathLike) -> Path:
    """The file of the policy SPEC: a bundled name's file in the package, else SPEC as a path."""
    text = str(spec)
    if not is_policy_name(text):
        return Path(text)
    path = POLICY_DIR / f"{text}.toml"
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in POLICY_DIR.glob("*.toml")))
        raise PolicyError(
            f"no policy named '{text}'; bundled policies: {names}; or pass a path to a .toml file"
        )
    return path


def load_policy(spec=None) -> Policy:
    """A Policy from a Policy, None (default), a bundled name, or a TOML path."""
    if isinstance(spec, Policy):
        return spec
    if spec is None:
        spec = "default"
    if isinstance(spec, dict):
        return policy_from_dict(spec)
    if not isinstance(spec, (str, os.PathLike)):
        raise PolicyError(f"a policy is a name, a path or a Policy, not {type(spec).__name__}")
    path = policy_path(spec)
    from lackjail.workspace.hostfs import explain, read_file

    try:  # a symlink only root or we could have made is followed; no FIFO, no device
        data = tomllib.loads(read_file(path, MAX_POLICY_BYTES, own_links=True).decode("utf-8"))
    except FileNotFoundError:
        raise PolicyError(f"policy file {path} does not exist") from None
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {explain(exc)}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"policy file {path} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise PolicyError(f"policy file {path} is nested too deeply to be a policy") from None
    policy = policy_from_dict(
        data, name=data.get("name", path.stem) if isinstance(data.get("name"), str) else path.stem
    )
    # a file of the caller's, which programs must not rewrite (see workspace.local_rules)
    bundled = os.path.dirname(os.path.abspath(path)) == str(POLICY_DIR)
    return policy if bundled else policy.replace(source=os.path.abspath(path))
