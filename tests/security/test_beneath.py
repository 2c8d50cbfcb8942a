"""The kernel-confinement layer on its own: Tree opens nothing outside, follows no symlink."""

import errno
import os

import pytest

from lackjail.workspace.beneath import Escape, Tree, openat2_available
from lackjail.workspace.protect import Protection, rule_matches

MODES = [True, False] if openat2_available() else [False]


@pytest.fixture
def tree_of(tmp_path):
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("inside\n")
    (tmp_path / "secret").write_text("SECRET\n")
    os.symlink("../secret", root / "up")
    os.symlink(str(tmp_path / "secret"), root / "abs")
    os.symlink("d", root / "alias")
    os.symlink("/proc/self/root/etc/passwd", root / "magic")
    os.symlink("loop", root / "loop")
    trees = []

    def make(use_openat2):
        tree = Tree(str(root), use_openat2=use_openat2)
        trees.append(tree)
        return tree

    yield make
    for tree in trees:
        tree.close()


@pytest.mark.parametrize("use_openat2", MODES)
@pytest.mark.parametrize("rel", ["up", "abs", "alias/f.txt", "magic", "loop", "d/../up"])
def test_no_symlink_and_no_dotdot_is_ever_opened(tree_of, use_openat2, rel):
    tree = tree_of(use_openat2)
    with pytest.raises(OSError) as caught:
        os.close(tree.open(rel, os.O_RDONLY))
    assert caught.value.errno in (errno.ELOOP, errno.ENOTDIR, errno.EXDEV)


@pytest.mark.parametrize("use_openat2", MODES)
def test_plain_paths_open(tree_of, use_openat2):
    tree = tree_of(use_openat2)
    fd = tree.open("d/f.txt", os.O_RDONLY)
    try:
        assert os.read(fd, 100) == b"inside\n"
    finally:
        os.close(fd)


def test_canonical_resolves_in_tree_symlinks_and_refuses_the_rest(tree_of):
    tree = tree_of(True)
    assert tree.canonical("alias/f.txt") == "d/f.txt"
    assert tree.canonical("alias/new/x") == "d/new/x"
    for rel in ("up", "abs", "magic"):
        with pytest.raises(Escape, match="outside the workspace through a symlink"):
            tree.canonical(rel)
    with pytest.raises(Escape, match="loop"):
        tree.canonical("loop")


@pytest.mark.parametrize(
    "rule, rel, hit",
    [
        (".git", ".git/config", True),
        (".git", "vendor/lib/.git/hooks/x", True),
        (".git", "a.git", False),
        (".github/workflows", ".github/workflows/ci.yml", True),
        (".github/workflows", ".github/CODEOWNERS", False),
        ("*.pem", "deploy/key.pem", True),
        ("*.pem", "deploy/keypem", False),
        ("docs/**", "docs/a/b.md", True),
        ("/top", "a/top", False),
        ("/top", "top/x", True),
        (".env*", ".env.local", True),
        ("[!a].txt", "a.txt", False),
    ],
)
def test_protected_path_rules(rule, rel, hit):
    assert rule_matches(rule, rel) is hit


def test_the_defaults_protect_what_the_issue_names():
    rules = Protection()
    for rel in (".husky/pre-commit", ".githooks/x", ".venv/bin/lackjail", ".envrc",
                ".github/workflows/ci.yml", ".pre-commit-config.yaml", ".vscode/tasks.json",
                ".lackjail/config.toml", ".git/HEAD"):  # fmt: skip
        with pytest.raises(Exception, match="tools.write_deny"):
            rules.check_write(rel, rel)
    for rel in (".git/config", ".git-credentials", ".env", ".netrc", ".npmrc", ".pypirc",
                "id_rsa", ".ssh/config", ".aws/credentials"):  # fmt: skip
        with pytest.raises(Exception, match="tools.read_deny"):
            rules.check_read(rel, rel)
    rules.check_write("src/main.py", "src/main.py")
    rules.check_read("README.md", "README.md")


def test_the_combined_rules_match_exactly_where_one_rule_does():
    from lackjail.workspace.protect import (
        DEFAULT_READ_DENY,
        DEFAULT_WRITE_DENY,
        _combined,
        rule_matches,
    )

    rules = (*DEFAULT_READ_DENY, *DEFAULT_WRITE_DENY, "/top/x", "/lead*", "a/**/b", "[!x]y")
    paths = [
        ".git/config", "a/.git/config", "x/.env.local", "k/foo.pem", "top/x", "top/x/y",
        "z/top/x", "lead1", "z/lead1", "a/q/r/b", "a/b", "ab", ".ssh/id", "okfile", "zy", "xy",
        ".config/git/x", "x.key/y", "readme.md", "src/a.py", ".bashrc.d", "c/.bashrc",
    ]  # fmt: skip
    combined = _combined(rules)
    for path in paths:
        assert bool(combined.match(path)) == any(rule_matches(r, path) for r in rules), path
    assert _combined(("/only",)).match("only") and not _combined(("/only",)).match("a/only")
