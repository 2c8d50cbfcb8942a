"""Acting as the workspace's owner: the kernel's permission checks apply to host file tools.

When the controller runs as root, each file operation on the workspace runs
with the filesystem identity (fsuid/fsgid) of the workspace root's owner, set
per thread with setfsuid/setfsgid: root's capabilities to override
permissions and ownership are off for that thread meanwhile, so the kernel
refuses what the owner could not do. Not root: nothing changes, the kernel
already checks as us. Limit: the supplementary groups stay the process's own.
"""

from __future__ import annotations

import contextlib
import ctypes
import os

_libc = ctypes.CDLL(None, use_errno=True)


def _set(uid: int, gid: int) -> tuple[int, int]:
    """Set this thread's fsuid/fsgid; the previous pair (the calls return it)."""
    # setfsgid first: once fsuid is not 0 the thread may no longer change its fsgid freely
    old_gid = _libc.setfsgid(ctypes.c_uint(gid))
    old_uid = _libc.setfsuid(ctypes.c_uint(uid))
    return old_uid, old_gid


class Owner:
    """The identity file access uses: the owner of the workspace root when we are root."""

    def __init__(self, root_fd: int):
        info = os.fstat(root_fd)
        self.uid, self.gid = info.st_uid, info.st_gid
        self.switch = os.geteuid() == 0 and self.uid != 0

    @classmethod
    def of(cls, root: str) -> Owner:
        """The owner of the workspace folder ROOT (a real path, see `workspace_root`)."""
        fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            return cls(fd)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def acting(self):
        """Run the block with the owner's fsuid/fsgid in this thread (a no-op unless root)."""
        if not self.switch:
            yield
            return
        before = _set(self.uid, self.gid)
        try:
            yield
        finally:
            _set(*before)  # nested blocks give back what they found

    @contextlib.contextmanager
    def as_controller(self):
        """Back to our own identity for one step: an fchown by descriptor, the private journal."""
        if not self.switch:
            yield
            return
        before = _set(os.geteuid(), os.getegid())
        try:
            yield
        finally:
            _set(*before)
