"""Protected paths by rule, not by list: hidden files and folders, lackjail's own install and
config wherever they lie, the folder git's core.hooksPath names, and the credential class."""

import os
import pathlib
import pwd
import shutil
import stat
import tempfile

import pytest
from host_support import ordinary_user, session

from lackjail.pool import early
from lackjail.server import place
from lackjail.workspace import local_rules
from lackjail.workspace.local_rules import hooks_path

pytestmark = pytest.mark.usefixtures("private_state")
CHECKOUT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    return root


def refused(ws, path, **rules):
    """The error a program's write of PATH gets (None: written, and committed)."""
    s = session(ws, **rules)
    out = s.call("write_file", [path, "malicious\n"], {})
    s.commit()
    kept = (ws / path).exists() and "malicious" in (ws / path).read_text()
    assert kept == out.ok
    return out.error


@pytest.mark.parametrize(
    "path", [".prettierrc", ".foo/bar.json", "sub/.cache/x", ".github/ISSUE_TEMPLATE/bug.md"]
)
def test_any_hidden_file_or_folder_is_refused_and_the_message_says_how_to_lift_it(ws, path):
    error = refused(ws, path)
    assert error and "rule '.*'" in error and "hidden files and folders" in error
    assert f'tools.write_allow = ["{path}"]' in error


# the files of the red-team's list that run commands later: hidden ones by a named rule too,
# so lifting a whole folder or the class leaves them protected
RUN_LATER = [
    (".claude/settings.json", ".claude"),
    (".mcp.json", ".mcp.json"),
    (".vscode/mcp.json", ".vscode/mcp.json"),
    (".cursor/mcp.json", ".cursor"),
    (".devcontainer/devcontainer.json", ".devcontainer"),
    (".yarnrc", ".yarnrc"),
    (".pnpmfile.cjs", ".pnpmfile.cjs"),
    ("lefthook.yml", "lefthook.yml"),
    ("lefthook-local.yaml", "lefthook-local.yaml"),
    (".gitea/workflows/ci.yml", ".gitea/workflows"),
    (".forgejo/workflows/ci.yml", ".forgejo/workflows"),
    ("bitbucket-pipelines.yml", "bitbucket-pipelines.yml"),
    (".woodpecker.yml", ".woodpecker.yml"),
    ("mise.local.toml", "mise.*.toml"),
    (".mise/tasks/build", ".mise"),
    ("project.code-workspace", "*.code-workspace"),
    ("home/.config/lackjail/config.toml", ".config/lackjail"),
]


@pytest.mark.parametrize("path, rule", RUN_LATER)
def test_files_that_run_commands_later_are_refused_by_name(ws, path, rule):
    error = refused(ws, path, write_allow=(".*",))  # the class lifted: the named rule holds
    assert error and f"rule {rule!r}" in error


def test_a_hidden_path_is_lifted_by_name_and_the_named_rules_beneath_it_hold(ws):
    s = session(ws, write_allow=(".prettierrc", ".vscode"))
    assert s.call("write_file", [".prettierrc", "{}\n"], {}).ok
    assert s.call("write_file", [".vscode/extensions.json", "{}\n"], {}).ok
    assert (
        "rule '.vscode/tasks.json'" in s.call("write_file", [".vscode/tasks.json", "x"], {}).error
    )
    assert "rule '.*'" in s.call("write_file", [".eslintrc", "x"], {}).error
    assert sorted(s.commit()) == [".prettierrc", ".vscode/extensions.json"]


def test_the_user_config_is_protected_wherever_it_resolves(ws, monkeypatch):
    """A config home that is not hidden (XDG_CONFIG_HOME in the workspace) is protected too,
    and its state folder (commit journals)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(ws / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(ws / "state"))
    for path in ("cfg/lackjail/config.toml", "state/lackjail/journal/x.json"):
        error = refused(ws, path)
        assert error and "rule 'lackjail-config'" in error, error
        assert 'tools.write_allow = ["lackjail-config"]' in error
    assert refused(ws, "cfg/other/config.toml") is None


def test_the_cache_folder_is_protected_wherever_it_resolves(ws, monkeypatch):
    """A program must not write the plan the next `lackjail run` starts before checking it (an
    nsjail binary and configuration: a command on the host), nor the kept seccomp filter or
    library mounts, when the cache folder lies in the workspace and is not hidden."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(ws / "cache"))
    for path in (
        f"cache/lackjail/{early.PLAN_FILE}",
        f"cache/lackjail/child-filter-{early.INSTALL}.json",
        "cache/lackjail/new-folder/x",
    ):
        error = refused(ws, path)
        assert error and "rule 'lackjail-config'" in error, error
    assert refused(ws, "cache/other/x.json") is None


