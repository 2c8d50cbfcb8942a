"""Staged file contents of one run, in a private (0700) temporary folder, keyed by opaque names.

The folder is made by mkdtemp and held by descriptor; files in it are opened
beneath that descriptor. Subclass it to hook the file system under staging
(tests simulate a disk that returns different bytes than were written).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref

from lackjail.workspace.beneath import Tree
from lackjail.workspace.hostfs import open_at, read_fd, write_all


class StagingArea:
    def __init__(self):
        self._dir: str | None = None
        self._tree: Tree | None = None
        self._count = 0
        self._cleanup = None

    def write(self, data: bytes) -> str:
        if self._tree is None:
            self._dir = tempfile.mkdtemp(prefix="lackjail-stage-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._dir, True)
            self._tree = Tree(self._dir)
        self._count += 1
        key = f"{self._count:08d}"
        fd = open_at(self._tree.fd, key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        return key

    def read(self, key: str) -> bytes:
        if self._tree is None:  # nothing was staged
            raise FileNotFoundError(key)
        fd = open_at(self._tree.fd, key, os.O_RDONLY)
        try:
            return read_fd(fd)
        finally:
            os.close(fd)

    def discard(self, key: str) -> None:
        if self._tree is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(key, dir_fd=self._tree.fd)

    def close(self) -> None:
        if self._tree is not None:
            self._tree.close()
        if self._cleanup is not None:
            self._cleanup()
        self._dir = self._tree = self._cleanup = None
