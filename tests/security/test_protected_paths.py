"""Protected paths: places that run code later are not writable, credentials are not readable
unless a policy lifts a rule by name."""

import os
import stat

import pytest
from host_support import session

from lackjail.policy import PolicyError, policy_from_dict

pytestmark = pytest.mark.usefixtures("private_state")


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    for rel, text in {
        ".git/config": "[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n",
        ".git-credentials": "https://user:token@example.invalid\n",
        ".env": "API_KEY=secret\n",
        ".env.production": "API_KEY=secret\n",
        ".netrc": "machine x login y password secret\n",
        ".npmrc": "//registry/:_authToken=secret\n",
        ".pypirc": "[pypi]\npassword = secret\n",
        ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        ".aws/credentials": "[default]\naws_secret_access_key = secret\n",
        "deploy/server.pem": "-----BEGIN PRIVATE KEY-----\n",
        ".husky/pre-commit": "#!/bin/sh\nnpm test\n",
        "README.md": "hello\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    os.chmod(root / ".husky" / "pre-commit", 0o755)
    return root


WRITES = [
    (".husky/pre-commit", ".husky"),
    (".githooks/pre-push", ".githooks"),
    (".git/hooks/post-checkout", ".git"),
    ("sub/.git/config", ".git"),
    (".venv/bin/lackjail", ".venv"),
    ("venv/lib/python3.12/site-packages/x.pth", "venv"),
    ("lib/site-packages/evil.py", "site-packages"),
    ("evil.pth", "*.pth"),
    (".github/workflows/ci.yml", ".github/workflows"),
    (".gitlab-ci.yml", ".gitlab-ci.yml"),
    (".pre-commit-config.yaml", ".pre-commit-config.yaml"),
    (".envrc", ".envrc"),
    (".vscode/tasks.json", ".vscode/tasks.json"),
    (".lackjail/kits/readonly.kit", ".lackjail"),
    (".lackjail/config.toml", ".lackjail"),
    ("sitecustomize.py", "sitecustomize.py"),
    # configs that name a program the next yarn, npm, cargo or cd runs
    (".yarnrc.yml", ".yarnrc.yml"),
    (".npmrc", ".npmrc"),
    ("crates/x/.cargo/config.toml", ".cargo/config.toml"),
    ("mise.toml", "mise.toml"),
    # a workspace that is (or holds) a home folder: run from ~, a program planted these
    (".ssh/authorized_keys", ".ssh"),
    (".bashrc", ".bashrc"),
    ("alice/.profile", ".profile"),
    (".zshrc", ".zshrc"),
    (".config/autostart/x.desktop", ".config/autostart"),
    (".config/systemd/user/x.service", ".config/systemd"),
    (".gitconfig", ".gitconfig"),
    (".config/git/config", ".config/git"),
    (".local/bin/ls", ".local/bin"),
]


@pytest.mark.parametrize("path, rule", WRITES)
def test_writes_where_code_runs_later_are_refused_naming_the_rule(ws, path, rule):
    s = session(ws)
    out = s.call("write_file", [path, "malicious\n"], {})
    assert not out.ok
    assert f"rule {rule!r}" in out.error and "tools.write_deny" in out.error
    s.commit()
    assert not (ws / path).exists() or "malicious" not in (ws / path).read_text()


def test_a_symlink_into_a_protected_folder_is_refused_too(ws):
    os.symlink(".husky", ws / "hooks")
    out = session(ws).call("write_file", ["hooks/pre-commit", "x"], {})
    assert not out.ok and "'.husky'" in out.error


READS = [
    (".git/config", ".git/config"),
    (".git-credentials", ".git-credentials"),
    (".env", ".env*"),
    (".env.production", ".env*"),
    (".netrc", ".netrc"),
    (".npmrc", ".npmrc"),
    (".pypirc", ".pypirc"),
    (".ssh/id_ed25519", ".ssh"),
    (".aws/credentials", ".aws"),
    ("deploy/server.pem", "*.pem"),
]


@pytest.mark.parametrize("path, rule", READS)
def test_credentials_are_not_readable_and_the_error_does_not_quote_them(ws, path, rule):
    out = session(ws).call("read_file", [path], {})
    assert not out.ok
    assert f"rule {rule!r}" in out.error and "tools.read_deny" in out.error
    assert "secret" not in out.error and "AUTHORIZATION" not in out.error


def test_edit_file_cannot_read_a_credential_either(ws):
    out = session(ws).call("edit_file", [".git/config", "basic", "x"], {})
    assert not out.ok and "tools.read_deny" in out.error


def test_a_policy_adds_rules(ws):
    s = session(ws, write_deny=("docs/**",), read_deny=("README.md",))
    assert "rule 'docs/**'" in s.call("write_file", ["docs/x.md", "x"], {}).error
    assert "rule 'README.md'" in s.call("read_file", ["README.md"], {}).error


def test_a_policy_lifts_a_rule_by_name_and_exec_bits_are_not_kept_there(ws):
    s = session(ws, write_allow=(".husky",), read_allow=(".env*",))
    assert s.call("read_file", [".env"], {}).value == "API_KEY=secret\n"
    assert not s.call("read_file", [".git/config"], {}).ok  # the other rules hold
    assert s.call("edit_file", [".husky/pre-commit", "npm test", "npm run lint"], {}).ok
    assert s.commit() == [".husky/pre-commit"]
    mode = stat.S_IMODE(os.stat(ws / ".husky" / "pre-commit").st_mode)
    assert mode & 0o111 == 0, oct(mode)


def test_policy_files_check_the_new_keys():
    tools = policy_from_dict({"tools": {"write_deny": ["secrets/**"], "read_allow": [".env*"]}})
    assert tools.tools.write_deny == ("secrets/**",) and tools.tools.read_allow == (".env*",)
    with pytest.raises(PolicyError, match="tools.write_allow.*'site-pakages'.*not a default rule"):
        policy_from_dict({"tools": {"write_allow": ["site-pakages"]}})
    with pytest.raises(PolicyError, match="tools.read_allow.*'.gti'.*not a default rule"):
        policy_from_dict({"tools": {"read_allow": [".gti"]}})
    with pytest.raises(PolicyError, match="'tools.read_deny' must be a list of path globs"):
        policy_from_dict({"tools": {"read_deny": "x"}})
    with pytest.raises(PolicyError, match="unknown policy key 'tools.write_denied'"):
        policy_from_dict({"tools": {"write_denied": ["x"]}})
