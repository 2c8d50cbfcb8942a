"""Landlock: the `landlock` isolation level's confinement of a zygote (and so of every
child it forks), for hosts where namespaces cannot be made.

A ruleset handles every file access right the kernel knows (its ABI version says
which), TCP bind and connect (ABI 4) and signals and abstract sockets outside the
domain (ABI 6); the rules then allow reading only the files and folders given and
everything beneath one private folder. Ptrace of a process outside the domain is
refused by Landlock at every ABI. As root, the process first gives up every
capability, for good: uid 0 with none is an ordinary owner of root's files, which
Landlock still confines.

Called through libc's syscall(2), built from _ctypes as lackjail.worker.libc does. (The
`landlock` package on the package index, 1.0.0.dev5, is an alpha covering files only, no
TCP rules or scopes, and brings ctypes and enum into the jail.)
"""

import _ctypes
import os
import struct

from lackjail.worker import confine as confinement
from lackjail.worker import libc

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_ABI1 = (1 << 13) - 1  # execute ... make_sym: the thirteen rights of ABI 1
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # a file's rule
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 28, 47, 4
SECURE_NOROOT_LOCKED = 0b11101111  # noroot, no_setuid_fixup, no_ambient_raise (+ locks)
CAPABILITY_V3 = 0x20080522


class c_long(_ctypes._SimpleCData):
    _type_ = "l"


_syscall = libc.function("syscall")
_capset = libc.function("capset")


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (or it is disabled)."""
    version = _syscall(c_long(CREATE_RULESET), libc.c_void_p(None), c_long(0), c_long(1))
    return max(version, 0)


def handled(version: int) -> tuple[int, int, int]:
    """(file rights, network rights, scopes) a ruleset of ABI VERSION handles."""
    fs = FS_ABI1 | (REFER if version >= 2 else 0) | (TRUNCATE if version >= 3 else 0)
    fs |= IOCTL_DEV if version >= 5 else 0
    net = NET_BIND_TCP | NET_CONNECT_TCP if version >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    return fs, net, scoped


def confine(readable, writable) -> int:
    """Confine this process, and all it forks, for good: read (and execute) only the paths
    in READABLE, anything but execute beneath the folders in WRITABLE, no TCP, no signal or
    abstract socket out of the domain. Returns the ABI version used. Raises OSError."""
    version = abi_version()
    if version < 1:
        raise OSError(libc.get_errno(), "Landlock is not available on this kernel")
    if os.geteuid() == 0:
        drop_capabilities()
    fs, net, scoped = handled(version)
    attr = struct.pack("=QQQ", fs, net, scoped)[: 8 if version < 4 else 16 if version < 6 else 24]
    buf = libc.char_array(attr)
    ruleset = _call(CREATE_RULESET, libc.addressof(buf), len(attr), 0)
    try:
        for path in readable:
            _allow(ruleset, path, fs & (EXECUTE | READ_FILE | READ_DIR))
        for path in writable:
            _allow(ruleset, path, fs & ~EXECUTE)  # nothing written there can be run
        confinement.set_no_new_privs()
        _call(RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return version


def _allow(ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if (os.fstat(fd).st_mode & 0o170000) != 0o040000:  # not a folder: a file's rights
            access &= FILE_RIGHTS
        rule = libc.char_array(struct.pack("=Qi", access, fd))
        _call(ADD_RULE, ruleset, RULE_PATH_BENEATH, libc.addressof(rule), 0)
    finally:
        os.close(fd)


def _call(number: int, *args: int) -> int:
    result = _syscall(c_long(number), *(c_long(a) for a in args))
    if result < 0:
        err = libc.get_errno()
        raise OSError(err, f"landlock syscall {number}: {os.strerror(err)}")
    return result


def drop_capabilities() -> None:
    """Give up every capability for good: the bounding and ambient sets emptied, uid 0
    gaining none back at an exec (securebits, locked, where allowed), then none effective,
    permitted or inheritable. Raises OSError when the last step fails."""
    with open("/proc/sys/kernel/cap_last_cap", "rb") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    # needs CAP_SETPCAP, which a container may have dropped: no_new_privs (set in confine,
    # before any exec) already keeps an exec from giving uid 0 its capabilities back
    libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_LOCKED, 0, 0, 0)
    header = libc.char_array(struct.pack("=Ii", CAPABILITY_V3, 0))
    data = libc.char_array(bytes(24))  # two of {effective, permitted, inheritable}: none
    if _capset(libc.c_void_p(libc.addressof(header)), libc.c_void_p(libc.addressof(data))) != 0:
        raise OSError(libc.get_errno(), "capset failed")
