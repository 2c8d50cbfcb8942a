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

from fnmatch import fnmatchcase

from lackjail.errors import ToolCallError
from lackjail.workspace.paths import show

DEFAULT_WRITE_DENY = (
    # version control metadata (hooks, config that runs filters)
    ".git", ".hg", ".svn", ".bzr", ".jj", ".gitmodules",
    # CI and hook configuration
    ".github/workflows", ".github/actions", ".gitlab-ci.yml", ".circleci", ".travis.yml",
    ".buildkite", ".drone.yml", "azure-pipelines.yml", "Jenkinsfile",
    ".husky", ".githooks", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml",
    # environment loaders
    ".envrc", ".env", ".direnv",
    # editor task and launch files
    ".vscode/tasks.json", ".vscode/launch.json", ".vscode/settings.json", ".idea",
    # virtualenvs and interpreters' trees, start-up hooks
    ".venv", "venv", ".tox", ".nox", "site-packages", "dist-packages", "pyvenv.cfg",
    "*.pth", "sitecustomize.py", "usercustomize.py", "__pycache__", "*.pyc",
    "node_modules/.bin", ".python-version",
    # lackjail's own configuration, kits and templates
    ".lackjail",
)  # fmt: skip
DEFAULT_READ_DENY = (
    ".git/config", ".git-credentials", ".git/credentials", ".env*", ".netrc", "_netrc",
    ".npmrc", ".pypirc", ".yarnrc.yml", ".docker/config.json", ".kube/config",
    ".ssh", ".aws", ".gnupg", ".config/gcloud",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx",
)  # fmt: skip


def rule_matches(rule: str, rel: str) -> bool:
    """True when RULE (see the module docstring) covers the workspace-relative path REL."""
    anchored = rule.startswith("/")
    want = [s for s in rule.split("/") if s]
    parts = rel.split("/")
    starts = [0] if anchored else range(len(parts) - len(want) + 1)
    for start in starts:
        if len(parts) - start >= len(want) and _match_at(want, parts[start:]):
            return True
    return False


def _match_at(want: list[str], parts: list[str]) -> bool:
    if not want:
        return True  # the rule is used up: everything beneath is covered
    if want[0] == "**":
        return any(_match_at(want[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], want[0]) and _match_at(want[1:], parts[1:])


class Protection:
    """The write and read rules in force for one run."""

    def __init__(self, write_deny=(), read_deny=(), write_allow=(), read_allow=()):
        self.write = [r for r in DEFAULT_WRITE_DENY if r not in write_allow] + list(write_deny)
        self.read = [r for r in DEFAULT_READ_DENY if r not in read_allow] + list(read_deny)

    @classmethod
    def from_policy(cls, policy) -> Protection:
        rules = getattr(policy, "tools", None)
        return cls(
            *(getattr(rules, key, ()) for key in ("write_deny", "read_deny")),
            *(getattr(rules, key, ()) for key in ("write_allow", "read_allow")),
        )

    def check_write(self, rel: str, path) -> None:
        rule = next((r for r in self.write if rule_matches(r, rel)), None)
        if rule is not None:
            raise ToolCallError(
                f"writing {show(path)} is refused by rule {rule!r} (policy tools.write_deny): "
                "files there can run code later; a policy may lift it with tools.write_allow"
            )

    def check_read(self, rel: str, path) -> None:
        rule = next((r for r in self.read if rule_matches(r, rel)), None)
        if rule is not None:
            raise ToolCallError(
                f"reading {show(path)} is refused by rule {rule!r} (policy tools.read_deny): "
                "it may hold credentials; a policy may lift it with tools.read_allow"
            )


def runs_later(rel: str) -> bool:
    """True for a path a default write rule protects: a file written there (by a policy that
    lifted the rule) never keeps exec bits."""
    return any(rule_matches(r, rel) for r in DEFAULT_WRITE_DENY)
