"""A fake zygote that sends garbage, oversized or out-of-order frames: the
controller fails only that run, with a clear error, and never raises."""

import pytest
from fakejail import fake_jail, run_on

from lackjail import protocol


def _hex(data: bytes) -> str:
    return data.hex()


def _frame(obj) -> str:
    import msgpack

    body = msgpack.packb(obj, use_bin_type=True)
    return _hex(len(body).to_bytes(4, "big") + body)


RESULT = {"t": "result", "id": "x", "status": "ok", "value": 1, "errors": [], "cpu_ms": 0.0}
BAD_FRAMES = {
    "garbage": _hex(b"\0\0\0\x05" + b"\xc1" * 5),
    "oversized": _hex(b"\xff\xff\xff\xff" + b"x" * 100),
    "zero_length": _hex(b"\0\0\0\0"),
    "not_a_map": _frame([1, 2, 3]),
    "unknown_type": _frame({"t": "exec", "code": "x"}),
    "out_of_order": _frame({"t": "ready", "gen": 2}),
    "extra_key": _frame({"t": "output", "text": "x", "evil": 1}),
    "deep": _hex(b"\0\0\0\xff" + b"\x82\xa1t\xa6output\xa4text" + b"\x91" * 239 + b"\xc0"),
    "ext": _hex(b"\0\0\0\x11\x82\xa1t\xa6output\xa4text\xd4\x05\x00"),
    "wrong_id": _frame({**RESULT, "max_rss_kb": 0}),
    "bad_status": None,
}
START = [["spawn", 1], ["ready", 1], ["read_run", 1]]


@pytest.mark.parametrize(
    "scenario,status,text",
    [
        ("garbage", "error", "protocol"),
        ("oversized", "error", "protocol"),
        ("zero_length", "error", "protocol"),
        ("not_a_map", "error", "protocol"),
        ("unknown_type", "error", "protocol"),
        ("out_of_order", "error", "protocol"),
        ("extra_key", "error", "protocol"),
        ("deep", "error", "protocol"),
        ("ext", "error", "protocol"),
        ("wrong_id", "error", "malformed result"),
    ],
)
def test_hostile_frames_fail_only_that_run(tmp_path, scenario, status, text):
    with fake_jail(tmp_path, [*START, ["write", [1, BAD_FRAMES[scenario]]]]) as jail:
        outcome = run_on(jail)
    assert outcome.status == status, outcome
    assert text in outcome.errors[0]["message"]
    assert outcome.retire


def test_bad_status_is_a_malformed_result(tmp_path):
    steps = [*START, ["result_status", [1, "pwned"]]]
    with fake_jail(tmp_path, steps) as jail:
        outcome = run_on(jail)
    assert outcome.status == "error" and "malformed result" in outcome.errors[0]["message"]


def test_a_reused_child_answering_with_its_previous_run_id_is_a_malformed_result(tmp_path):
    """Run ids come from a counter: a result carrying the id of the child's earlier run
    (a stale answer) is still refused, and the child retired."""
    steps = [*START, ["result", 1], ["read_run", 1], ["result_of", [1, 1, 0]]]
    with fake_jail(tmp_path, steps) as jail:
        first = run_on(jail, runs_per_child=2)
        second = run_on(jail, runs_per_child=2)
    assert first.status == "ok" and first.value == 1 and not first.retire
    assert second.status == "error" and second.retire
    assert "malformed result" in second.errors[0]["message"]


def test_a_child_answering_with_another_childs_run_id_is_a_malformed_result(tmp_path):
    """Each child's first run has an id of its own: child 2 cannot answer with child 1's."""
    steps = [*START, ["result", 1], ["spawn", 2], ["ready", 2], ["read_run", 2]]
    steps += [["result_of", [2, 1, 0]]]
    with fake_jail(tmp_path, steps) as jail:
        first = run_on(jail)  # fresh mode: child 1 serves one run and is dropped
        second = run_on(jail)
    assert first.status == "ok" and first.value == 1
    assert second.status == "error" and second.retire
    assert "malformed result" in second.errors[0]["message"]


@pytest.mark.parametrize(
    "steps,status,text,retire",
    [
        ([["sleep", 30]], "timeout", "wall-clock", True),  # the zygote ignores the cancel
        ([["exit", 0]], "killed", "ended", True),
        ([["done", [1, 31]], ["close", 1]], "denied", "seccomp", False),
        ([["done", [1, 24]], ["close", 1]], "timeout", "CPU time limit of 1 s", False),
        ([["done", [1, 27]], ["close", 1]], "timeout", "CPU time limit of 1 s", False),
        ([["done", [1, 9]], ["close", 1]], "killed", "signal 9", False),
        ([["done", [1, 9]]], "killed", "signal 9", False),  # a `done` while the channel is open
        ([["close", 1], ["done", [1, 0]]], "error", "without a result", False),
    ],
)
def test_ends_without_a_result(tmp_path, steps, status, text, retire):
    with fake_jail(tmp_path, [*START, *steps]) as jail:
        outcome = run_on(jail)
    assert outcome.status == status, outcome
    assert text in outcome.errors[0]["message"]
    assert outcome.retire is retire


