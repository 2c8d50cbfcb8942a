"""Protected paths: what tools may not write (places that run code later) or read (credentials).

A rule is a glob over path segments: `*`, `?` and `[...]` match within one
segment, `**` any number of them. A rule matches a path when its segments
match consecutive segments of the path anywhere in it (`.git` protects
`sub/.git/config` too) and covers everything beneath; a rule starting with
`/` matches at the workspace root only.

Writes are refused by class, not only by list: the rule `.*` covers every
hidden file and folder (any segment starting with `.`), where tools keep the
configuration that runs commands later (hooks, editors, agents, CI, shells).
The named rules below hold even where a policy lifts the class for a path,
and name the non-hidden files that run commands too. Three more rules are
found per workspace (see `local_rules`): lackjail's own install,
its user config and state, and the folder git's `core.hooksPath` names,
wherever they lie in the workspace. A policy lifts a default rule by naming
it in `tools.write_allow` / `tools.read_allow`; `tools.write_allow` may also
name a hidden path (a glob), which lifts the `.*` rule for that path only.
`tools.write_deny` and `tools.read_deny` add rules.

Credentials are refused by list and by class: well-known credential files,
and any file or folder whose name holds `credential`, `token` or `secret`
inside a hidden folder (tools' config homes), or a hidden file so named.
Ordinary sources (`src/token.py`) are not hidden and stay readable.
"""

from __future__ import annotations

import functools
import re
import threading

from lackjail.errors import ToolCallError
from lackjail.workspace.paths import show

HIDDEN = ".*"  # the class rule: a hidden file or folder, anywhere
INSTALL, CONFIG, HOOKS = "lackjail-install", "lackjail-config", "core.hooksPath"
POLICY_FILE, GIT_DIR = "policy-file", "git-dir"
LOCAL_RULES = (
    INSTALL,
    CONFIG,
    HOOKS,
    POLICY_FILE,
    GIT_DIR,
)  # found per workspace (see local_rules)
NAMED_WRITE_DENY = (
    # version control metadata (hooks, config that runs filters)
    ".git", ".hg", ".svn", ".bzr", ".jj", ".gitmodules",
    # CI and hook configuration
    ".github/workflows", ".github/actions", ".gitlab-ci.yml", ".circleci", ".travis.yml",
    ".buildkite", ".drone.yml", "azure-pipelines.yml", "Jenkinsfile", "bitbucket-pipelines.yml",
    ".gitea/workflows", ".gitea/actions", ".forgejo/workflows", ".forgejo/actions",
    ".woodpecker.yml", ".woodpecker.yaml", ".woodpecker", ".cirrus.yml", "appveyor.yml",
    "buildspec.yml", "cloudbuild.yaml", "cloudbuild.yml", "bitrise.yml", "codemagic.yaml",
    ".husky", ".githooks", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml",
    "lefthook.yml", "lefthook.yaml", "lefthook-local.yml", "lefthook-local.yaml",
    ".lefthook.yml", ".lefthook.yaml", ".lefthook-local.yml", ".lefthook-local.yaml",
    # environment loaders, and tool configs that name a program to run (yarnPath,
    # npm's node-options and script-shell, pnpm's hooks file, cargo's runner and
    # rustc-wrapper, mise's hooks and tasks)
    ".envrc", ".env", ".direnv", ".yarnrc.yml", ".yarnrc", ".npmrc", ".pnpmfile.cjs",
    ".pnpmfile.mjs", ".cargo/config.toml", ".cargo/config",
    ".mise.toml", ".mise.*.toml", "mise.toml", "mise.*.toml", "mise", ".mise", ".config/mise",
    # editors' and agents' task, launch, hook and MCP server files
    ".vscode/tasks.json", ".vscode/launch.json", ".vscode/settings.json", ".vscode/mcp.json",
    "*.code-workspace", ".idea", ".claude", ".mcp.json", ".cursor", ".devcontainer",
    ".devcontainer.json",
    # virtualenvs and interpreters' trees, start-up hooks
    ".venv", "venv", ".tox", ".nox", "site-packages", "dist-packages", "pyvenv.cfg",
    "*.pth", "sitecustomize.py", "usercustomize.py", "__pycache__", "*.pyc",
    "node_modules/.bin", ".python-version",
    # lackjail's own configuration, kits and templates (the workspace's, and a home's)
    ".lackjail", ".config/lackjail", ".local/state/lackjail",
    # a home folder's logins, shells, sessions and PATH (a workspace may be ~, or hold one)
    ".ssh", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
    ".zshenv", ".zprofile", ".zlogin", ".config/fish", ".xprofile", ".xinitrc", ".xsessionrc",
    ".pam_environment", ".config/autostart", ".config/systemd", ".gitconfig", ".config/git",
    ".local/bin",
)  # fmt: skip
DEFAULT_WRITE_DENY = (*NAMED_WRITE_DENY, HIDDEN, *LOCAL_RULES)
DEFAULT_READ_DENY = (
    ".git/config", ".git/modules/**/config", ".git-credentials", ".git/credentials", ".env*",
    ".netrc", "_netrc", ".npmrc", ".pypirc", ".yarnrc.yml", ".yarnrc", ".docker/config.json",
    ".kube/config", ".ssh", ".aws", ".gnupg", ".config/gcloud", ".config/gh", ".config/hub",
    ".cargo/credentials.toml", ".cargo/credentials", ".m2/settings.xml",
    ".m2/settings-security.xml", ".gradle/gradle.properties", ".pgpass", ".my.cnf", ".s3cfg",
    ".boto", ".azure", ".terraform.d/credentials.tfrc.json", ".terraformrc", ".vault-token",
    ".password-store", ".local/share/keyrings", ".config/rclone",
    "lackjail/mcp/token",  # the bearer token of `lackjail serve --http`, wherever the state is
    # the class: credential-like names in tools' hidden config folders, and hidden files so named
    ".*/**/*[Cc]redential*", ".*/**/*[Tt]oken*", ".*/**/*[Ss]ecret*",
    ".*[Cc]redential*", ".*[Tt]oken*", ".*[Ss]ecret*",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx",
)  # fmt: skip
WHY_WRITE = {
    HIDDEN: "hidden files and folders hold tools' configuration, which can run code later",
    INSTALL: "lackjail's own package or environment lies here: the next lackjail command runs it",
    CONFIG: "lackjail's own user configuration, state or cache lies here: later runs obey it",
    HOOKS: "git's core.hooksPath names this folder: git runs its files later",
    POLICY_FILE: "it is the policy file this run obeys: later runs would obey what was written",
    GIT_DIR: "a git repository's own folder (a bare one needs no dot): git runs what its config "
    "and hooks name",
}


