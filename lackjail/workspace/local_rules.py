"""The write rules a workspace brings with it: where lackjail's own install, its user config and
state, the folder git's `core.hooksPath` names and the run's policy file lie inside this
workspace.

None of these has a fixed name: an editable install's `lackjail/` is an
ordinary folder of the checkout, `$XDG_CONFIG_HOME` may point anywhere, and
`core.hooksPath` may name `scripts/hooks`. Each place is resolved as text and
matched to the workspace by the device and inode of its folders (compared with
the workspace's descriptor), so the workspace is recognised whatever path led
to it. Nothing here is opened by name: the workspace's `.git/config` is read
beneath the workspace's descriptor like any workspace file, no symlink
followed out. Git reads core.hooksPath from more places than the workspace's
own `.git/config`: the checkout's when the workspace is a folder inside one,
and the owner's global config (`~/.gitconfig`, `~/.config/git/config`) and
the system's (`/etc/gitconfig`); every value found is protected. Those files
lie outside the workspace and are read through the one door (no symlink of
another user followed, regular files only). Git's `include` files are not
followed, and a `.git` that is a file (a worktree, a submodule) has no hooks
folder found here.
"""

from __future__ import annotations

import os
import pwd
import stat
import sys

from lackjail.errors import ToolCallError
from lackjail.pool.early import cache_folder
from lackjail.server.place import folder_path as server_folder
from lackjail.userconfig import user_config_path
from lackjail.workspace.beneath import DIR_FLAGS as DIR
from lackjail.workspace.commit import journal_dirs
from lackjail.workspace.files import locate, read_regular
from lackjail.workspace.hostfs import read_file
from lackjail.workspace.protect import CONFIG, HOOKS, INSTALL, POLICY_FILE

MAX_GIT_CONFIG = 1 << 20
# the hooks git runs, for a core.hooksPath that names the workspace's root itself
GIT_HOOKS = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
    "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
    "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite",
    "sendemail-validate", "fsmonitor-watchman", "post-index-change",
)  # fmt: skip


def local_rules(tree, policy_file: str = "") -> list[tuple[str, str]]:
    """(rule name, glob anchored at the workspace root) for each of the places that lie in the
    workspace of TREE (the whole workspace is `/**` when it is such a place); POLICY_FILE is
    the file the run's policy came from, if any."""
    rules = []
    places = [(INSTALL, p) for p in install_places()] + [(CONFIG, p) for p in config_places()]
    if policy_file:
        places.append((POLICY_FILE, policy_file))
    places += [(HOOKS, p) for p in hooks_places(tree)]
    for name, place in places:
        rel = beneath(tree.fd, place)
        if rel is None:
            continue
        if name == HOOKS and not rel:  # hooks at the root: the hook files, not every file
            rules += [(name, f"/{hook}") for hook in GIT_HOOKS]
        else:
            rules.append((name, f"/{rel}" if rel else "/**"))
    return rules


