"""A run's transaction on the workspace: confined reads, staged writes, atomic commit.

Writes never touch the workspace during a run. A tool call writes into its
own `WorkspaceView`; when the call succeeds the session merges those writes
into the run's staging area, reading each back and comparing (write
verification). A failed or timed-out call's writes are dropped. Staged files
are visible to later reads, edits and find_files of the same run. `commit`
applies them all or none: every file goes to a temp file in its own
directory, is read back, and only then are they renamed into place.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
import threading
import weakref

from lackjail.errors import CommitError, LimitExceeded, ToolCallError, ToolDenied
from lackjail.workspace.pathglob import PathGlob
from lackjail.workspace.paths import (
    FileTooLarge,
    check_writable,
    existing_kind,
    inside,
    read_regular,
    resolve,
    show,
    workspace_root,
)

MAX_FILE_BYTES = 16 << 20  # one file read or written by a tool
MAX_MATCHES = 10_000  # paths find_files returns
MAX_WALK_ENTRIES = 500_000  # directory entries one find_files may look at
NEW_FILE_MODE = 0o644
READ_ONLY = "the workspace is read-only for this run (policy tools.workspace_writable = false)"


class StagingArea:
    """Staged contents in a private (0700) temporary directory, keyed by opaque names.

    Subclass it to hook the file system under staging (tests simulate a disk
    that returns different bytes than were written).
    """

    def __init__(self):
        self._dir = None
        self._count = 0
        self._cleanup = None

    def write(self, data: bytes) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="lackjail-stage-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._count += 1
        key = f"{self._count:08d}"
        fd = os.open(
            os.path.join(self._dir, key), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600
        )
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return key

    def read(self, key: str) -> bytes:
        with open(os.path.join(self._dir, key), "rb") as fh:
            return fh.read()

    def discard(self, key: str) -> None:
        try:
            os.unlink(os.path.join(self._dir, key))
        except FileNotFoundError:
            pass

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup()
        self._dir = self._cleanup = None


class Workspace:
    """The workspace root and the writes staged by one run (one Workspace per run)."""

    def __init__(self, root=None, staging: StagingArea | None = None):
        self.root = workspace_root(root)
        self.staging = staging or StagingArea()
        self._staged: dict[str, str] = {}  # rel path -> staging key
        self._lock = threading.RLock()

    def view(self, budget, writable: bool) -> WorkspaceView:
        return WorkspaceView(self, budget, writable)

    def staged_paths(self) -> list[str]:
        with self._lock:
            return sorted(self._staged)

    def staged_bytes(self, rel: str) -> bytes | None:
        with self._lock:
            key = self._staged.get(rel)
            return None if key is None else self.staging.read(key)

    def merge(self, view: WorkspaceView) -> list[str]:
        """Stage a finished call's writes, verifying each by reading it back; all or none."""
        if not view.pending:
            return []
        with self._lock:
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
        """A unified diff of the staged writes against the workspace, for --dry-run."""
        out = []
        for rel in self.staged_paths():
            new = self.staged_bytes(rel).decode("utf-8", "replace").splitlines(keepends=True)
            real = os.path.join(self.root, rel)
            old, source = [], "/dev/null"
            if os.path.lexists(real):
                try:
                    old = (
                        read_regular(real, MAX_FILE_BYTES, rel)
                        .decode("utf-8", "replace")
                        .splitlines(keepends=True)
                    )
                    source = f"a/{rel}"
                except ToolCallError as exc:
                    out.append(f"# {exc}\n")
            for line in difflib.unified_diff(old, new, source, f"b/{rel}"):
                out.append(
                    line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                )
        return "".join(out)

    def commit(self) -> list[str]:
        """Apply the staged writes atomically per file and all-or-none across files; the paths written.

        Confinement is checked again here (a symlink may have appeared since the
        write was staged). On any failure the temp files and new folders are
        removed, the workspace is as before and CommitError says why.
        """
        with self._lock:
            prepared, made = [], []
            try:
                for rel in sorted(self._staged):
                    data = self.staging.read(self._staged[rel])
                    real = self._target(rel)
                    made += _make_parents(self.root, os.path.dirname(real))
                    mode = (
                        os.stat(real).st_mode & 0o7777
                        if existing_kind(real, rel)
                        else NEW_FILE_MODE
                    )
                    fd, tmp = tempfile.mkstemp(
                        dir=os.path.dirname(real), prefix=".lackjail-", suffix=".tmp"
                    )
                    prepared.append((tmp, real, rel))
                    with os.fdopen(fd, "wb") as fh:
                        fh.write(data)
                        fh.flush()
                        os.fchmod(fh.fileno(), mode)
                        os.fsync(fh.fileno())
                    if read_regular(tmp, len(data), rel) != data:
                        raise CommitError(f"{show(rel)} read back differs from what was written")
            except (OSError, ToolCallError, CommitError) as exc:
                _undo(prepared, made)
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise CommitError(f"commit failed, nothing was written: {reason}") from None
            written = []
            for index, (tmp, real, rel) in enumerate(prepared):
                try:
                    os.replace(tmp, real)
                except OSError as exc:
                    _undo(prepared[index:], [])
                    raise CommitError(
                        f"commit stopped at {show(rel)} ({exc.strerror}); written before it: "
                        f"{', '.join(written) or 'nothing'}"
                    ) from None
                written.append(rel)
            for folder in {os.path.dirname(real) for _, real, _ in prepared}:
                _fsync_dir(folder)
            self._staged.clear()
            self.staging.close()
            return written

    def rollback(self) -> None:
        """Drop every staged write; the workspace was never touched."""
        with self._lock:
            self._staged.clear()
            self.staging.close()

    def _target(self, rel: str) -> str:
        real, now = resolve(self.root, rel)
        if now != rel:
            raise CommitError(
                f"{show(rel)} now resolves to {show(now)} (a symlink changed since the write was staged)"
            )
        check_writable(rel, rel)
        return real


