"""Applying a run's staged writes all or nothing, with a journal that survives `kill -9`.

1. Check every target: protected rules, the same path staged as a file and as
   a folder, a folder or special file in the way, and the last-mile check: a
   file that changed on disk since the run read (or first staged) it is a
   conflict, so nobody's concurrent edit is lost.
2. Prepare: create missing folders and a temp file beside each target (the
   kernel's permission checks happen here, as the workspace owner), written,
   fsynced, read back, given the replaced file's owner and mode without
   set-id, sticky or (where code runs later) exec bits.
3. Replace: keep each old file as a hard-linked backup, rename the temp file
   over it. On any failure every replaced file is restored and every created
   file and folder removed.
4. Finish: drop the backups and the journal.

The journal (in the user's state folder, never in the workspace) names the
temp files, backups and folders of steps 2-3; `recover` rolls an interrupted
commit back the next time the workspace is opened, so each file is old or
new and no temp file stays behind. Every step works on descriptors beneath
the workspace root.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from dataclasses import dataclass

from lackjail.errors import CommitError, ToolCallError
from lackjail.workspace.beneath import Tree
from lackjail.workspace.files import identity
from lackjail.workspace.hostfs import open_at, open_regular_at, read_fd, write_all
from lackjail.workspace.owner import Owner
from lackjail.workspace.paths import os_message, show
from lackjail.workspace.protect import Protection

NEW_FILE_MODE = 0o644  # 0o666 under the usual umask 022
NEW_DIR_MODE = 0o755
MAX_JOURNAL_BYTES = 64 << 20  # a journal file read back
UNSEEN = object()  # a target the run never looked at (no last-mile check possible)


@dataclass
class Target:
    """One file to write: where, what, what the run saw there, and the commit's state for it."""

    rel: str
    data: bytes
    seen: object = UNSEEN  # identity() tuple, None (absent), or UNSEEN
    tmp: str = ""
    backup: str | None = None
    placed: int = 0  # the inode of the new file
    plain: bool = False  # a protected place (a lifted rule): never keep exec bits


def journal_dirs() -> list[str]:
    """Where interrupted commits are recorded: $XDG_STATE_HOME (or ~/.local/state)/lackjail/journal,
    else (a home we cannot write) a private folder of ours in the temp folder."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return [
        os.path.join(base, "lackjail", "journal"),
        os.path.join(tempfile.gettempdir(), f"lackjail-journal-{os.geteuid()}"),
    ]


def private_dir(path: str, create: bool = True) -> Tree:
    """The folder PATH, opened (and with CREATE made, 0700, with its missing parents); OSError
    unless the descriptor is of a folder that only we own."""
    missing: list[str] = []
    top = path
    while True:
        try:
            base = Tree(top)
            break
        except FileNotFoundError:
            if not create or top == os.path.dirname(top):
                raise
            missing.insert(0, os.path.basename(top))
            top = os.path.dirname(top)
    try:
        tree = base.below("/".join(missing), create=True, mode=0o700) if missing else base
    finally:
        if missing:
            base.close()
    info = os.fstat(tree.fd)
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        tree.close()
        raise OSError(errno.EPERM, f"{path} is not a private folder of this user")
    return tree


class Journal:
    """One commit's record; written atomically, private to the user running lackjail."""

    def __init__(self, tree: Tree):
        info = os.fstat(tree.fd)
        self.name = f"{info.st_dev}-{info.st_ino}-{os.urandom(6).hex()}.json"
        self.folder: Tree | None = None

    def write(self, targets: list[Target], made: list[str]) -> None:
        entries = [
            {"rel": t.rel, "tmp": t.tmp, "backup": t.backup, "placed": t.placed} for t in targets
        ]
        text = json.dumps({"targets": entries, "made": made})
        if self.folder is None:
            self.folder = self._folder()
        tmp = self.name + ".new"
        fd = open_at(self.folder.fd, tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            write_all(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, self.name, src_dir_fd=self.folder.fd, dst_dir_fd=self.folder.fd)

    @staticmethod
    def _folder() -> Tree:
        folders = journal_dirs()
        for folder in folders[:-1]:
            try:
                return private_dir(folder)
            except OSError:
                continue
        return private_dir(folders[-1])

    def remove(self) -> None:
        if self.folder is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.name, dir_fd=self.folder.fd)
            self.folder.close()
            self.folder = None