def install_places() -> list[str]:
    """lackjail's package folder and the Python environment running it."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [package, sys.prefix, sys.exec_prefix, sys.base_prefix]


def config_places() -> list[str]:
    """The user's lackjail config folder, lackjail's state folder (commit journals), its
    cache folder (the next command starts the nsjail binary and configuration kept there
    before it checks them, and takes the children's seccomp filter and mounts from it) and the
    folder of the user's server (the socket `lackjail run` hands its commands to)."""
    return [
        str(user_config_path().parent),
        os.path.dirname(journal_dirs()[0]),
        cache_folder(),
        server_folder(),
    ]


def hooks_places(tree) -> list[str]:
    """The absolute paths that `core.hooksPath` names in every git config that applies to the
    workspace of TREE: its own `.git/config` or its checkout's, its owner's and the system's."""
    try:
        home = pwd.getpwuid(os.fstat(tree.fd).st_uid).pw_dir
    except KeyError:
        home = None
    where = os.readlink(f"/proc/self/fd/{tree.fd}")
    top, texts = _checkout(tree, where)
    outside = ["/etc/gitconfig"]
    if home:
        outside += [os.path.join(home, ".gitconfig"), os.path.join(home, ".config/git/config")]
    for path in outside:
        try:
            texts.append(read_file(path, MAX_GIT_CONFIG).decode("utf-8", "replace"))
        except OSError:
            continue
    places = []
    for text in texts:
        value = hooks_path(text)
        if not value:
            continue
        if value == "~" or value.startswith("~/"):  # git expands it to the home of who runs it
            if not home:
                continue
            value = home + value[1:]
        places.append(os.path.join(top, value))  # a relative one: from the working tree's top
    return places


def _checkout(tree, where: str) -> tuple[str, list[str]]:
    """(the working tree's top, [its .git/config's text]) for the workspace of TREE at WHERE:
    the workspace itself when it holds `.git/config`, else the nearest folder above that does
    (read through the door); (WHERE, []) when it is in no checkout."""
    try:
        rel = locate(tree, ".git/config", ".git/config")
        data, _ = read_regular(tree, rel, MAX_GIT_CONFIG, ".git/config")
        return where, [data.decode("utf-8", "replace")]
    except ToolCallError:
        pass
    folder = where
    while folder != "/":
        folder = os.path.dirname(folder)
        try:
            data = read_file(os.path.join(folder, ".git", "config"), MAX_GIT_CONFIG)
        except FileNotFoundError:
            continue
        except OSError:
            return where, []
        return folder, [data.decode("utf-8", "replace")]
    return where, []


def in_git_dir(tree, rel: str) -> bool:
    """True when a folder above REL (the workspace itself included) is a git repository's own
    folder: a bare repository (`site.git/`) or a workspace that is one, whose `config` and
    `hooks/` git obeys later, with no dot in their names."""
    parts = rel.split("/")[:-1]
    return any(_is_git_dir(tree, "/".join(parts[:i])) for i in range(len(parts) + 1))


def _is_git_dir(tree, folder: str) -> bool:
    """Whether FOLDER (beneath TREE, no symlink followed) holds HEAD, objects/ and refs/."""
    fds = []
    try:
        for name, flags in (("HEAD", os.O_PATH), ("objects", DIR), ("refs", DIR)):
            fds.append(tree.open(f"{folder}/{name}" if folder else name, flags))
        return stat.S_ISREG(os.fstat(fds[0]).st_mode)
    except OSError:
        return False
    finally:
        for fd in fds:
            os.close(fd)


def beneath(rootfd: int, place: str) -> str | None:
    """PLACE's path relative to the folder ROOTFD ("" for that folder itself), or None when it
    does not lie beneath it. PLACE need not exist yet."""
    root = os.fstat(rootfd)
    path, parts = os.path.realpath(place), []
    while True:
        try:
            info = os.lstat(path)
            if (info.st_dev, info.st_ino) == (root.st_dev, root.st_ino):
                return "/".join(reversed(parts))
        except OSError:
            pass
        parent = os.path.dirname(path)
        if parent == path:
            return None
        parts.append(os.path.basename(path))
        path = parent


def hooks_path(text: str) -> str | None:
    """The last `core.hooksPath` value of git config TEXT (keys and sections are
    case-insensitive; quotes, escapes, comments and continued lines as git reads them)."""
    section, found = None, None
    for line in _logical_lines(text):
        rest = line.strip()
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                continue
            section = rest[1:end].strip().lower()
            rest = rest[end + 1 :].strip()
        if section != "core" or not rest:
            continue
        key, eq, value = rest.partition("=")
        if eq and key.strip().lower() == "hookspath":
            found = _value(value)
    return found


def _logical_lines(text: str):
    """Lines with git's continuations (a backslash ending a line) joined."""
    pending = ""
    for line in text.splitlines():
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _value(raw: str) -> str:
    """A git config value: quotes removed, escapes read, a comment (# or ;) outside quotes cut."""
    out, quoted, i = [], False, 0
    raw = raw.strip()
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        i += 1
    return "".join(out).strip() if not quoted else "".join(out)