def _make_parents(root: str, folder: str) -> list[str]:
    """Create the missing folders from ROOT down to FOLDER; the ones made, outermost first."""
    made, current = [], root
    for part in os.path.relpath(folder, root).split("/"):
        if part == ".":
            continue
        current = os.path.join(current, part)
        if not os.path.lexists(current):
            os.mkdir(current, 0o755)
            made.append(current)
    if os.path.realpath(folder) != folder or not inside(folder, root) or not os.path.isdir(folder):
        raise CommitError(
            f"folder {show(os.path.relpath(folder, root))} is not a plain folder inside the workspace"
        )
    return made


def _undo(prepared, made) -> None:
    for tmp, _, _ in prepared:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    for folder in reversed(made):
        try:
            os.rmdir(folder)
        except OSError:
            pass


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class WorkspaceView:
    """One tool call's access to the workspace; its writes stay pending until the session merges them."""

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
        """Cut off a call that timed out: its later reads and writes fail and its writes are never merged."""
        self.closed = True

    def _check_open(self):
        if self.closed:
            raise ToolCallError("this tool call was cancelled after its timeout")

    def read_bytes(self, path) -> bytes:
        """The current bytes of PATH: this call's pending write, else the run's staged one, else the file."""
        self._check_open()
        real, rel = resolve(self.root, path)
        allowance = self.budget.read_allowance()
        limit = min(MAX_FILE_BYTES, allowance)
        data = self.pending.get(rel)
        if data is None:
            data = self.workspace.staged_bytes(rel)
        try:
            if data is None:
                data = read_regular(real, limit, path)
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
        real, rel = resolve(self.root, path)
        check_writable(rel, path)
        if len(data) > MAX_FILE_BYTES:
            raise ToolCallError(
                f"content for {show(path)} is {len(data)} bytes, over the {MAX_FILE_BYTES}-byte cap for one file"
            )
        if rel not in self.pending and self.workspace.staged_bytes(rel) is None:
            existing_kind(real, path)
        others = sum(len(d) for r, d in self.pending.items() if r != rel)
        self.budget.check_write(others + len(data))
        self.pending[rel] = data

    def find(self, pattern_text) -> list[str]:
        """Workspace-relative paths of the files (staged ones included) that match a glob pattern."""
        self._check_open()
        pattern = PathGlob(pattern_text)
        found, seen = set(), 0
        stack = [("", self.root, pattern.start)]
        while stack:
            rel_dir, real_dir, states = stack.pop()
            try:
                entries = list(os.scandir(real_dir))
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > MAX_WALK_ENTRIES:
                    raise ToolCallError(
                        f"find_files looked at {MAX_WALK_ENTRIES} entries without finishing; narrow the pattern"
                    )
                if seen % 1024 == 0:
                    self._check_open()
                after = pattern.step(states, entry.name)
                if not after:
                    continue
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((rel, entry.path, after))
                elif pattern.is_match(after) and self._confined_file(entry):
                    found.add(rel)
        found.update(
            rel for rel in [*self.workspace.staged_paths(), *self.pending] if pattern.matches(rel)
        )
        if len(found) > MAX_MATCHES:
            raise ToolCallError(
                f"pattern {show(pattern_text)} matches more than {MAX_MATCHES} files; narrow it"
            )
        return sorted(found)

    def _confined_file(self, entry) -> bool:
        if not entry.is_symlink():
            return entry.is_file(follow_symlinks=False)
        real = os.path.realpath(entry.path)
        return inside(real, self.root) and os.path.isfile(real)