@pytest.mark.parametrize(
    "ctrl",
    [
        _frame({"t": "spawned", "gen": 7, "loads": 0}),  # no descriptors attached
        _frame({"t": "pong", "id": 1, "x": 2}),
        _hex(b"\0\0\0\x05" + b"\xc1" * 5),
    ],
)
def test_hostile_control_frames(tmp_path, ctrl):
    with fake_jail(tmp_path, [*START, ["ctrl", ctrl]]) as jail:
        outcome = run_on(jail)
    assert outcome.status == "error" and "protocol" in outcome.errors[0]["message"]
    assert outcome.retire


def test_frames_never_reach_the_controller_callbacks_after_a_protocol_error(tmp_path):
    calls = []

    def handler(tool, args, kwargs, deadline=None):
        calls.append(tool)
        raise AssertionError("no call expected")

    call = _frame({"t": "call", "seq": 1, "tool": "t", "args": [], "kwargs": {}, "x": 1})
    with fake_jail(tmp_path, [*START, ["write", [1, call]]]) as jail:
        outcome = run_on(jail, tool_handler=handler, tools=["t"])
    assert outcome.status == "error" and calls == []
    assert protocol.STATUSES[outcome.status]


@pytest.mark.parametrize("where", ["ctrl", "child"])
def test_garbage_from_an_idle_jail_retires_it_and_the_supervisor_goes_on(
    tmp_path, monkeypatch, where
):
    """The supervisor reads idle jails (their spares' reports): a jail that writes garbage
    while idle is retired, and the supervisor thread survives to replace it."""
    import json
    import time

    from fakejail import fake_zygotes

    from lackjail.policy import load_policy
    from lackjail.pool import Pool

    garbage = BAD_FRAMES["garbage"]
    steps = [["spawn", 1], ["ready", 1], ["spawn", 2], ["sleep", 0.1]]
    steps += [["ctrl", garbage]] if where == "ctrl" else [["write", [2, garbage]]]
    script = tmp_path / "steps.json"
    script.write_text(json.dumps(steps))
    fake_zygotes(monkeypatch, script)
    pool = Pool(load_policy("default"), workers=1, isolation_level="nsjail")
    try:
        (first,) = pool.pids()
        deadline = time.monotonic() + 30
        while first in pool.pids():
            assert time.monotonic() < deadline, "the jail that sent garbage was kept"
            time.sleep(0.02)
        assert pool._supervisor.is_alive()
    finally:
        pool.close()
    assert not pool._supervisor.is_alive()


def test_a_jail_that_ends_while_a_run_waits_for_its_child_is_replaced_not_the_run(
    tmp_path, monkeypatch
):
    """A run waiting for a ready child on a jail that then ends never reached that jail:
    the pool retires it and the run is served by another (here its replacement), instead
    of failing as `killed`."""
    import json

    from fakejail import fake_zygotes

    from lackjail.policy import load_policy
    from lackjail.pool import Pool, Request

    steps = [["spawn", 1], ["ready", 1], ["read_run", 1], ["result", 1], ["sleep", 0.3]]
    steps += [["exit", 0]]  # no second child: the next run waits, then the jail ends
    script = tmp_path / "steps.json"
    script.write_text(json.dumps(steps))
    fake_zygotes(monkeypatch, script)
    pool = Pool(load_policy("default"), workers=1, isolation_level="nsjail")
    try:
        (first_pid,) = pool.pids()
        first = pool.execute(Request("1", {}))
        second = pool.execute(Request("1", {}))
        pids = pool.pids()
    finally:
        pool.close()
    assert (first.status, first.value) == ("ok", 1)
    assert (second.status, second.value) == ("ok", 1), second.errors
    assert first_pid not in pids


