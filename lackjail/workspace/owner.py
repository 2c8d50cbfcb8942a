"""Acting as the workspace's owner: the kernel's permission checks apply to host file tools.

When the controller runs as root, each file operation on the workspace runs
with the filesystem identity (fsuid/fsgid) of the workspace root's owner, set
per thread with setfsuid/setfsgid, and with the owner's supplementary groups
(root's own, often several in a container, would lend their access): root's
capabilities to override permissions and ownership are off for that thread
meanwhile, so the kernel refuses what the owner could not do. Not root:
nothing changes, the kernel already checks as us. Limit: on a machine whose
setgroups syscall number is not known here (not x86_64, aarch64 or riscv64)
the supplementary groups stay the process's own.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd

_libc = ctypes.CDLL(None, use_errno=True)
# setgroups as a raw syscall: glibc's wrapper changes the groups of every thread of the process
_SYS_SETGROUPS = {"x86_64": 116, "aarch64": 159, "riscv64": 159}.get(os.uname().machine)


def _set(uid: int, gid: int) -> tuple[int, int]:
    """Set this thread's fsuid/fsgid; the previous pair (the calls return it)."""
    # setfsgid first: once fsuid is not 0 the thread may no longer change its fsgid freely
    old_gid = _libc.setfsgid(ctypes.c_uint(gid))
    old_uid = _libc.setfsuid(ctypes.c_uint(uid))
    return old_uid, old_gid


def _set_groups(groups: list[int]) -> None:
    """Set this thread's supplementary groups; OSError."""
    array = (ctypes.c_uint * len(groups))(*groups)
    if _libc.syscall(ctypes.c_long(_SYS_SETGROUPS or -1), ctypes.c_size_t(len(groups)), array) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setgroups: {os.strerror(err)}")


def _groups_of(uid: int, gid: int) -> list[int]:
    """The supplementary groups of user UID (GID alone for a uid with no account)."""
    try:
        return os.getgrouplist(pwd.getpwuid(uid).pw_name, gid)
    except KeyError:
        return [gid]


class Owner:
    """The identity file access uses: the owner of the workspace root when we are root."""

    def __init__(self, root_fd: int):
        info = os.fstat(root_fd)
        self.uid, self.gid = info.st_uid, info.st_gid
        self.switch = os.geteuid() == 0 and self.uid != 0
        self.groups = _groups_of(self.uid, self.gid) if self.switch and _SYS_SETGROUPS else None

    @contextlib.contextmanager
    def acting(self):
        """Run the block with the owner's fsuid/fsgid in this thread (a no-op unless root)."""
        if not self.switch:
            yield
            return
        groups = os.getgroups()  # this thread's: the kernel keeps credentials per thread
        if self.groups is not None:
            _set_groups(self.groups)
        before = _set(self.uid, self.gid)
        try:
            yield
        finally:
            _set(*before)  # nested blocks give back what they found
            if self.groups is not None:
                _set_groups(groups)

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
