"""Sessions, end to end in the real jail: state kept from run to run within a session, and
nothing of it seen by another session or by a plain run; a lost state said and started over."""

import asyncio
import time

import psutil
import pytest
from procs import descendants, wait_no_leftovers

from lackjail.api import AsyncJail, Jail
from lackjail.policy import load_policy
from lackjail.sessions import SessionError

pytestmark = pytest.mark.nsjail


def _policy(**pool):
    base = load_policy("default")
    limits = base.limits.__class__(wall_s=2.0, cpu_s=1, memory_mb=128)
    return base.replace(limits=limits, pool=base.pool.__class__(**pool), language="extended")


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(policy=_policy(max_sessions=3), workers=1) as j:
        yield j


def test_variables_functions_and_classes_last_from_run_to_run(jail):
    with jail.session() as s:
        first = s.run("count = 2\ndef double(x):\n    return x * 2\nnames = ['a']")
        assert first.status == "ok", first.errors
        second = s.run("count = double(count)\nnames.append('b')\n[count, names]")
        assert (second.status, second.value) == ("ok", [4, ["a", "b"]]), second.errors
        assert second.mode == "session"
        assert {"count", "double", "names"} <= set(s.names)


def test_classes_last_from_run_to_run(require_nsjail):
    policy = _policy().replace(language="python")
    with Jail(policy=policy, workers=1) as j, j.session() as s:
        defined = s.run(
            "class Point:\n    def __init__(self, x):\n        self.x = x\np = Point(3)"
        )
        assert defined.status == "ok", defined.errors
        used = s.run("q = Point(p.x + 1)\nq.x")
        assert (used.status, used.value) == ("ok", 4), used.errors


def test_params_are_bound_as_variables_and_persist(jail):
    with jail.session() as s:
        assert s.run("seen = [n]", {"n": 1}).status == "ok"
        again = s.run("n = n + 10\nseen.append(n)\nseen")
        assert (again.status, again.value) == ("ok", [1, 11]), again.errors


def test_a_plain_run_never_sees_a_session_variable(jail):
    with jail.session() as s:
        assert s.run("secret = 41").status == "ok"
        plain = jail.run("secret")
        assert plain.status == "invalid" and "secret" in plain.errors[0]["message"]
        assert s.run("secret + 1").value == 42


def test_two_sessions_do_not_see_each_other(jail):
    with jail.session() as a, jail.session() as b:
        assert a.run("mine = 'a'").status == "ok"
        assert b.run("mine = 'b'").status == "ok"
        assert a.run("mine").value == "a"
        assert b.run("mine").value == "b"
        other = b.run("only_a = 1")
        assert other.status == "ok"
        missing = a.run("only_a")
        assert missing.status == "invalid" and "only_a" in missing.errors[0]["message"]


def test_state_lost_after_a_timeout_is_said_and_the_session_starts_clean(jail):
    with jail.session() as s:
        assert s.run("kept = 1").status == "ok"
        slow = s.run("n = 0\nwhile True:\n    n = n + 1")
        assert slow.status == "timeout"
        after = s.run("fresh = 2\nfresh")
        assert (after.status, after.value) == ("ok", 2)
        assert after.errors and after.errors[0]["message"].startswith(
            "the session's state was lost: the run before ended with 'timeout'"
        )
        gone = s.run("kept")
        assert gone.status == "invalid" and "kept" in gone.errors[-1]["message"]
        assert s.run("fresh").value == 2  # the new state lasts, and the note is said once
        assert s.names == ("fresh",)


def test_an_error_keeps_the_state(jail):
    with jail.session() as s:
        failed = s.run("partial = 1\nboom = 1 // 0")
        assert failed.status == "error"
        assert s.run("partial").value == 1


def test_a_jail_allows_max_sessions_then_says_why(jail):
    opened = [jail.session() for _ in range(3)]
    try:
        with pytest.raises(SessionError, match="max_sessions"):
            jail.session()
        opened.pop().close()
        with jail.session() as again:  # a closed one frees its place
            assert again.run("1 + 1").value == 2
    finally:
        for s in opened:
            s.close()


def test_an_idle_session_is_closed(jail):
    s = jail.session(idle_timeout_s=0.3)
    assert s.run("x = 1").status == "ok"
    deadline = time.monotonic() + 30
    while not s.closed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.closed and "idle" in s.ended
    with pytest.raises(SessionError, match="idle"):
        s.run("x")


def test_a_closed_session_refuses_runs(jail):
    s = jail.session()
    s.close()
    with pytest.raises(SessionError, match="closed"):
        s.run("1")