def rule_matches(rule: str, rel: str) -> bool:
    """True when RULE (see the module docstring) covers the workspace-relative path REL."""
    return _rule_regex(rule).match(rel) is not None


@functools.lru_cache(maxsize=1024)
def _rule_regex(rule: str) -> re.Pattern:
    lead = "" if rule.startswith("/") else "(?:.*/)?"
    return re.compile(f"{lead}{_rule_body(rule)}(?:/.*)?\\Z", re.DOTALL)


def _rule_body(rule: str) -> str:
    """RULE's regex without its lead (`(?:.*/)?` unless anchored) and its tail."""
    segments = [seg for seg in rule.split("/") if seg]
    body = ""
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":  # any number of segments, none included
            body += ".*" if last else "(?:[^/]*/)*"
        else:
            body += _segment_regex(seg) + ("" if last else "/")
    return body


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


@functools.lru_cache(maxsize=64)
def _rules(write_deny: tuple, read_deny: tuple, write_allow: tuple, read_allow: tuple) -> tuple:
    """The write and read rules in force, the read rules' combined regex, and the write rules
    lifted from the hidden class: once per set of policy rules, not once per run's Protection.
    The write rules' regex (~2.5 ms to compile) waits for the first write checked: a command
    that only reads its configs never needs it."""
    write = tuple(r for r in NAMED_WRITE_DENY if r not in write_allow) + write_deny
    read = tuple(r for r in DEFAULT_READ_DENY if r not in read_allow) + read_deny
    # a hidden path or named rule lifted also lifts the class rule where it matches
    lifted = tuple(r for r in write_allow if r not in (HIDDEN, *LOCAL_RULES))
    return write, read, _combined(read), lifted


def _first(rules: tuple, combined: re.Pattern | None, rel: str) -> str | None:
    """The first of RULES covering REL (None, after one regex match, in the common case)."""
    if combined is None or not combined.match(rel):
        return None
    return next(r for r in rules if rule_matches(r, rel))


