"""A run's tool calls served by a relay thread that runs each tool inline (pool/relay.py),
watched by the run's caller: a hung tool still times out and the run goes on, a hostile
frame after a call still ends the run with a protocol error, and what the relay raises
reaches the caller."""

import sys
import threading
import time
from pathlib import Path

import pytest

from lackjail.api import Jail
from lackjail.kit.calls.session import CallOutcome
from lackjail.policy import Limits, Policy, ToolRules
from lackjail.pool import relay

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fakejail import fake_jail, run_on  # noqa: E402

HUNG_TIMEOUT_S = 0.3


def _hex_frame(obj) -> str:
    import msgpack

    body = msgpack.packb(obj, use_bin_type=True)
    return (len(body).to_bytes(4, "big") + body).hex()


START = [["spawn", 1], ["ready", 1], ["read_run", 1]]
CALL = _hex_frame({"t": "call", "seq": 1, "tool": "t", "args": [], "kwargs": {}})


# --- the watch: exactly one of the relay and its watcher answers a call ------------------------


def test_a_call_disarmed_in_time_stays_the_relay_s():
    watch = relay.Watch()
    watch.arm(time.monotonic() + 60, lambda: pytest.fail("not abandoned"))
    assert watch.take() is None  # not past its deadline
    assert watch.disarm() is True
    assert watch.take() is None  # nothing armed


def test_a_call_past_its_deadline_is_the_watcher_s_and_the_relay_is_told():
    watch = relay.Watch()
    watch.arm(time.monotonic() - 1, lambda: "abandoned")
    abandon = watch.take()
    assert abandon is not None and abandon() == "abandoned"
    assert watch.take() is None  # taken once
    assert watch.disarm() is False  # the relay, when its tool returns, must leave the run


def test_the_watcher_looks_again_by_the_armed_deadline():
    watch = relay.Watch()
    assert watch.wait_s() == relay.POLL_S
    watch.arm(time.monotonic() - 1, lambda: None)
    assert watch.wait_s() == 0.0


# --- the run's side, on a fake jail -------------------------------------------------------------


class Inline:
    """A tool handler that can run tools inline (as a ToolSession can): the run relays."""

    def __init__(self):
        self.threads = []

    def __call__(self, tool, args, kwargs, deadline=None):
        raise AssertionError("a relayed run answers through inline()")

    def inline(self, tool, args, kwargs, deadline, watch):
        self.threads.append(threading.current_thread())
        watch.arm(time.monotonic() + 60, lambda: CallOutcome(False, None, "abandoned"))
        assert watch.disarm()
        return CallOutcome(True, 7)


def test_a_relayed_call_is_answered_on_another_thread_and_the_result_counts(tmp_path):
    handler = Inline()
    steps = [*START, ["write", [1, CALL]], ["sleep", 0.2], ["result", 1]]
    with fake_jail(tmp_path, steps) as jail:
        outcome = run_on(jail, tool_handler=handler, tools=["t"])
    assert outcome.status == "ok" and outcome.value == 1
    assert len(handler.threads) == 1 and handler.threads[0] is not threading.current_thread()


def test_garbage_after_a_relayed_call_is_a_protocol_error_for_the_caller(tmp_path):
    """What the relay raises (the jail broke the protocol) reaches the run's caller."""
    handler = Inline()
    garbage = (b"\0\0\0\x05" + b"\xc1" * 5).hex()
    steps = [*START, ["write", [1, CALL]], ["sleep", 0.2], ["write", [1, garbage]]]
    with fake_jail(tmp_path, steps) as jail:
        outcome = run_on(jail, tool_handler=handler, tools=["t"])
    assert outcome.status == "error" and "protocol" in outcome.errors[0]["message"]
    assert outcome.retire and len(handler.threads) == 1


class Interrupting(relay.Watch):
    """A watch whose watcher is interrupted (as by Ctrl-C) the first time it looks."""

    def take(self):
        raise KeyboardInterrupt


def test_an_interrupted_caller_raises_only_once_the_relay_let_go(tmp_path, monkeypatch):
    """The jail is retired when the caller's exception leaves the run, its descriptors closed
    and their numbers free for any other open: the relay must be off the channel by then."""
    from lackjail.pool import run as run_module

    monkeypatch.setattr(relay, "Watch", Interrupting)
    served = []  # (thread, "in" or "out") of each serving of the run
    real_serve = run_module.Run._serve

    def serve(self, *args):
        served.append((threading.current_thread(), "in"))
        try:
            return real_serve(self, *args)
        finally:
            served.append((threading.current_thread(), "out"))

    monkeypatch.setattr(run_module.Run, "_serve", serve)
    real_relay = run_module.Run._relay

    def relayed_run(self, *args):
        try:
            return real_relay(self, *args)
        except KeyboardInterrupt:
            served.append((threading.current_thread(), "raised"))
            raise

    monkeypatch.setattr(run_module.Run, "_relay", relayed_run)
    steps = [*START, ["write", [1, CALL]], ["sleep", 30]]
    with fake_jail(tmp_path, steps) as jail:
        with pytest.raises(KeyboardInterrupt):
            run_on(jail, tool_handler=Inline(), tools=["t"], wall_s=30)
        me = threading.current_thread()
        relays = [t for t, _ in served if t is not me]
        assert relays
        assert served.index((relays[0], "out")) < served.index((me, "raised"))