def test_a_run_is_lent_the_jail_whose_spare_is_ready_not_the_one_still_without(
    tmp_path, monkeypatch
):
    """When no idle jail is known to have a ready child, borrowing reads what they reported
    first: the run goes to the jail whose spare said `ready` (its report not read yet), not
    to the jail used last, which has no child (here: never will; it used to wait for one
    until the start timeout and end as killed)."""
    import dataclasses
    import json
    import select

    from fakejail import fake_zygotes

    from lackjail.policy import load_policy
    from lackjail.pool import Pool, Request
    from lackjail.pool import pool as pool_module

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    one = [["spawn", 1], ["ready", 1], ["read_run", 1], ["result", 1]]
    # the first jail started has one child only; the second makes another at once
    (scripts / "1.json").write_text(json.dumps(one))
    two = [["spawn_ready", 2], ["read_run", 2], ["result", 2]]
    (scripts / "2.json").write_text(json.dumps(one + two))
    fake_zygotes(monkeypatch, scripts)
    monkeypatch.setattr(pool_module, "SETTLE_S", 3600.0)  # the supervisor reads no idle jail
    monkeypatch.setattr(pool_module, "PING_EVERY_S", 3600.0)  # the fake answers no ping
    policy = load_policy("default")
    policy = dataclasses.replace(policy, pool=dataclasses.replace(policy.pool, start_timeout_s=2.0))
    pool = Pool(policy, workers=2, isolation_level="nsjail")
    try:
        assert pool.wait_full(30)
        first, second = pool._idle  # started first, second
        outcomes = [pool.execute(Request("1", {})) for _ in range(2)]
        assert {pool._idle[0], pool._idle[1]} == {first, second}
        # the first jail was used last and has no child; the second's spare is unread
        assert pool._idle[-1] is first
        assert first.ready_count() == second.ready_count() == 0
        # its spare's `spawned` or (if the run read that) `ready` is there to be read
        news = select.poll()
        for fd in second.watch_fds():
            news.register(fd, select.POLLIN)
        assert news.poll(30_000), "the fake zygote never reported its spare"
        third = pool.execute(Request("1", {}))
    finally:
        pool.close()
    assert [(o.status, o.value) for o in outcomes] == [("ok", 1), ("ok", 1)]
    assert (third.status, third.value) == ("ok", 2), third.errors


def test_the_supervisor_reads_idle_jails_only_once_the_pool_is_quiet(tmp_path, monkeypatch):
    """While a run is in flight the supervisor leaves the idle jails' reports to the runs
    that borrow them (reading them itself cost a back-to-back run ~100 us of the controller's
    CPU); once the pool has been quiet SETTLE_S it reads them, so a run after a pause finds
    the spares adopted."""
    import json
    import select
    import time

    from fakejail import fake_zygotes

    from lackjail.policy import load_policy
    from lackjail.pool import Pool
    from lackjail.pool import pool as pool_module

    go = tmp_path / "go"
    steps = [["spawn", 1], ["ready", 1], ["wait_file", str(go)], ["spawn_ready", 2]]
    script = tmp_path / "steps.json"
    script.write_text(json.dumps(steps))
    fake_zygotes(monkeypatch, script)
    monkeypatch.setattr(pool_module, "PING_EVERY_S", 3600.0)  # the fake answers no ping
    pool = Pool(load_policy("default"), workers=2, isolation_level="nsjail")
    try:
        assert pool.wait_full(30)
        lent, child = pool._borrow_ready(10.0, 1.0)  # as a run in flight holds it
        (idle,) = pool._idle
        assert idle.ready_count() == 1
        go.touch()  # both zygotes now report a second spare, ready
        news = select.poll()
        news.register(idle.ctrl.fileno(), select.POLLIN)
        assert news.poll(30_000), "the fake zygote never reported its spare"
        time.sleep(0.3)  # the supervisor had time to read it: it must not have
        assert idle.ready_count() == 1 and news.poll(0)
        pool._give_back(lent, retire=False)
        deadline = time.monotonic() + 30
        while idle.ready_count() < 2:  # quiet now: the supervisor reads it on its own
            assert time.monotonic() < deadline, "the supervisor never read the idle jail"
            time.sleep(0.01)
    finally:
        pool.close()


def test_one_control_read_per_poll_stops_at_the_next_descriptors(tmp_path):
    """`pump_ctrl` reads once, as a poll found the socket readable: a read ends at a message
    that carries descriptors, and the next `spawned` waits for the next read (no read is
    made on the chance that more is there); the children are all adopted in the end."""
    import array
    import fcntl
    import termios
    import time

    spawned = protocol.encode(protocol.make_spawned(1))
    steps = [["spawn", 1], ["spawn", 2], ["ready", 1], ["ready", 2]]
    with fake_jail(tmp_path, steps) as jail:
        waiting = array.array("i", [0])
        deadline = time.monotonic() + 30
        while waiting[0] < 2 * len(spawned):  # both `spawned` frames are in the socket
            assert time.monotonic() < deadline, "the fake zygote never sent both"
            fcntl.ioctl(jail.ctrl.fileno(), termios.FIONREAD, waiting)
            time.sleep(0.01)
        assert [f["gen"] for f in jail.pump_ctrl()] == [1]
        assert list(jail.children) == [1]
        assert [f["gen"] for f in jail.pump_ctrl()] == [2]
        assert jail.pump_ctrl() == []
        assert jail.wait_ready_child(time.monotonic() + 30).gen == 1
        assert jail.ready_count() == 2