def test_session_stream_ends_with_a_result(jail):
    with jail.session() as s:
        s.run("greeting = 'hi'")
        events = list(s.stream("print(greeting)\n5"))
    assert events[0] == {"event": "output", "text": "hi\n"}
    assert events[-1].value == 5 and events[-1].mode == "session"


def test_async_sessions_keep_state_and_stay_apart(require_nsjail):
    async def main():
        async with AsyncJail(policy=_policy(), workers=1) as ajail:
            async with ajail.session() as a, ajail.session() as b:
                await asyncio.gather(a.run("v = 'a'"), b.run("v = 'b'"))
                got = await asyncio.gather(a.run("v"), b.run("v"))
                plain = await ajail.run("v")
                streamed = [e async for e in a.stream("print(v)\nv")]
                return [r.value for r in got], plain, streamed

    values, plain, streamed = asyncio.run(main())
    assert values == ["a", "b"]
    assert plain.status == "invalid"
    assert streamed[0]["text"] == "a\n" and streamed[-1].value == "a"


def test_the_memory_limit_bounds_the_session_as_a_whole(require_nsjail):
    big = "[0] * 17000000"  # ~136 MB: one fits in the 256 MB limit, two do not
    base = load_policy("default")
    policy = base.replace(limits=base.limits.__class__(wall_s=10.0, cpu_s=5, memory_mb=256))
    with Jail(policy=policy, workers=1) as j, j.session() as s:
        assert s.run(f"first = {big}\nlen(first)").value == 17000000
        second = s.run(f"second = {big}\nlen(second)")
        assert second.status == "memory", second.errors
        alone = j.run(f"second = {big}\nlen(second)")  # a plain run has the limit to itself
        assert (alone.status, alone.value) == ("ok", 17000000), alone.errors
        after = s.run("1")  # the process that held the state ended: said, and started clean
        assert after.errors[0]["message"].startswith(
            "the session's state was lost: the run before ended with 'memory'"
        )
        assert after.value == 1 and s.names == ()


@pytest.mark.parametrize("level", ["landlock", "seccomp"])
def test_a_session_runs_at_the_pools_own_isolation_level(require_nsjail, level):
    with Jail(workers=1, isolation=level) as j:
        if j.isolation != level:
            pytest.skip(f"this host runs {j.isolation} when asked for {level}")
        with j.session() as s:
            assert s._jail_of_its_own._launcher.level == level  # what started its zygote
            assert s.run("a = 5").isolation == level
            r = s.run("a + 1")
    assert (r.status, r.value, r.isolation) == ("ok", 6, level)


def test_the_next_session_opens_without_a_jail_start_and_close_leaves_no_process(require_nsjail):
    before = descendants()
    with Jail(workers=1) as j:
        first = j.session()
        first.run("a = 1")
        deadline = time.monotonic() + 30  # the spare starts in the background
        while j.pool._session_jails._spare is None and time.monotonic() < deadline:
            time.sleep(0.02)
        spare = j.pool._session_jails._spare
        second = j.session()
        assert second._jail_of_its_own is spare  # taken as it was, not started now
        assert second.run("b = 2\nb").value == 2 and first.run("a").value == 1
        idle = j.session()  # left open: the Jail's close ends it, and the new spare
    assert first.closed and second.closed and idle.closed
    assert wait_no_leftovers(before, timeout=10) == set()


def test_a_print_or_tool_stored_by_an_earlier_run_serves_the_current_one(require_nsjail):
    def echo(x: int) -> int:
        return x

    policy = _policy().replace(language="python")
    with Jail(policy=policy, workers=1, tools=[echo]) as j, j.session() as s:
        assert s.run("say = print\ncall = echo").status == "ok"
        r = s.run("say('stored')\nprint('fresh')\ncall(7)")
    assert (r.status, r.value, r.output) == ("ok", 7, "stored\nfresh\n"), r.errors
    assert [t["tool"] for t in r.trace] == ["echo"]


def test_a_session_whose_process_was_killed_says_so_and_starts_clean(jail):
    with jail.session() as s:
        assert s.run("kept = 1").status == "ok"
        top = psutil.Process(s._jail_of_its_own.jail.pid)  # nsjail, then the zygote under it
        zygote = next(p for p in [top, *top.children()] if p.name().startswith("python"))
        children = zygote.children()  # the session's child (and no other: it keeps one)
        for child in children:
            child.kill()
        psutil.wait_procs(children, timeout=10)  # ended between runs, not during the next
        r = s.run("fresh = 2\nfresh")
        assert (r.status, r.value) == ("ok", 2), r.errors
        assert r.errors[0]["message"].startswith(
            "the session's state was lost: its process ended between runs"
        )
        gone = s.run("kept")
        assert gone.status == "invalid" and s.names == ("fresh",)
