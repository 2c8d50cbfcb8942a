"""The child's own confinement, applied after fork and before any program runs:
rlimits, then a seccomp filter (layer (d) of DESIGN.md's defence in depth).

pyseccomp is imported by the zygote at start: it locates libseccomp by opening
files, which the filter forbids afterwards.
"""

import errno
import resource

import pyseccomp as seccomp

# What a running program legitimately needs: I/O on its own two descriptors,
# memory, signals, clocks and exit.
ALLOWED = (
    "read", "write", "readv", "writev", "close", "lseek", "fstat", "newfstatat",
    "mmap", "munmap", "mremap", "brk", "madvise", "mprotect",
    "futex", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
    "clock_gettime", "clock_getres", "gettimeofday", "getrusage", "sched_yield",
    "getpid", "gettid", "restart_syscall", "exit", "exit_group",
)
# Never needed, and a sign of an escape: the process dies (verdict "denied").
KILLED = (
    "open", "openat", "openat2", "creat", "execve", "execveat",
    "fork", "vfork", "clone", "clone3", "socket", "socketpair", "connect", "bind",
    "listen", "accept", "accept4", "ptrace", "kill", "tkill", "tgkill", "mknod", "mknodat",
    "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
    "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat",
    "setrlimit", "prlimit64", "setuid", "setgid", "setreuid", "setregid", "setresuid",
    "setresgid", "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "process_vm_readv", "process_vm_writev", "memfd_create", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "keyctl", "add_key", "request_key", "seccomp", "prctl",
)


def build_filter() -> "seccomp.SyscallFilter":
    """The child's filter: allow-list, kill the dangerous, EPERM everything else."""
    flt = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
    for name in ALLOWED:
        flt.add_rule(seccomp.ALLOW, name)
    for name in KILLED:
        flt.add_rule(seccomp.KILL_PROCESS, name)
    return flt


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
