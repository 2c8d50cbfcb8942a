"""The child's own confinement, applied after fork and before any program runs:
rlimits, then a seccomp filter (layer (d) of DESIGN.md's defence in depth).

The zygote builds the filter once with pyseccomp and keeps the compiled
BPF; each child installs those bytes with one prctl, which costs microseconds
where libseccomp's load recompiles for about a millisecond.
"""

import ctypes
import errno
import os
import resource
import sys
import types

# pyseccomp finds its libraries with ctypes.util.find_library, which runs
# `/sbin/ldconfig -p` in a subprocess (a binary the jail would have to hold)
# and imports shutil and subprocess (a tenth of the zygote's start-up). The
# sonames are fixed: the dynamic loader finds them on LD_LIBRARY_PATH (the
# image sets it) or through ld.so.cache. A stand-in module answers instead.
_SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}
_util = types.ModuleType("ctypes.util")
_util.find_library = _SONAMES.get
_saved = sys.modules.get("ctypes.util")
sys.modules["ctypes.util"] = ctypes.util = _util
try:
    import pyseccomp as seccomp
finally:
    if _saved is None:
        del sys.modules["ctypes.util"]
        del ctypes.util
    else:
        sys.modules["ctypes.util"] = ctypes.util = _saved

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


PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_libc = ctypes.CDLL(None, use_errno=True)


def build_filter() -> bytes:
    """The child's filter as BPF: allow-list, kill the dangerous, EPERM the rest."""
    flt = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
    for name in ALLOWED:
        flt.add_rule(seccomp.ALLOW, name)
    for name in KILLED:
        flt.add_rule(seccomp.KILL_PROCESS, name)
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as src:
        with os.fdopen(write_fd, "wb") as out:
            flt.export_bpf(out)
        return src.read()


def prepare_filter(bpf: bytes):
    """The prctl argument for BPF, made once in the zygote and inherited by each child."""
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    return buf, _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))


def install_filter(prepared) -> None:
    """Load a prepared filter into this process; irrevocable. Raises OSError."""
    _, prog = prepared
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def set_limits(memory_mb: int, cpu_s: int, nofile: int = 8) -> None:
    """Per-run rlimits: address space, CPU seconds, no files, no processes, no core."""
    mem = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
