"""The children's seccomp filter is compiled on the host and handed to the zygote as
bytes: the filter in force in a child is exactly those bytes, installed before a
run, and a zygote given anything but a BPF program does not start."""

import os
import time

import psutil
import pyseccomp as seccomp
import pytest

from lackjail.api import Jail
from lackjail.pool import isolation
from lackjail.pool.syscall_filter import ALLOWED, KILLED, child_filter

TRIVIAL = "x = len([1, 2, 3])\nx"


def _bpf(flt) -> bytes:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as src:
        with os.fdopen(write_fd, "wb") as out:
            flt.export_bpf(out)
        return src.read()


def _seccomp_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields["Seccomp"], int(fields["Seccomp_filters"])


def test_the_filter_is_strict_and_compiled_once():
    assert {"openat", "execve", "clone", "socket", "prctl", "seccomp"} <= set(KILLED)
    assert not set(ALLOWED) & set(KILLED)
    bpf = child_filter()
    assert bpf and len(bpf) % 8 == 0 and child_filter() is bpf
    assert repr(bpf) in isolation.zygote_config(_Limits, "fresh", 1)
    assert "'bpf': b''" in isolation.zygote_config(_Limits, "fresh", 1, seccomp=False)


class _Limits:
    memory_mb, cpu_s, output_bytes, value_bytes = 256, 5, 1000, 1000


def _settled(jail, zygote) -> bool:
    """The one jail is idle with every spare ready, and the child that ran has exited: each
    child the zygote has now said `ready`."""
    spares = jail.policy.pool.spares
    with jail.pool._cond:
        ready = sum(j.ready_count() for j in jail.pool._idle)
    return ready == spares and len(zygote.children()) == spares


def test_a_ready_child_is_already_filtered(require_nsjail):
    with Jail(workers=1) as jail:
        assert jail.run(TRIVIAL).value == 3
        (zygote,) = psutil.Process(jail.pool.pids()[0]).children()
        mode, zygote_filters = _seccomp_status(zygote.pid)
        deadline = time.monotonic() + 30
        while not _settled(jail, zygote):
            assert time.monotonic() < deadline, "the spares never became ready"
            time.sleep(0.02)
        for child in zygote.children():
            # nsjail's filter, inherited, plus the child's own
            assert _seccomp_status(child.pid) == ("2", zygote_filters + 1)


def test_the_host_built_filter_is_the_one_in_force(require_nsjail, monkeypatch):
    """A host filter that kills getrusage (every run calls it first) makes every run
    `denied`: the child loads what the host compiled, nothing of its own."""
    flt = seccomp.SyscallFilter(seccomp.ALLOW)
    flt.add_rule(seccomp.KILL_PROCESS, "getrusage")
    monkeypatch.setattr(isolation, "child_filter", lambda: _bpf(flt))
    with Jail(workers=1) as jail:
        r = jail.run(TRIVIAL)
    assert r.status == "denied", r
    assert "seccomp" in r.errors[0]["message"]


def test_the_default_filter_lets_a_run_through(require_nsjail):
    with Jail(workers=1) as jail:
        r = jail.run(TRIVIAL)
    assert r.status == "ok" and r.value == 3


@pytest.mark.parametrize("bpf", [b"", b"\0" * 7, b"\0" * 8 * 4097, "not bytes"])
def test_a_zygote_without_a_valid_filter_never_starts(require_nsjail, monkeypatch, bpf):
    monkeypatch.setattr(isolation, "child_filter", lambda: bpf)
    with pytest.raises(Exception, match="start|nsjail"):
        Jail(workers=1)