def test_the_server_folder_is_protected_wherever_it_resolves(ws, monkeypatch):
    """A program must not plant a socket, a lock or a symlink where the next `lackjail run`
    looks for the user's server, when $XDG_RUNTIME_DIR lies in the workspace (and is not
    hidden), nor in the cache folder's `server` when there is no usable runtime folder."""
    runtime = ws / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("XDG_CACHE_HOME", str(ws / "elsewhere"))
    for path in ("run/lackjail/server-x.sock", f"run/lackjail/{place.LOCK}"):
        error = refused(ws, path)
        assert error and "rule 'lackjail-config'" in error, error
    assert refused(ws, "run/other.txt") is None
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(ws / "cache"))
    error = refused(ws, f"cache/lackjail/server/{place.SOCKET}")
    assert error and "rule 'lackjail-config'" in error, error


def test_a_config_home_reached_through_a_symlink_is_found_by_its_folder(ws, tmp_path, monkeypatch):
    (ws / "real").mkdir()
    os.symlink(ws / "real", tmp_path / "elsewhere")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))
    error = refused(ws, "real/lackjail/config.toml")
    assert error and "rule 'lackjail-config'" in error


def test_an_editable_install_in_the_workspace_is_refused():
    """The README's tour uses the checkout as the workspace: a program must not edit the
    lackjail package the next command imports (nothing is written: the call is refused)."""
    s = session(CHECKOUT)
    out = s.call("edit_file", ["lackjail/api.py", "Jail", "Jial"], {})
    assert not out.ok and "rule 'lackjail-install'" in out.error
    assert "lackjail's own package" in out.error
    assert s.commit() == []


@pytest.mark.parametrize(
    "config",
    [
        "[core]\n\thooksPath = scripts/hooks\n",
        '[CORE]\n  HooksPath = "scripts/hooks" # managed by lefthook\n',
        "[core] hookspath = ./scripts//hooks\n",
        "[core]\n\thooksPath = other\n[core]\n\thooksPath = scripts/hooks\n",
    ],
)
def test_the_folder_core_hooks_path_names_is_refused(ws, config):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text(config)
    error = refused(ws, "scripts/hooks/pre-commit")
    assert error and "rule 'core.hooksPath'" in error and "git runs its files" in error
    assert refused(ws, "scripts/build.sh") is None


def test_an_absolute_hooks_path_into_the_workspace_and_one_at_its_root(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text(f"[core]\n\thooksPath = {ws}/tools/hooks\n")
    assert "core.hooksPath" in refused(ws, "tools/hooks/post-checkout")
    (ws / ".git" / "config").write_text("[core]\n\thooksPath = .\n")
    assert "core.hooksPath" in refused(ws, "pre-push")
    assert refused(ws, "notes.txt") is None


def test_a_lifted_hooks_rule_keeps_no_exec_bits(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n\thooksPath = hooks\n")
    (ws / "hooks").mkdir()
    (ws / "hooks" / "pre-commit").write_text("#!/bin/sh\ntrue\n")
    os.chmod(ws / "hooks" / "pre-commit", 0o755)
    s = session(ws, write_allow=("core.hooksPath",))
    assert s.call("edit_file", ["hooks/pre-commit", "true", "make"], {}).ok
    assert s.commit() == ["hooks/pre-commit"]
    assert stat.S_IMODE(os.stat(ws / "hooks" / "pre-commit").st_mode) & 0o111 == 0


def test_a_workspace_inside_a_checkout_keeps_the_checkout_s_hooks_folder(tmp_path):
    """The workspace is a folder of a checkout whose .git/config names a folder in it: git runs
    those files on the next commit, so they are refused as the workspace's own hooks are."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[core]\n\thooksPath = src/hooks\n")
    ws = repo / "src"
    (ws / "hooks").mkdir(parents=True)
    error = refused(ws, "hooks/pre-commit")
    assert error and "rule 'core.hooksPath'" in error
    assert refused(ws, "notes.txt") is None


@pytest.mark.parametrize("config", [".gitconfig", ".config/git/config"])
def test_the_owner_s_global_hooks_folder_in_the_workspace_is_refused(ws, monkeypatch, config):
    """A home as the workspace: the owner's global git config names ~/githooks; git runs them."""
    (ws / config).parent.mkdir(parents=True, exist_ok=True)
    (ws / config).write_text("[core]\n\thooksPath = ~/githooks\n")
    home = pwd.struct_passwd(("alice", "x", os.getuid(), os.getgid(), "", str(ws), "/bin/sh"))
    monkeypatch.setattr(local_rules.pwd, "getpwuid", lambda uid: home)
    error = refused(ws, "githooks/pre-push")
    assert error and "rule 'core.hooksPath'" in error
    assert refused(ws, "notes.txt") is None


def bare_repo(folder):
    """The folder a `git init --bare` makes (what git looks for: HEAD, objects/, refs/), with an
    executable hook, as a server's deploy repository has."""
    for sub in ("objects", "refs", "hooks"):
        (folder / sub).mkdir(parents=True)
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text("[core]\n\tbare = true\n")
    (folder / "hooks" / "post-receive").write_text("#!/bin/sh\necho deploy\n")
    os.chmod(folder / "hooks" / "post-receive", 0o755)


@pytest.mark.parametrize("path", ["site.git/hooks/post-receive", "site.git/config", "m/x/HEAD"])
def test_a_bare_repository_in_the_workspace_is_refused(ws, path):
    """Its folder has no dot: a program rewrote its executable hook (kept executable) or its
    config (core.hooksPath, core.fsmonitor), and git ran it on the next push."""
    bare_repo(ws / "site.git")
    bare_repo(ws / "m" / "x")
    error = refused(ws, path)
    assert error and "rule 'git-dir'" in error and 'write_allow = ["git-dir"]' in error
    assert "deploy" in (ws / "site.git" / "hooks" / "post-receive").read_text()
    assert refused(ws, "site.git.txt") is None and refused(ws, "m/notes.txt") is None


def test_a_workspace_that_is_a_bare_repository_is_refused(ws):
    bare_repo(ws)
    assert "rule 'git-dir'" in refused(ws, "hooks/post-receive")
    assert "rule 'git-dir'" in refused(ws, "notes.txt")


def test_a_symlinked_git_config_out_of_the_workspace_is_not_read(ws, tmp_path):
    (tmp_path / "outside").write_text("[core]\n\thooksPath = hooks\n")
    (ws / ".git").mkdir()
    os.symlink(tmp_path / "outside", ws / ".git" / "config")
    assert refused(ws, "hooks/pre-commit") is None  # nothing read outside: no such rule


def test_git_config_values_are_read_as_git_reads_them():
    assert hooks_path('[core]\n\thooksPath = "a b" ; c\n') == "a b"
    assert hooks_path('[core "x"]\n\thooksPath = no\n') is None
    assert hooks_path("[core]\n\thooksPath = a\\\n/b\n") == "a/b"
    assert hooks_path("[user]\n\thooksPath = no\n") is None


@pytest.fixture
def users_home():
    """A home folder owned by an ordinary user, run from by root (the red-team's setting)."""
    user = ordinary_user()
    if user is None:
        pytest.skip("needs root: the workspace is another user's home")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="lackjail-home-"))
    os.chmod(folder, 0o755)
    home = folder / "alice"
    home.mkdir()
    os.chown(home, user.pw_uid, user.pw_gid)
    yield home
    shutil.rmtree(folder, ignore_errors=True)


