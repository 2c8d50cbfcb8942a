"""The seccomp filter every child installs before a program runs, compiled on the host.

pyseccomp (libseccomp) compiles the rules below to BPF here, once per process (a one-shot
command takes the bytes the previous one compiled from the same rules: `early`);
the zygote receives only the bytes, in the configuration it already gets, and
each child loads them with one prctl (lackjail/worker/confine.py). So the jail
holds no pyseccomp, libseccomp, typing or weakref: a smaller zygote, whose
children copy fewer pages.
"""

from __future__ import annotations

import errno
import functools
import os
import sys

from lackjail.pool import early

# What a running program legitimately needs: I/O on its own two descriptors,
# memory, signals, clocks (and the run's CPU timer) and exit.
ALLOWED = (
    "read",
    "write",
    "readv",
    "writev",
    "close",
    "lseek",
    "fstat",
    "newfstatat",
    "mmap",
    "munmap",
    "mremap",
    "brk",
    "madvise",
    "mprotect",
    "futex",
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "getrusage",
    "setitimer",
    "getitimer",
    "sched_yield",
    "getpid",
    "getrandom",  # os.urandom: uuid.uuid4, a seed
    "clock_nanosleep",  # time.sleep: it counts against the run's wall-clock limit
    "nanosleep",
    "gettid",
    "restart_syscall",
    "exit",
    "exit_group",
    "poll",
    "ppoll",
)
# Never needed, and a sign of an escape: the process dies (verdict "denied").
KILLED = (
    "open",
    "openat",
    "openat2",
    "creat",
    "execve",
    "execveat",
    "fork",
    "vfork",
    "clone",
    "clone3",
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "ptrace",
    "kill",
    "tkill",
    "tgkill",
    "mknod",
    "mknodat",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "setrlimit",
    "prlimit64",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "process_vm_readv",
    "process_vm_writev",
    "memfd_create",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "keyctl",
    "add_key",
    "request_key",
    "seccomp",
    "prctl",
)


# libseccomp's binary-tree layout: the same rules, but a syscall number meets ~15 instructions
# instead of ~98 (mean) in a row. Installing a filter, the kernel runs it once per syscall
# number to fill its action cache, so the path length is the install's cost: ~105 -> ~40 us
# in C outside the jail, ~160 -> ~105 us for the child's whole install step in the jail.
BINARY_TREE = 2


@functools.cache
def child_filter(layout: int = BINARY_TREE) -> bytes:
    """The child's filter as BPF: allow-list, kill the dangerous, EPERM the rest.
    LAYOUT is libseccomp's CTL_OPTIMIZE (1: the plain layout, which tests compare). A
    one-shot command takes the one the previous command compiled from the same rules for the
    same machine (`early.remembered`)."""
    key = filter_key(layout)
    kept = early.remembered("child-filter", key)
    try:
        bpf = bytes.fromhex(kept) if isinstance(kept, str) else b""
    except ValueError:
        bpf = b""
    if not bpf or len(bpf) % 8:  # whole instructions, or compiled again
        bpf = _compile(layout)
        early.remember("child-filter", key, bpf.hex())
    return bpf


def filter_key(layout: int) -> str:
    """Everything the filter's bytes follow from: the rules, the default action, the layout,
    and the machine (its system call numbers)."""
    machine = f"{os.uname().machine} {sys.byteorder}"
    return repr((ALLOWED, KILLED, errno.EPERM, layout, machine))


def _compile(layout: int) -> bytes:
    seccomp = _pyseccomp()
    flt = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
    flt.set_attr(seccomp.Attr.CTL_OPTIMIZE, layout)
    for name in ALLOWED:
        flt.add_rule(seccomp.ALLOW, name)
    for name in KILLED:
        flt.add_rule(seccomp.KILL_PROCESS, name)
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as src:
        with os.fdopen(write_fd, "wb") as out:
            flt.export_bpf(out)
        return src.read()


# The libraries pyseccomp looks up when imported, by their sonames on glibc systems.
SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}


def _pyseccomp():
    """pyseccomp, imported with the libraries it looks up found by soname: its two
    `find_library` calls each ran `ldconfig -p` (a fork and exec of this process) at every
    start of a jail's first pool. A soname that does not load is looked up as before."""
    import ctypes
    import ctypes.util

    look_up = ctypes.util.find_library

    def find(name):
        soname = SONAMES.get(name)
        if soname is not None:
            try:
                ctypes.CDLL(soname)
                return soname
            except OSError:
                pass
        return look_up(name)

    ctypes.util.find_library = find
    try:
        import pyseccomp
    finally:
        ctypes.util.find_library = look_up
    return pyseccomp
