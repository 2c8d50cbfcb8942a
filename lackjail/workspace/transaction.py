"""A run's transaction on the workspace: confined reads, staged writes, all-or-nothing commit.

Writes never touch the workspace during a run. A tool call writes into its
own `WorkspaceView`; when the call succeeds the session merges those writes
into the run's staging area, reading each back and comparing (write
verification). A failed or timed-out call's writes are dropped. Staged files
are visible to later reads, edits and find_files of the same run; `commit`
applies them all or none (see `commit`). Every file access is resolved by
the kernel beneath the workspace's descriptor and runs as the workspace's
owner; what a file looked like when the run first read or staged it is kept
for the commit's last-mile check.
"""

from __future__ import annotations

import functools
import os
import threading

from lackjail.errors import LimitExceeded, ToolCallError, ToolDenied
from lackjail.workspace import commit as committing
from lackjail.workspace.files import FileTooLarge, identity, locate, read_regular, stat_target
from lackjail.workspace.hostfs import Root
from lackjail.workspace.local_rules import in_git_dir, local_rules
from lackjail.workspace.pathglob import PathGlob
from lackjail.workspace.paths import os_message, relative, show
from lackjail.workspace.protect import Protection
from lackjail.workspace.staging import StagingArea
from lackjail.workspace.textdiff import unified

MAX_FILE_BYTES = 16 << 20  # one file read or written by a tool
MAX_MATCHES = 10_000  # paths find_files returns
MAX_WALK_ENTRIES = 500_000  # directory entries one find_files may look at
MAX_DIFF_BYTES = 32 << 20  # files before and after one dry-run diff reads and compares
READ_ONLY = "the workspace is read-only for this run (policy tools.workspace_writable = false)"
_DIR_READ = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Workspace:
    """The workspace root (held open) and the writes staged by one run (one Workspace per run)."""

    def __init__(
        self, root=None, staging: StagingArea | None = None, protection: Protection | None = None
    ):
        self.root_dir = root if isinstance(root, Root) else Root(root)
        self.root = self.root_dir.path
        self.tree = self.root_dir.tree
        self.owner = self.root_dir.owner
        self.protect(protection or Protection())
        self.staging = staging or StagingArea()
        self._staged: dict[str, str] = {}  # rel path -> staging key
        self._seen: dict[str, tuple | None] = {}  # rel path -> identity when first read or staged
        self._lock = threading.RLock()
        self.recovered = committing.recover(self.tree, self.owner)

    def protect(self, protection: Protection) -> None:
        """Check this workspace's accesses against PROTECTION, with the workspace's own rules."""
        self.protection = protection.bound(
            functools.partial(local_rules, self.tree), functools.partial(in_git_dir, self.tree)
        )

    def view(self, budget, writable: bool) -> WorkspaceView:
        return WorkspaceView(self, budget, writable)

    def locate(self, path) -> str:
        """The canonical workspace-relative path a program's PATH names (checked, in-tree)."""
        return locate(self.tree, relative(self.root, path), path)

    def staged_paths(self) -> list[str]:
        with self._lock:
            return sorted(self._staged)

    def staged_bytes(self, rel: str) -> bytes | None:
        # the staging folder is the controller's own (0700): read as the controller, also
        # inside a block acting as the workspace's owner
        with self._lock, self.owner.as_controller():
            key = self._staged.get(rel)
            return None if key is None else self.staging.read(key)

    def saw(self, rel: str, info) -> None:
        """Remember what REL looked like the first time this run read or staged it."""
        with self._lock:
            self._seen.setdefault(rel, identity(info))

    def merge(self, view: WorkspaceView) -> list[str]:
        """Stage a finished call's writes, verifying each by reading it back; all or none."""
        if not view.pending:
            return []
        with self._lock, self.owner.as_controller():  # the staging folder is ours (0700)
            new: dict[str, str] = {}
            try:
                for rel, data in view.pending.items():
                    new[rel] = self.staging.write(data)
                    if self.staging.read(new[rel]) != data:
                        raise ToolCallError(
                            f"write verification failed for {show(rel)}: the staged copy read back "
                            "differs from what was written; nothing was written"
                        )
                view.budget.charge_write(sum(len(d) for d in view.pending.values()))
            except BaseException as exc:
                for key in new.values():
                    self.staging.discard(key)
                if isinstance(exc, OSError):
                    raise ToolCallError(f"cannot stage the write: {exc.strerror or exc}") from None
                raise
            for rel, key in new.items():
                old = self._staged.get(rel)
                if old is not None:
                    self.staging.discard(old)
                self._staged[rel] = key
            return list(new)

    def diff(self) -> str:
        """A unified diff of the staged writes against the workspace, for --dry-run; past
        MAX_DIFF_BYTES of files before and after, a file is named, not read or diffed."""
        out, left = [], MAX_DIFF_BYTES
        for rel in self.staged_paths():
            data = self.staged_bytes(rel)
            if data is None:  # unstaged since staged_paths() was read
                continue
            old, source = [], "/dev/null"
            try:
                if len(data) > left:
                    raise FileTooLarge(rel)
                with self.owner.acting():
                    before, _ = read_regular(self.tree, rel, left - len(data), rel)
                left -= len(before)
                old = before.decode("utf-8", "replace").splitlines(keepends=True)
                source = f"a/{rel}"
            except FileTooLarge:
                out.append(
                    f"# {rel}: not shown: a dry-run diff shows at most {MAX_DIFF_BYTES} bytes "
                    "of files before and after\n"
                )
                continue
            except ToolCallError as exc:
                if "no such file" not in str(exc):
                    out.append(f"# {exc}\n")
            left -= len(data)
            new = data.decode("utf-8", "replace").splitlines(keepends=True)
            for line in unified(old, new, source, f"b/{rel}"):
                out.append(
                    line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                )
        return "".join(out)

    def commit(self, fault=None) -> list[str]:
        """Apply the staged writes all or none; the paths written (CommitError says why not)."""
        with self._lock:
            targets = [
                committing.Target(
                    rel, self.staging.read(key), self._seen.get(rel, committing.UNSEEN)
                )
                for rel, key in self._staged.items()
            ]
            written = committing.commit(self.tree, self.owner, self.protection, targets, fault)
            self._staged.clear()
            self.staging.close()
            return written

    def rollback(self) -> None:
        """Drop every staged write; the workspace was never touched."""
        with self._lock:
            self._staged.clear()
            self.staging.close()

    def close(self) -> None:
        """Drop the staged writes. The workspace's descriptor is closed with the last reference
        to it, never here: a tool call abandoned at its timeout may still be using it, and a
        closed descriptor's number can be reused by any other open."""
        self.rollback()