def test_root_never_writes_a_users_lackjail_config_nor_dotfiles(users_home):
    for path, rule in (
        (".config/lackjail/config.toml", ".config/lackjail"),
        (".local/state/lackjail/journal/x", ".local/state/lackjail"),
        (".config/gh/hosts.yml", ".*"),
        (".bash_aliases", ".*"),
    ):
        error = refused(users_home, path)
        assert error and f"rule {rule!r}" in error, (path, error)
    assert not (users_home / ".config").exists()


READS = [
    ".git/modules/vendor/lib/config",
    ".git/modules/a/modules/b/config",
    ".config/gh/hosts.yml",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".pgpass",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    "state/lackjail/mcp/token",  # serve --http's token, with the state folder in the workspace
    # the class: credential-like names in hidden folders, and hidden files so named
    ".config/someapp/credentials.json",
    ".local/share/tool/auth_token",
    ".myapp/client_secret.json",
    ".registry-token",
]


@pytest.mark.parametrize("path", READS)
def test_credentials_by_list_and_by_class_are_not_readable(ws, path):
    (ws / path).parent.mkdir(parents=True, exist_ok=True)
    (ws / path).write_text("secret-value\n")
    out = session(ws).call("read_file", [path], {})
    assert not out.ok and "tools.read_deny" in out.error and "secret-value" not in out.error


@pytest.mark.parametrize(
    "path", ["src/token.py", "docs/credentials.md", "secrets/README.md", ".github/CODEOWNERS"]
)
def test_ordinary_files_named_like_credentials_stay_readable(ws, path):
    (ws / path).parent.mkdir(parents=True, exist_ok=True)
    (ws / path).write_text("fine\n")
    assert session(ws).call("read_file", [path], {}).value == "fine\n"


def test_a_rule_the_policy_added_says_where_to_remove_it(ws):
    error = refused(ws, "docs/x.md", write_deny=("docs/**",))
    assert "rule 'docs/**'" in error and "remove it from tools.write_deny" in error


def test_the_policy_file_the_run_obeys_is_refused_when_it_lies_in_the_workspace(ws):
    """A policy passed by path (`--policy ./ci.toml`, or the user's [defaults] policy) may lie
    in the workspace: a program rewriting it would choose the next run's rules."""
    from lackjail.kit import resolve_kit
    from lackjail.policy import load_policy

    (ws / "conf").mkdir()
    (ws / "conf" / "mine.toml").write_text('isolation = "any"\n')
    policy = load_policy(str(ws / "conf" / "mine.toml"))
    assert policy.source == str(ws / "conf" / "mine.toml") and load_policy("ci").source == ""
    s = resolve_kit("files", workspace=ws).session(policy, ws)
    out = s.call("write_file", ["conf/mine.toml", "[tools]\nwrite_allow = ['.*']\n"], {})
    assert not out.ok and "rule 'policy-file'" in out.error, out.error
    assert s.call("write_file", ["conf/other.toml", "x"], {}).ok
    assert s.commit() == ["conf/other.toml"]
    assert "write_allow" not in (ws / "conf" / "mine.toml").read_text()
