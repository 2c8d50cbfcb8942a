"""The children's seccomp filter, read as the kernel reads it: every syscall number of every
architecture is run through the BPF that `child_filter()` hands the zygote, and the action
must be the rule tables' (ALLOWED runs, KILLED kills the process, anything else EPERM,
another ABI kills). Its binary-tree layout (cheaper to install) must decide exactly as
libseccomp's plain layout of the same rules does."""

import errno
import struct

import pyseccomp as seccomp
import pytest

from lackjail.pool.syscall_filter import ALLOWED, KILLED, child_filter

PLAIN = 1  # libseccomp's CTL_OPTIMIZE for the plain (priority-ordered) layout

ARCH_X86_64, ARCH_I386 = 0xC000003E, 0x40000003
X32_BIT = 0x40000000
RET_ALLOW, RET_KILL_PROCESS, RET_KILL_THREAD = 0x7FFF0000, 0x80000000, 0x00000000
RET_EPERM = 0x00050000 | errno.EPERM
NUMBERS = range(1024)  # every x86_64 syscall number is below this


def run_bpf(bpf: bytes, nr: int, arch: int) -> tuple[int, int]:
    """(action, instructions executed) for seccomp_data {nr, arch, ip 0, args 0}.

    Only the classic BPF that libseccomp emits for rules without argument checks is
    understood; anything else fails the test instead of being guessed at."""
    data = struct.pack("<iI", nr, arch) + bytes(8 + 6 * 8)
    prog = [struct.unpack("<HBBI", bpf[i : i + 8]) for i in range(0, len(bpf), 8)]
    acc, pc, steps = 0, 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        steps += 1
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code == 0x06:  # ret k
            return k, steps
        elif code == 0x05:  # ja k
            pc += 1 + k
        elif code in (0x15, 0x25, 0x35, 0x45):  # jeq, jgt, jge, jset k
            taken = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x54:  # and k
            acc &= k
            pc += 1
        else:
            raise AssertionError(f"unexpected BPF opcode {code:#x} at {pc}")


def _expected(nr: int) -> int:
    return EXPECTED.get(nr, RET_EPERM)


def _numbers(names) -> dict:
    found = {}
    for name in names:
        nr = seccomp.resolve_syscall(seccomp.Arch.X86_64, name)
        if nr >= 0:  # a name this ABI lacks (e.g. fork on some) has no number
            found[nr] = name
    return found


EXPECTED = {
    **{nr: RET_ALLOW for nr in _numbers(ALLOWED)},
    **{nr: RET_KILL_PROCESS for nr in _numbers(KILLED)},
}


def test_every_x86_64_syscall_gets_the_rule_tables_action():
    bpf = child_filter()
    assert {_numbers(["openat"]).popitem()[0], _numbers(["clone"]).popitem()[0]} <= set(EXPECTED)
    for nr in NUMBERS:
        assert run_bpf(bpf, nr, ARCH_X86_64)[0] == _expected(nr), nr


def test_the_filter_kills_what_a_child_must_never_do():
    bpf = child_filter()
    for name in ("fork", "vfork", "clone", "clone3", "execve", "socket", "openat", "prctl"):
        nr = seccomp.resolve_syscall(seccomp.Arch.X86_64, name)
        assert run_bpf(bpf, nr, ARCH_X86_64)[0] == RET_KILL_PROCESS, name


@pytest.mark.parametrize(
    "arch, offset", [(ARCH_I386, 0), (ARCH_X86_64, X32_BIT)], ids=["i386", "x32"]
)
def test_other_abis_are_killed(arch, offset):
    bpf = child_filter()
    for nr in NUMBERS:
        assert run_bpf(bpf, nr + offset, arch)[0] in (RET_KILL_THREAD, RET_KILL_PROCESS), nr


def test_the_tree_layout_decides_as_the_plain_layout_in_fewer_steps():
    tree, plain = child_filter(), child_filter(PLAIN)
    assert tree != plain
    worst_tree = worst_plain = 0
    for arch, offset in ((ARCH_X86_64, 0), (ARCH_X86_64, X32_BIT), (ARCH_I386, 0)):
        for nr in NUMBERS:
            action, steps = run_bpf(tree, nr + offset, arch)
            assert action == run_bpf(plain, nr + offset, arch)[0], (arch, nr + offset)
            worst_tree = max(worst_tree, steps)
            worst_plain = max(worst_plain, run_bpf(plain, nr + offset, arch)[1])
    # what makes the install cheap: the kernel runs the filter once per number to fill
    # its action cache, so the path length is the cost
    assert worst_tree * 4 < worst_plain, (worst_tree, worst_plain)
