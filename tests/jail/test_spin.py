"""The controller polls a moment for a run's result only while a CPU is free for it."""

from lackjail.api import Jail
from lackjail.pool.run import SpinGate


def test_the_gate_spins_only_while_a_cpu_is_left_for_the_caller():
    gate = SpinGate()
    gate.cpus = 2
    assert gate.allow(1)  # one child and its caller: two CPUs
    assert not gate.allow(2)  # two runs in flight take both
    gate.cpus = 8
    assert gate.allow(4) and not gate.allow(5)


def test_a_spin_that_came_up_empty_stops_spinning_for_a_while():
    gate = SpinGate()
    gate.cpus = 2
    gate.missed()
    assert [gate.allow(1) for _ in range(SpinGate.BACKOFF)] == [False] * SpinGate.BACKOFF
    assert gate.allow(1)


def test_a_run_longer_than_the_spin_returns_its_result_and_backs_the_gate_off(require_nsjail):
    # A program that runs for milliseconds (far longer than the spin's 0.3 ms on any
    # machine): the spin comes up empty, the run still ends with its value, and the
    # gate stops spinning for the next runs.
    with Jail(policy="default", workers=1) as jail:
        gate = jail.pool._spin_gate
        gate.cpus = 2  # spin whatever this machine has
        gate.skip = 0
        r = jail.run("total = sum(range(3_000_000))\ntotal")
        assert (r.status, r.value) == ("ok", sum(range(3_000_000)))
        assert gate.skip == SpinGate.BACKOFF
        r = jail.run("x = len([1, 2, 3])\nx")  # not spun: the value still comes back
        assert (r.status, r.value, gate.skip) == ("ok", 3, SpinGate.BACKOFF - 1)
