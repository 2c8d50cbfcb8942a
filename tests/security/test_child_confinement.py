"""Layer (d) in the real nsjail, read from /proc while the spares wait for a run: every
child has its own rlimits, no_new_privs and the host-built seccomp filter stacked on
nsjail's before it says `ready`; the zygote, which never runs a program, has none of the
child's limits (so they are the child's own, not inherited)."""

import time

import psutil

from lackjail.api import Jail

TRIVIAL = "x = len([1, 2, 3])\nx"


def _status(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as fh:
        return {k: v.strip() for k, _, v in (line.partition(":") for line in fh)}


def _limits(pid: int) -> dict:
    """/proc/PID/limits as {name: (soft, hard)}."""
    with open(f"/proc/{pid}/limits") as fh:
        rows = fh.read().splitlines()[1:]
    return {row[:26].strip(): tuple(row[26:].split()[:2]) for row in rows}


def _ready_children(jail, zygote) -> list:
    """The zygote's children once every spare has said `ready` (and the child that ran
    has exited): then each child listed has confined itself."""
    spares = jail.policy.pool.spares
    deadline = time.monotonic() + 30
    while True:
        with jail.pool._cond:
            ready = sum(j.ready_count() for j in jail.pool._idle)
        children = zygote.children()
        if ready == spares and len(children) == spares:
            return children
        assert time.monotonic() < deadline, "the spares never became ready"
        time.sleep(0.02)


def test_every_ready_child_carries_its_own_rlimits_and_filter(require_nsjail):
    with Jail(workers=1) as jail:
        assert jail.run(TRIVIAL).value == 3
        (zygote,) = psutil.Process(jail.pool.pids()[0]).children()
        children = _ready_children(jail, zygote)
        limits = jail.policy.limits
        address_space = str(limits.memory_mb << 20)
        zygote_status, zygote_limits = _status(zygote.pid), _limits(zygote.pid)
        for child in children:
            status, child_limits = _status(child.pid), _limits(child.pid)
            assert status["NoNewPrivs"] == "1", child
            assert status["Seccomp"] == "2", child
            # nsjail's filter, inherited, plus the child's own
            assert int(status["Seccomp_filters"]) == int(zygote_status["Seccomp_filters"]) + 1
            assert child_limits["Max processes"] == ("0", "0")
            assert child_limits["Max file size"] == ("0", "0")
            assert child_limits["Max open files"] == ("8", "8")
            assert child_limits["Max core file size"] == ("0", "0")
            assert child_limits["Max address space"] == (address_space, address_space)
            assert child_limits["Max cpu time"] == (str(limits.cpu_s + 1), str(limits.cpu_s + 2))
            for name in ("Max processes", "Max open files", "Max address space", "Max cpu time"):
                assert zygote_limits[name] != child_limits[name], name
