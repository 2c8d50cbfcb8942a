"""Layer (d) in the real nsjail, read from /proc while the spares wait for a run: every
child has its own rlimits, no_new_privs and the host-built seccomp filter stacked on
nsjail's before it says `ready`; the zygote, which never runs a program, has none of the
child's limits (so they are the child's own, not inherited)."""

import os
import time

import psutil
import pytest

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


@pytest.mark.parametrize("log", ["pipe", "file"])
def test_a_child_whose_filter_the_kernel_refuses_exits_70(tmp_path, log):
    """The failure path runs after lazy imports are off and the rlimits are set (a log
    that is a file takes no more bytes): it must still end the child with exit 70 before
    it says `ready`, never raise on into the zygote's own code, and say why where it can.
    Run in a forked copy of this process, outside the jail."""
    from lackjail.worker import confine, zygote

    cfg = {
        "memory_mb": 4096,
        "cpu_s": 5,
        "output_bytes": 1 << 20,
        "value_bytes": 8 << 20,
        "runs_per_child": 1,
        "spares": 1,
    }
    refused = confine.prepare_filter(b"\xff\xff" + bytes(6))  # an opcode no kernel takes
    if log == "pipe":
        log_r, log_w = os.pipe()
    else:
        log_r, log_w = -1, os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT, 0o600)
    run_in, to_child = os.pipe()
    from_child, run_out = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(log_w, 2)
            zygote.child(cfg, refused, 1, run_in, run_out)
        finally:
            os._exit(99)
    for fd in (run_in, to_child, run_out, log_w):
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(from_child, "rb") as channel:
        assert channel.read() == b""  # never said `ready`
    assert os.waitstatus_to_exitcode(status) == 70
    if log == "pipe":
        with os.fdopen(log_r, "rb") as said:
            assert b"OSError: [Errno 22] prctl(PR_SET_SECCOMP) failed at " in said.read()