def commit(
    tree: Tree,
    owner: Owner,
    protection: Protection,
    targets: list[Target],
    fault=None,
) -> list[str]:
    """Write TARGETS all or nothing (see the module docstring); the paths written.

    FAULT, for tests, is called with a step name before each step (it may raise or kill).
    """
    if not targets:  # a run that staged no write: no journal to write, sync and remove
        return []
    fault = fault or (lambda step: None)
    targets = sorted(targets, key=lambda t: t.rel)
    with owner.acting():
        missing = _check(tree, protection, targets)
        journal = Journal(tree)
        token = os.urandom(6).hex()
        for index, target in enumerate(targets):
            target.tmp = f".lackjail-{token}-{index}.tmp"
            target.backup = f".lackjail-{token}-{index}.old"
        made: list[str] = []
        try:
            fault("journal")
            with owner.as_controller():
                journal.write(targets, missing)
            for target in targets:
                fault("prepare")
                _prepare(tree, owner, target, made)
            with owner.as_controller():
                journal.write(targets, made)
            for target in targets:
                fault("replace")
                _replace(tree, target)
        except BaseException as exc:
            stuck = _roll_back(tree, targets, made)
            if not stuck:
                with owner.as_controller():
                    journal.remove()  # else the next run tries the undo again
            if isinstance(exc, (OSError, ToolCallError, CommitError)):
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                if stuck:
                    raise CommitError(
                        f"commit failed ({reason}) and these files could not be put back: "
                        f"{', '.join(show(r) for r in stuck)}",
                        written=stuck,
                    ) from None
                raise CommitError(f"commit failed, nothing was written: {reason}") from None
            raise
        fault("finish")
        for target in targets:
            _finish(tree, target)
        with owner.as_controller():
            journal.remove()
    return [t.rel for t in targets]


def _check(tree: Tree, protection: Protection, targets: list[Target]) -> list[str]:
    """Refuse the commit before anything is written; the folders it will create, outermost first."""
    rels = {t.rel for t in targets}
    missing: list[str] = []
    for target in targets:
        rel = target.rel
        protection.check_write(rel, rel)
        target.plain = protection.runs_later(rel)
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in rels:
                raise CommitError(
                    f"commit failed, nothing was written: {show('/'.join(parts[:depth]))} is "
                    f"written as a file and also as the folder of {show(rel)}"
                )
        current = _current(tree, rel)
        if current is not None and not stat.S_ISREG(current.st_mode):
            kind = "a folder" if stat.S_ISDIR(current.st_mode) else "not a regular file"
            raise CommitError(f"commit failed, nothing was written: {show(rel)} is now {kind}")
        if target.seen is not UNSEEN and identity(current) != target.seen:
            raise CommitError(
                f"commit refused, nothing was written: {show(rel)} changed on disk after this run "
                "read it (someone else edited it); run again on the new version"
            )
        if current is None:
            for depth in range(1, len(parts)):
                folder = "/".join(parts[:depth])
                if folder not in missing and _current(tree, folder) is None:
                    missing.append(folder)
    return missing


def _current(tree: Tree, rel: str) -> os.stat_result | None:
    """The target's fstat now; None when it or a folder above it does not exist."""
    try:
        fd = tree.open(rel, os.O_PATH)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CommitError(f"commit failed, nothing was written: {os_message(exc, rel)}") from None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def _parent(tree: Tree, owner: Owner, rel: str, made: list[str]) -> int:
    """An O_PATH descriptor of REL's folder, creating the missing folders (recorded in MADE)."""
    folder = os.path.dirname(rel)
    try:
        return tree.open_dir(folder)
    except FileNotFoundError:
        pass
    parts = folder.split("/")
    dirfd = tree.open_dir("")
    try:
        for depth, name in enumerate(parts, 1):
            try:
                nxt = open_at(dirfd, name, os.O_PATH | os.O_DIRECTORY)
            except FileNotFoundError:
                os.mkdir(name, NEW_DIR_MODE, dir_fd=dirfd)
                made.append("/".join(parts[:depth]))
                nxt = open_at(dirfd, name, os.O_RDONLY | os.O_DIRECTORY)
                like = os.fstat(dirfd)
                if _gives_away(owner, like) and not _as_made(nxt, owner):
                    os.close(nxt)  # another folder was renamed into its place meanwhile
                    raise CommitError(
                        f"{show('/'.join(parts[:depth]))} changed while it was made"
                    ) from None
                _give(owner, nxt, like)
            os.close(dirfd)
            dirfd = nxt
        return dirfd
    except BaseException:
        os.close(dirfd)
        raise


def _as_made(fd: int, owner: Owner) -> bool:
    """True when folder FD is as mkdir just made it, empty and the owner's: giving it away then
    hands over nothing that was there before."""
    info = os.fstat(fd)
    return info.st_uid == owner.uid and info.st_nlink == 2 and not os.listdir(fd)


def _gives_away(owner: Owner, like: os.stat_result) -> bool:
    """True when `_give` would chown to LIKE's owner and group: another identity than ours."""
    return owner.switch and (like.st_uid, like.st_gid) != (owner.uid, owner.gid)


def _give(owner: Owner, fd: int, like: os.stat_result) -> None:
    """Give the file or folder FD the owner and group of LIKE (root only; by descriptor)."""
    if _gives_away(owner, like):
        with owner.as_controller():
            os.fchown(fd, like.st_uid, like.st_gid)