class Protection:
    """The write and read rules in force for one run (`bound` to a workspace for its own rules)."""

    def __init__(self, write_deny=(), read_deny=(), write_allow=(), read_allow=(), policy_file=""):
        self.write_allow = tuple(write_allow)
        self.write, self.read, self._any_read, self._lifted_hidden = _rules(
            tuple(write_deny), tuple(read_deny), self.write_allow, tuple(read_allow)
        )
        self._any_write: re.Pattern | None = None  # compiled on the first write checked
        self._write_compiled = False
        self.policy_file = policy_file
        self._find = None
        self._git_dir = None  # rel -> whether it lies in a git repository's own folder
        self._local: list | None = None  # (rule name, anchored glob) of the workspace, lazily
        self._finding = threading.Lock()

    @classmethod
    def from_policy(cls, policy) -> Protection:
        rules = getattr(policy, "tools", None)
        return cls(
            write_deny=getattr(rules, "write_deny", ()),
            read_deny=getattr(rules, "read_deny", ()),
            write_allow=getattr(rules, "write_allow", ()),
            read_allow=getattr(rules, "read_allow", ()),
            policy_file=getattr(policy, "source", ""),
        )

    def bound(self, find, git_dir=None) -> Protection:
        """These rules for one workspace: FIND(policy_file) returns its own rules (lackjail's
        install and config, core.hooksPath, the policy's file; see `local_rules`), called on
        the first write checked; GIT_DIR(rel) says whether REL lies in a git repository's own
        folder, looked at for each write."""
        self._find, self._local, self._git_dir = find, None, git_dir
        return self

    def check_write(self, rel: str, path) -> None:
        rule = self.write_rule(rel)
        if rule is not None:
            why = WHY_WRITE.get(rule, "files there can run code later")
            lift = _hidden_part(rel) if rule == HIDDEN else rule
            _refuse(rule, "writing", path, "write", why, lift)

    def check_read(self, rel: str, path) -> None:
        rule = _first(self.read, self._any_read, rel)
        if rule is not None:
            _refuse(rule, "reading", path, "read", "it may hold credentials", rule)

    def write_rule(self, rel: str) -> str | None:
        """The name of the first rule refusing a write to REL, or None."""
        if not self._write_compiled:  # cached per set of rules
            self._any_write, self._write_compiled = _combined(self.write), True
        rule = _first(self.write, self._any_write, rel)
        if rule is not None:
            return rule
        for name, glob in self._local_rules():
            if name not in self.write_allow and rule_matches(glob, rel):
                return name
        if GIT_DIR not in self.write_allow and self._git_dir is not None and self._git_dir(rel):
            return GIT_DIR
        if (
            HIDDEN not in self.write_allow
            and hidden(rel)
            and not any(rule_matches(r, rel) for r in self._lifted_hidden)
        ):
            return HIDDEN
        return None

    def runs_later(self, rel: str) -> bool:
        """True for a path a default write rule covers, lifted or not: a file written there never
        keeps exec bits."""
        named = _combined(NAMED_WRITE_DENY)
        return (
            hidden(rel)
            or (named is not None and named.match(rel) is not None)
            or any(rule_matches(glob, rel) for _, glob in self._local_rules())
            or (self._git_dir is not None and self._git_dir(rel))
        )

    def _local_rules(self) -> list:
        if self._find is None:
            return []
        with self._finding:
            if self._local is None:
                self._local = self._find(self.policy_file)
            return self._local


def hidden(rel: str) -> bool:
    """True when a segment of REL starts with '.' (the `.*` rule)."""
    return rel.startswith(".") or "/." in rel


def _hidden_part(rel: str) -> str:
    """What to name to lift the `.*` rule for REL: REL itself, or when it is long, its path up
    to its first hidden segment."""
    if len(rel) <= 120:
        return rel
    parts = rel.split("/")
    first = next(i for i, part in enumerate(parts) if part.startswith("."))
    return "/".join(parts[: first + 1])[:200]


def _refuse(rule: str, doing: str, path, kind: str, why: str, lift: str) -> None:
    """Refuse the access RULE covers, naming the rule, the policy key that set it
    (tools.KIND_deny) and how to lift it (tools.KIND_allow naming LIFT; a rule the policy
    added itself is removed from its tools.KIND_deny instead)."""
    if rule in DEFAULT_WRITE_DENY or rule in DEFAULT_READ_DENY:
        how = f"a policy may lift it with tools.{kind}_allow = [{_toml(lift)}]"
    else:
        how = f"the policy added it: remove it from tools.{kind}_deny to lift it"
    raise ToolCallError(
        f"{doing} {show(path)} is refused by rule {rule!r} (policy tools.{kind}_deny): {why}; {how}"
    )


def _toml(text: str) -> str:
    """TEXT as a TOML basic string, for a message to paste into a policy."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'
