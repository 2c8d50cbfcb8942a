"""The child's own confinement, applied after fork and before any program runs:
rlimits, then a seccomp filter (layer (d) of the defence in depth: ARCHITECTURE.md).

The filter arrives as compiled BPF in the zygote's configuration (built on the
host by lackjail/pool/syscall_filter.py); the zygote prepares the prctl
argument once and each child loads it with prctl.
"""

import resource

from lackjail.worker import libc

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
BPF_MAXINSNS = 4096  # the kernel refuses longer classic BPF programs


class _SockFprog(libc.Structure):
    _fields_ = [("len", libc.c_ushort), ("filter", libc.c_void_p)]


_prctl = libc.prctl  # looked up once, in the zygote, not by each child


def prepare_filter(bpf: bytes):
    """The prctl argument for BPF, made once in the zygote and inherited by each child.

    Raises ValueError for anything but whole 8-byte BPF instructions, 1 to
    BPF_MAXINSNS of them: a zygote with a broken filter must not start."""
    if not isinstance(bpf, bytes) or not bpf or len(bpf) % 8 or len(bpf) // 8 > BPF_MAXINSNS:
        raise ValueError("the seccomp filter is not a BPF program")
    buf = libc.char_array(bpf)
    prog = _SockFprog(len(bpf) // 8, libc.addressof(buf))
    return buf, prog, libc.byref(prog)


def set_no_new_privs() -> None:
    """No exec can gain privileges from here on; what lets an unprivileged process load a
    filter. Irrevocable. Raises OSError."""
    if _prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(libc.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def install_filter(prepared) -> None:
    """Load a prepared filter into this process; irrevocable. Raises OSError."""
    set_no_new_privs()  # inherited from the zygote, and set here again all the same
    if _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prepared[2], 0, 0) != 0:
        raise OSError(libc.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def set_limits(memory_mb: int, cpu_s: float, nofile: int = 8) -> None:
    """Per-run rlimits: address space, CPU seconds (whole ones: a fraction is rounded up, the
    runner's CPU timer keeps the fraction), no files, no processes, no core."""
    mem = memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    if cpu_s:
        cpu = int(-(-cpu_s // 1))  # rounded up: math.ceil, without one more library mapped
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
