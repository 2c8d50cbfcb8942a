"""A command's early jail: started before the command imports anything else, so that the jail's
start (nsjail, the jailed interpreter, the zygote's imports: ~25 ms) overlaps the command's own
(its modules, the policy, the kit, the nsjail configuration: ~30-60 ms).

A command cannot know the jail it needs before it has read its flags, policy, kit and
workspace; so it starts the one the previous such command started, from a plan it kept
(nsjail's binary, environment and configuration text). The pool takes that jail as its first
only when the jail it would start now is exactly the plan (`take`); otherwise the early jail is
killed before anything was sent to it, and the new plan is kept for the next command. The jail
that runs a program is therefore always the one the command's own policy, image and host make.

The same folder keeps what every start would compute the same way again (`remembered`): the
children's seccomp filter, compiled for its rules and machine (no pyseccomp, no libseccomp),
and the shared objects the jail mounts, with the identity of every file their search read.

The plan lives in the user's own cache folder ($XDG_CACHE_HOME/lackjail, else
~/.cache/lackjail). It decides what starts before it is checked, so it is read only when the
folder and the file are the effective user's own, writable by no one else, neither reached
through a symlink (by descriptor, O_NOFOLLOW); anything else is no plan (no early start), and
it is written the same way (a new file beneath the folder's descriptor, renamed into place).
Nothing of a workspace is read here; the cache folder is reached through the one door for
host paths (`workspace.hostfs`, `workspace.beneath`), as every other file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zlib

from lackjail.pool.spawn import Spawned, config_memfd, spawn
from lackjail.workspace.beneath import open_host_dir
from lackjail.workspace.hostfs import open_at, open_regular_at, read_fd

# one plan (and memo) per interpreter and lackjail install: several side by side do not undo
# each other's
INSTALL = f"{zlib.crc32(f'{sys.executable}\0{__file__}'.encode()):08x}"
PLAN_FILE = f"early-jail-{INSTALL}.json"
MAX_PLAN_BYTES = 1 << 20

_lock = threading.Lock()
_begun = False  # `begin` was called: this process is a one-shot command, which keeps memos
_wanted = False  # the first jail this process starts keeps its plan
_plan: tuple | None = None  # (binary, env, config) the early jail was started from
_early: Spawned | None = None


def cache_base() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def cache_folder() -> str:
    return os.path.join(cache_base(), "lackjail")


def begin() -> None:
    """Start the jail of the kept plan, if there is one; either way, the first jail this
    process starts keeps its plan for the next command. Never raises: a command without an
    early jail starts its own as before."""
    global _begun, _wanted, _plan, _early
    with _lock:
        if _wanted:
            return
        _begun = _wanted = True
        plan = read_plan()
        if plan is None:
            return
        binary, env, config = plan
        try:
            _early = _spawn_config(binary, env, config)
            _plan = plan
        except (OSError, ValueError, subprocess.SubprocessError):  # no early jail, that is all
            pass


def take(launcher) -> Spawned | None:
    """The early jail when LAUNCHER (a `Launcher`: level, argv, env, config_text) would start
    exactly it, else None (the early jail killed). When `begin` was called and the plan was
    not LAUNCHER's, LAUNCHER's nsjail plan is kept for the next command. Only the first call
    after `begin` does anything."""
    global _wanted, _plan, _early
    with _lock:
        if not _wanted:
            return None
        early, plan = _early, _plan
        _wanted, _plan, _early = False, None, None
    mine = None
    if launcher.level == "nsjail" and launcher.config_text:
        mine = (launcher.argv[0], dict(launcher.env), launcher.config_text)
    if early is not None and plan == mine:
        return early
    if early is not None:
        early.kill()
    if mine is not None:
        write_plan(*mine)
    return None


def discard() -> None:
    """Kill the early jail if no pool took it (the command ended before starting a jail)."""
    global _begun, _wanted, _plan, _early
    with _lock:
        early = _early
        _begun = _wanted = False
        _plan = _early = None
    if early is not None:
        early.kill()


def _spawn_config(binary: str, env: dict, config: str) -> Spawned:
    """nsjail started with CONFIG, handed over in an anonymous file in memory."""
    fd = config_memfd(config)
    try:
        return spawn([binary, "--config", f"/proc/self/fd/{fd}"], env, pass_fds=(fd,))
    finally:
        os.close(fd)


def _own(info: os.stat_result) -> bool:
    """Ours, and writable by no one else."""
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _writable_folder() -> int | None:
    """The cache folder (an O_PATH descriptor), made where missing, when it is ours alone and
    the folder above it is ours or root's and no one else's to change: so what is written
    here goes where the user meant, not where another user's symlink or folder leads (the
    controller may run as root in someone else's home). The walk there follows only root's
    or our own symlinks (`beneath.open_host_dir`). Else None: nothing is kept."""
    base = cache_base()
    try:
        parent, _ = open_host_dir(os.path.dirname(os.path.abspath(base)))
    except OSError:
        return None
    opened = [parent]
    try:
        for name in (os.path.basename(os.path.abspath(base)), "lackjail"):  # made if missing
            above = opened[-1]
            info = os.fstat(above)
            if info.st_uid not in (0, os.geteuid()) or info.st_mode & 0o022:
                return None
            try:
                os.mkdir(name, 0o700, dir_fd=above)
            except FileExistsError:
                pass
            opened.append(open_at(above, name, os.O_PATH | os.O_DIRECTORY))
        folder = opened.pop()
        if _own(os.fstat(folder)):
            return folder
        os.close(folder)
        return None
    except OSError:
        return None
    finally:
        for fd in opened:
            os.close(fd)


def read_plan() -> tuple | None:
    """(binary, env, config) of the kept plan; None when there is none or it is not ours."""
    data = _read_own(PLAN_FILE)
    return None if data is None else _parse(data)


def _read_own(name: str) -> bytes | None:
    """File NAME of the cache folder, when both are ours alone (else None)."""
    try:
        folder, _ = open_host_dir(cache_folder())
    except OSError:
        return None
    try:
        if not _own(os.fstat(folder)):
            return None
        fd = open_regular_at(folder, name)
        try:
            return read_fd(fd, MAX_PLAN_BYTES) if _own(os.fstat(fd)) else None
        finally:
            os.close(fd)
    except OSError:
        return None
    finally:
        os.close(folder)


def _parse(data: bytes) -> tuple | None:
    try:
        plan = json.loads(data)
        binary, env, config = plan["binary"], plan["env"], plan["config"]
    except (ValueError, TypeError, KeyError):
        return None
    texts = [binary, config, *env, *env.values()] if isinstance(env, dict) else None
    if texts is None or not all(isinstance(t, str) for t in texts) or not binary.startswith("/"):
        return None
    return binary, env, config


def write_plan(binary: str, env: dict, config: str) -> None:
    """Keep (BINARY, ENV, CONFIG) for the next command; a folder that is not ours, or any
    failure, keeps nothing (the next command starts its jail as before)."""
    _write_own(PLAN_FILE, json.dumps({"binary": binary, "env": env, "config": config}))


def _write_own(name: str, text: str) -> None:
    """Replace file NAME of the cache folder (made ours alone) with TEXT, whole or not at all."""
    folder = _writable_folder()
    if folder is None:
        return
    tmp = f".{name}.{os.getpid()}.tmp"
    try:
        fd = open_at(folder, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(text.encode("utf-8"))
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        try:
            os.unlink(tmp, dir_fd=folder)
        except OSError:
            pass
    finally:
        os.close(folder)


def remembered(kind: str, key: str):
    """What a one-shot command kept for KIND (`remember`) when it was made for KEY, and this
    process is a one-shot command too; else None. KEY names everything the value follows
    from; a value that also follows from files says which, and its caller checks them."""
    if not _begun:
        return None
    data = _read_own(f"{kind}-{INSTALL}.json")
    if data is None:
        return None
    try:
        kept = json.loads(data)
        return kept["value"] if kept["key"] == key else None
    except (ValueError, TypeError, KeyError):
        return None


def remember(kind: str, key: str, value) -> None:
    """Keep VALUE (plain JSON data), made for KEY, for the next one-shot command (when this
    process is one)."""
    if _begun:
        _write_own(f"{kind}-{INSTALL}.json", json.dumps({"key": key, "value": value}))