def _prepare(tree: Tree, owner: Owner, target: Target, made: list[str]) -> None:
    dirfd = _parent(tree, owner, target.rel, made)
    try:
        old = _stat_at(dirfd, os.path.basename(target.rel))
        fd = open_at(dirfd, target.tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            write_all(fd, target.data)
            if old is not None:
                _give(owner, fd, old)
                mode = old.st_mode & 0o777
                if target.plain:
                    mode &= ~0o111
            else:
                _give(owner, fd, os.fstat(dirfd))
                mode = NEW_FILE_MODE
            os.fchmod(fd, mode)  # after fchown, which may clear bits; never set-id or sticky
            os.fsync(fd)
            if os.pread(fd, len(target.data) + 1, 0) != target.data:
                raise CommitError(f"{show(target.rel)} read back differs from what was written")
            target.placed = os.fstat(fd).st_ino
        finally:
            os.close(fd)
    finally:
        os.close(dirfd)


def _replace(tree: Tree, target: Target) -> None:
    dirfd = tree.open_dir(os.path.dirname(target.rel))
    try:
        name = os.path.basename(target.rel)
        now = _stat_at(dirfd, name)
        if target.seen is not UNSEEN and identity(now) != target.seen:
            raise CommitError(f"{show(target.rel)} changed on disk while the commit ran")
        if now is None:
            target.backup = None
            os.link(target.tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
            os.unlink(target.tmp, dir_fd=dirfd)
        else:
            if not stat.S_ISREG(now.st_mode):
                raise CommitError(f"{show(target.rel)} is not a regular file any more")
            backup = target.backup or ""  # named for every target when the commit was prepared
            os.link(name, backup, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=False)
            os.rename(target.tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
        target.tmp = ""
    finally:
        os.close(dirfd)


def _finish(tree: Tree, target: Target) -> None:
    try:
        dirfd = tree.open(os.path.dirname(target.rel), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        if target.backup:
            _unlink(dirfd, target.backup)
        os.fsync(dirfd)
    except OSError:
        pass
    finally:
        os.close(dirfd)


def _unlink(dirfd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dirfd)


def _roll_back(tree: Tree, targets: list, made: list) -> list[str]:
    """Undo what happened of TARGETS (Targets or journal dicts); remove the MADE folders.
    The paths whose new file could not be taken back."""
    stuck = []
    for target in reversed(targets):
        rel, tmp, backup, placed = (
            (target["rel"], target["tmp"], target["backup"], target["placed"])
            if isinstance(target, dict)
            else (target.rel, target.tmp, target.backup, target.placed)
        )
        try:
            dirfd = tree.open_dir(os.path.dirname(rel))
        except OSError:
            if placed:
                stuck.append(rel)
            continue
        now = None
        try:
            name = os.path.basename(rel)
            if tmp:
                _unlink(dirfd, tmp)
            found = _stat_at(dirfd, name)
            now = found.st_ino if found is not None else None
            if placed and now == placed:  # our new file is in place: put the old one back
                if backup and _stat_at(dirfd, backup) is not None:
                    os.rename(backup, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
                else:
                    os.unlink(name, dir_fd=dirfd)
            elif backup:
                _unlink(dirfd, backup)  # the old file is still in place; drop the extra link
        except OSError:
            if placed and now == placed:
                stuck.append(rel)
        finally:
            os.close(dirfd)
    for folder in reversed(made):
        try:
            parent = tree.open_dir(os.path.dirname(folder))
        except OSError:
            continue
        try:
            os.rmdir(os.path.basename(folder), dir_fd=parent)
        except OSError:
            pass
        finally:
            os.close(parent)
    return sorted(stuck)


def _stat_at(dirfd: int, name: str) -> os.stat_result | None:
    """The lstat of NAME in the folder DIRFD; None when it does not exist."""
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def recover(tree: Tree, owner: Owner) -> list[str]:
    """Roll back commits to this workspace that were interrupted (kill -9); the files restored."""
    info = os.fstat(tree.fd)
    prefix = f"{info.st_dev}-{info.st_ino}-"
    restored = []
    for path in journal_dirs():
        try:  # the usual case, nothing to recover, opens nothing
            if not any(n.startswith(prefix) for n in os.listdir(path)):
                continue
            folder = private_dir(path, create=False)  # one someone else could write: not obeyed
        except OSError:
            continue
        try:
            listing = folder.open("", os.O_RDONLY | os.O_DIRECTORY)
            try:
                names = [
                    n for n in os.listdir(listing) if n.startswith(prefix) and n.endswith(".json")
                ]
            finally:
                os.close(listing)
            restored += _recover_from(folder, names, tree, owner)
        except OSError:
            continue
        finally:
            folder.close()
    return restored


def _recover_from(folder: Tree, names: list[str], tree: Tree, owner: Owner) -> list[str]:
    restored = []
    for name in names:
        try:
            fd = open_regular_at(folder.fd, name)
            try:
                record = json.loads(read_fd(fd, MAX_JOURNAL_BYTES))
            finally:
                os.close(fd)
            targets, made = record["targets"], record["made"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        with owner.acting():
            stuck = _roll_back(tree, targets, made)
        restored += [t["rel"] for t in targets]
        if not stuck:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=folder.fd)
    return restored
