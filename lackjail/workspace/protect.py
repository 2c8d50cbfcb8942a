"""Protected paths: what tools may not write (places that run code later) or read (credentials).

A rule is a glob over path segments: `*`, `?` and `[...]` match within one
segment, `**` any number of them. A rule matches a path when its segments
match consecutive segments of the path anywhere in it (`.git` protects
`sub/.git/config` too) and covers everything beneath; a rule starting with
`/` matches at the workspace root only. The defaults hold unless a policy
names a rule in `tools.write_allow` / `tools.read_allow`; `tools.write_deny`
and `tools.read_deny` add rules.
"""

from __future__ import annotations

import functools
import re

from lackjail.errors import ToolCallError
from lackjail.workspace.paths import show

DEFAULT_WRITE_DENY = (
    # version control metadata (hooks, config that runs filters)
    ".git", ".hg", ".svn", ".bzr", ".jj", ".gitmodules",
    # CI and hook configuration
    ".github/workflows", ".github/actions", ".gitlab-ci.yml", ".circleci", ".travis.yml",
    ".buildkite", ".drone.yml", "azure-pipelines.yml", "Jenkinsfile",
    ".husky", ".githooks", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml",
    # environment loaders, and tool configs that name a program to run (yarnPath,
    # npm's node-options and script-shell, cargo's runner and rustc-wrapper, mise's hooks)
    ".envrc", ".env", ".direnv", ".yarnrc.yml", ".npmrc", ".cargo/config.toml", ".cargo/config",
    ".mise.toml", "mise.toml", ".config/mise",
    # editor task and launch files
    ".vscode/tasks.json", ".vscode/launch.json", ".vscode/settings.json", ".idea",
    # virtualenvs and interpreters' trees, start-up hooks
    ".venv", "venv", ".tox", ".nox", "site-packages", "dist-packages", "pyvenv.cfg",
    "*.pth", "sitecustomize.py", "usercustomize.py", "__pycache__", "*.pyc",
    "node_modules/.bin", ".python-version",
    # lackjail's own configuration, kits and templates
    ".lackjail",
    # a home folder's logins, shells, sessions and PATH (a workspace may be ~, or hold one)
    ".ssh", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
    ".zshenv", ".zprofile", ".zlogin", ".config/fish", ".xprofile", ".xinitrc", ".xsessionrc",
    ".pam_environment", ".config/autostart", ".config/systemd", ".gitconfig", ".config/git",
    ".local/bin",
)  # fmt: skip
DEFAULT_READ_DENY = (
    ".git/config", ".git-credentials", ".git/credentials", ".env*", ".netrc", "_netrc",
    ".npmrc", ".pypirc", ".yarnrc.yml", ".docker/config.json", ".kube/config",
    ".ssh", ".aws", ".gnupg", ".config/gcloud",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx",
)  # fmt: skip


def rule_matches(rule: str, rel: str) -> bool:
    """True when RULE (see the module docstring) covers the workspace-relative path REL."""
    return _rule_regex(rule).match(rel) is not None


@functools.lru_cache(maxsize=1024)
def _rule_regex(rule: str) -> re.Pattern:
    body = "/".join(".*" if seg == "**" else _segment_regex(seg) for seg in rule.split("/") if seg)
    lead = "" if rule.startswith("/") else "(?:.*/)?"
    return re.compile(f"{lead}{body}(?:/.*)?\\Z", re.DOTALL)


def _rule_body(rule: str) -> str:
    """RULE's regex without its lead (`(?:.*/)?` unless anchored) and its tail."""
    pattern = _rule_regex(rule).pattern
    return pattern[(0 if rule.startswith("/") else len("(?:.*/)?")) : -len("(?:/.*)?\\Z")]


def _segment_regex(seg: str) -> str:
    """A glob segment as a regex that never crosses '/'."""
    out, i = [], 0
    while i < len(seg):
        char = seg[i]
        end = seg.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif end > 0:
            inner = seg[i + 1 : end]
            negate = inner[:1] in ("!", "^")
            inner = re.escape(inner[1:] if negate else inner).replace("\\-", "-")
            out.append(f"[{'^/' if negate else ''}{inner}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=64)
def _combined(rules: tuple) -> re.Pattern | None:
    """One regex matching any of RULES: the common case (no rule applies) costs one match."""
    if not rules:
        return None
    # the rules' bodies under one shared lead and tail: compiling one alternative per rule, each
    # with its own `(?:.*/)?`, took ~10 ms (every CLI command reads its config through this)
    floating = "|".join(_rule_body(r) for r in rules if not r.startswith("/"))
    anchored = "|".join(_rule_body(r) for r in rules if r.startswith("/"))
    heads = [f"(?:.*/)?(?:{floating})" if floating else "", f"(?:{anchored})" if anchored else ""]
    return re.compile(f"(?:{'|'.join(h for h in heads if h)})(?:/.*)?\\Z", re.DOTALL)


def _first(rules: list, combined: re.Pattern | None, rel: str) -> str | None:
    """The first of RULES covering REL (None, after one regex match, in the common case)."""
    if combined is None or not combined.match(rel):
        return None
    return next(r for r in rules if rule_matches(r, rel))


class Protection:
    """The write and read rules in force for one run."""

    def __init__(self, write_deny=(), read_deny=(), write_allow=(), read_allow=()):
        self.write = [r for r in DEFAULT_WRITE_DENY if r not in write_allow] + list(write_deny)
        self.read = [r for r in DEFAULT_READ_DENY if r not in read_allow] + list(read_deny)
        self._any_write = _combined(tuple(self.write))
        self._any_read = _combined(tuple(self.read))

    @classmethod
    def from_policy(cls, policy) -> Protection:
        rules = getattr(policy, "tools", None)
        return cls(
            *(getattr(rules, key, ()) for key in ("write_deny", "read_deny")),
            *(getattr(rules, key, ()) for key in ("write_allow", "read_allow")),
        )

    def check_write(self, rel: str, path) -> None:
        rule = _first(self.write, self._any_write, rel)
        _refuse(rule, "writing", path, "write", "files there can run code later")

    def check_read(self, rel: str, path) -> None:
        rule = _first(self.read, self._any_read, rel)
        _refuse(rule, "reading", path, "read", "it may hold credentials")


def _refuse(rule: str | None, doing: str, path, kind: str, why: str) -> None:
    """Refuse the access when a RULE covers PATH, naming the rule, the policy key that set it
    (tools.KIND_deny) and the one that lifts it (tools.KIND_allow)."""
    if rule is not None:
        raise ToolCallError(
            f"{doing} {show(path)} is refused by rule {rule!r} (policy tools.{kind}_deny): "
            f"{why}; a policy may lift it with tools.{kind}_allow"
        )


def runs_later(rel: str) -> bool:
    """True for a path a default write rule protects: a file written there (by a policy that
    lifted the rule) never keeps exec bits."""
    rules = _combined(DEFAULT_WRITE_DENY)
    return rules is not None and rules.match(rel) is not None