class WorkspaceView:
    """One tool call's access to the workspace; its writes wait until the session merges them."""

    def __init__(self, workspace: Workspace, budget, writable: bool):
        self.workspace = workspace
        self.budget = budget
        self.writable = writable
        self.pending: dict[str, bytes] = {}
        self.closed = False

    @property
    def root(self) -> str:
        return self.workspace.root

    def close(self) -> None:
        """Cut off a timed-out call: later reads and writes fail, its writes are never merged."""
        self.closed = True

    def _check_open(self):
        if self.closed:
            raise ToolCallError("this tool call was cancelled after its timeout")

    def read_bytes(self, path) -> bytes:
        """The current bytes of PATH: this call's pending write, else the run's staged one, else
        the file."""
        self._check_open()
        ws = self.workspace
        with ws.owner.acting():
            rel = ws.locate(path)
            ws.protection.check_read(rel, path)
            allowance = self.budget.read_allowance()
            limit = min(MAX_FILE_BYTES, allowance)
            data = self.pending.get(rel)
            if data is None:
                data = ws.staged_bytes(rel)
            try:
                if data is None:
                    data, info = read_regular(ws.tree, rel, limit, path)
                    ws.saw(rel, info)
                elif len(data) > limit:
                    raise FileTooLarge(path)
            except FileTooLarge:
                if allowance < MAX_FILE_BYTES:
                    raise LimitExceeded(
                        f"reading {show(path)} would pass the run's read budget of "
                        f"{self.budget.max_read} bytes (policy limits.read_bytes)"
                    ) from None
                raise ToolCallError(
                    f"{show(path)} is larger than {MAX_FILE_BYTES} bytes, the cap for one file"
                ) from None
        self._check_open()
        self.budget.charge_read(len(data))
        return data

    def write_bytes(self, path, data: bytes) -> None:
        """Stage DATA for PATH in this call (checked now, verified when merged)."""
        self._check_open()
        if not self.writable:
            raise ToolDenied(READ_ONLY)
        ws = self.workspace
        with ws.owner.acting():
            rel = ws.locate(path)
            ws.protection.check_write(rel, path)
            if len(data) > MAX_FILE_BYTES:
                raise ToolCallError(
                    f"content for {show(path)} is {len(data)} bytes, over the "
                    f"{MAX_FILE_BYTES}-byte cap for one file"
                )
            if rel not in self.pending and ws.staged_bytes(rel) is None:
                ws.saw(rel, stat_target(ws.tree, rel, path))
        others = sum(len(d) for r, d in self.pending.items() if r != rel)
        self.budget.check_write(others + len(data))
        self.pending[rel] = data

    def find(self, pattern_text) -> list[str]:
        """Workspace-relative paths of the files (staged ones included) matching a glob pattern."""
        self._check_open()
        pattern = PathGlob(pattern_text)
        with self.workspace.owner.acting():
            found = self._walk(pattern)
        found.update(
            rel for rel in [*self.workspace.staged_paths(), *self.pending] if pattern.matches(rel)
        )
        if len(found) > MAX_MATCHES:
            raise ToolCallError(
                f"pattern {show(pattern_text)} matches more than {MAX_MATCHES} files; narrow it"
            )
        return sorted(found)

    def list_dir(self, path) -> list[str]:
        """The names in folder PATH ("." is the workspace), folders with a trailing '/',
        files this run staged there included; read rules apply to the folder itself."""
        self._check_open()
        ws = self.workspace
        with ws.owner.acting():
            rel = "" if path in (".", "./", "") else ws.locate(path)
            if rel:
                ws.protection.check_read(rel, path)
            try:
                dirfd = ws.tree.open(rel, _DIR_READ)
            except OSError as exc:
                raise ToolCallError(os_message(exc, path)) from None
            try:
                names = set()
                for entry in os.scandir(dirfd):
                    if len(names) >= MAX_MATCHES:
                        raise ToolCallError(
                            f"{show(path)} holds more than {MAX_MATCHES} entries; use find_files"
                        )
                    folder = entry.is_dir(follow_symlinks=False)
                    names.add(entry.name + "/" if folder else entry.name)
            finally:
                os.close(dirfd)
        prefix = rel + "/" if rel else ""
        for staged in [*ws.staged_paths(), *self.pending]:
            if staged.startswith(prefix):
                head, _, rest = staged[len(prefix) :].partition("/")
                names.add(head + "/" if rest else head)
        return sorted(names)

    def _walk(self, pattern: PathGlob) -> set[str]:
        """The files on disk matching PATTERN, never via a symlink. A folder waiting to be walked
        is kept as its path and opened (beneath the workspace) only when its turn comes: one
        descriptor at a time, however wide and deep a hostile tree is."""
        found, seen = set(), 0
        stack = [("", pattern.start)]
        tree = self.workspace.tree
        while stack:
            rel_dir, states = stack.pop()
            try:
                dirfd = tree.open(rel_dir, _DIR_READ)
            except OSError:  # gone, unreadable, or a symlink now
                continue
            try:
                entries = list(os.scandir(dirfd))
            except OSError:
                entries = []
            finally:
                os.close(dirfd)
            for entry in entries:
                seen += 1
                if seen > MAX_WALK_ENTRIES:
                    raise ToolCallError(
                        f"find_files looked at {MAX_WALK_ENTRIES} entries without "
                        "finishing; narrow the pattern"
                    )
                if seen % 1024 == 0:
                    self._check_open()
                after = pattern.step(states, entry.name)
                if not after:
                    continue
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((rel, after))
                elif pattern.is_match(after) and self._is_file(rel, entry):
                    found.add(rel)
        return found

    def _is_file(self, rel: str, entry) -> bool:
        if not entry.is_symlink():
            return entry.is_file(follow_symlinks=False)
        try:  # a symlink counts when it leads to a regular file inside the workspace
            return stat_target(self.workspace.tree, self.workspace.locate(rel), rel) is not None
        except ToolCallError:
            return False
