"""Staged file contents of one run, in a private (0700) temporary folder, keyed by opaque names.

Subclass it to hook the file system under staging (tests simulate a disk
that returns different bytes than were written).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref


class StagingArea:
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
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self._dir, key))

    def close(self) -> None:
        if self._cleanup is not None:
            self._cleanup()
        self._dir = self._cleanup = None
