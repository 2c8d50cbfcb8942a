"""No frame written by one child can be read as part of another run.

Each child has a run channel of its own (two fresh pipes from the zygote, passed
to the controller with `spawned`); a finished child's channel is closed. A fake
zygote plays a compromised first child that keeps writing after its result.
"""

import select
import time

from fakejail import fake_jail, run_on

from lackjail import protocol


def _late_frames() -> str:
    forged = protocol.make_result("0" * 16, "ok", "poisoned", [], 1.0, 1)
    return (protocol.encode(protocol.make_output("injected\n")) + protocol.encode(forged)).hex()


def _second_run_is_clean(outcome, outputs):
    assert outcome.status == "ok", outcome
    assert outcome.value == 2, outcome  # the second child's answer
    assert outputs == []


def test_frames_written_right_after_a_result_never_reach_the_next_run(tmp_path):
    steps = [
        *(["spawn", 1], ["ready", 1], ["spawn", 2], ["ready", 2]),
        *(["read_run", 1], ["result", 1], ["late", [1, _late_frames()]]),
        *(["read_run", 2], ["result", 2]),
    ]
    with fake_jail(tmp_path, steps) as jail:
        first = run_on(jail)
        assert first.status == "ok" and first.value == 1
        outputs = []
        _second_run_is_clean(run_on(jail, on_output=outputs.append), outputs)


def test_frames_written_during_the_next_run_never_reach_it(tmp_path):
    steps = [
        *(["spawn", 1], ["ready", 1], ["spawn", 2], ["ready", 2]),
        *(["read_run", 1], ["result", 1]),
        *(["read_run", 2], ["late", [1, _late_frames()]], ["sleep", 0.05], ["result", 2]),
    ]
    with fake_jail(tmp_path, steps) as jail:
        assert run_on(jail).value == 1
        outputs = []
        _second_run_is_clean(run_on(jail, on_output=outputs.append), outputs)


def test_a_reused_child_that_writes_between_runs_is_not_given_another(tmp_path):
    steps = [
        *(["spawn", 1], ["ready", 1], ["spawn", 2], ["ready", 2]),
        *(["read_run", 1], ["result", 1], ["late", [1, _late_frames()]]),
        *(["read_run", 2], ["result", 2]),
    ]
    with fake_jail(tmp_path, steps) as jail:
        assert run_on(jail, runs_per_child=5).value == 1
        # the late frames are in child 1's pipe before the next run is lent (bounded wait):
        # the pool's quiet check at lending must see them and drop that child
        child = jail.children[1]
        deadline = time.monotonic() + 30
        readable = select.poll()  # not select(): the suite's process may hold fds past 1024
        readable.register(child.run_out, select.POLLIN)
        while not (child.frames or child.buf.pending() or readable.poll(10)):
            assert time.monotonic() < deadline, "the fake child never wrote its late frames"
        outputs = []
        _second_run_is_clean(run_on(jail, runs_per_child=5, on_output=outputs.append), outputs)
        assert 1 not in jail.children  # the child that spoke out of turn was dropped


def test_a_child_cannot_answer_for_another_childs_run(tmp_path):
    """A child's frames arrive on its channel only: a result on child 2's channel
    while child 1 runs is never read as child 1's."""
    steps = [
        *(["spawn", 1], ["ready", 1], ["spawn", 2], ["ready", 2]),
        *(["read_run", 1], ["late", [2, _late_frames()]], ["sleep", 0.05], ["result", 1]),
    ]
    with fake_jail(tmp_path, steps) as jail:
        outputs = []
        outcome = run_on(jail, on_output=outputs.append)
    assert outcome.status == "ok" and outcome.value == 1 and outputs == []