class Hanging:
    """A tool handler whose every tool hangs until the test opens its gate; each call is
    taken from its relay at once (its deadline is already past)."""

    def __init__(self):
        self.gate, self.taken = threading.Event(), 0

    def __call__(self, tool, args, kwargs, deadline=None):
        raise AssertionError("a relayed run answers through inline()")

    def inline(self, tool, args, kwargs, deadline, watch):
        watch.arm(time.monotonic() - 1, self._abandon)
        self.gate.wait(120)
        assert not watch.disarm()  # taken: this relay leaves the run alone
        return None

    def _abandon(self):
        self.taken += 1
        return CallOutcome(False, None, "t timed out")


def test_many_takeovers_do_not_deepen_the_caller_s_stack(tmp_path):
    """Each hung call is taken by the caller, who serves on and hands the next call to a new
    relay: a loop, not a recursion (a program calling a hung tool with a tiny timeout in a
    loop would otherwise end in RecursionError)."""
    import inspect

    calls = 60
    handler = Hanging()
    steps = [*START, *[["write", [1, CALL]]] * calls, ["result", 1]]
    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 60)  # room for one takeover's frames, not 60
    try:
        with fake_jail(tmp_path, steps) as jail:
            outcome = run_on(jail, tool_handler=handler, tools=["t"], wall_s=60)
    finally:
        sys.setrecursionlimit(depth)
        handler.gate.set()
    assert outcome.status == "ok" and handler.taken == calls


# --- end to end, in the real jail ---------------------------------------------------------------


def _policy(**tools):
    return Policy(name="test", limits=Limits(), tools=ToolRules(**tools))


PROGRAM = """
total = 0
for i in range(40):
    total += add_one(i)
note = ""
try:
    hang()
except Exception as e:
    note = str(e)
for i in range(40):
    total += add_one(i)
[total, note]
"""


@pytest.mark.nsjail
def test_a_hung_tool_times_out_and_the_run_goes_on(require_nsjail):
    """The tool hangs until the test opens its gate: only a working timeout lets the run
    finish while the gate is still shut, however loaded the machine."""
    gate = threading.Event()

    def hang() -> int:
        gate.wait(120)
        return 0

    def add_one(n: int) -> int:
        return n + 1

    policy = _policy(timeouts={"hang": HUNG_TIMEOUT_S})
    try:
        with Jail(tools=[hang, add_one], policy=policy, workers=1, language="extended") as jail:
            result = jail.run(PROGRAM)
            assert not gate.is_set()  # the run came back while the tool still hung
            assert result.status == "ok", result.errors
            total, note = result.value
            assert total == 2 * sum(range(1, 41))
            assert f"hang timed out after {HUNG_TIMEOUT_S:g} s" in note
            hung = [e for e in result.trace if e["tool"] == "hang"]
            assert len(hung) == 1 and hung[0]["ok"] is False and "timed out" in hung[0]["error"]
            assert [e["seq"] for e in result.trace] == list(range(1, 82))
            gate.set()  # the abandoned call returns now: its answer must go nowhere
            again = jail.run("add_one(1) + add_one(2)")
            assert again.status == "ok" and again.value == 5
    finally:
        gate.set()


@pytest.mark.nsjail
def test_a_tool_hung_past_the_run_s_deadline_ends_the_run_on_time(require_nsjail):
    gate = threading.Event()

    def hang() -> int:
        gate.wait(120)
        return 0

    try:
        with Jail(tools=[hang], policy=_policy(timeouts={"hang": 60.0}), workers=1) as jail:
            result = jail.run("hang()", timeout=1.0)
            assert not gate.is_set()
            assert result.status == "timeout"
            assert "deadline" in result.trace[0]["error"]
    finally:
        gate.set()


def test_a_forked_child_starts_its_own_relays():
    """A process forked while relay threads wait (the server forks its waiting processes)
    has none of those threads: a job it submits must still run."""
    import os

    ran = threading.Event()
    relay.submit(ran.set)  # a relay thread now waits in this process
    assert ran.wait(60)
    pid = os.fork()
    if pid == 0:  # the child: its job runs on a relay of its own, or it exits 1
        done = threading.Event()
        relay.submit(done.set)
        os._exit(0 if done.wait(60) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
