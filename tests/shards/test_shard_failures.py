"""The Jail's side against shards that fail: one that refuses to start, one that sends a
malformed frame (killed, its run `killed`, replaced). Stand-in shards, no jail."""

import time
from pathlib import Path

import psutil
import pytest

from lackjail.api import Jail
from lackjail.pool import IsolationError
from lackjail.shards import parent

FAKE = Path(__file__).with_name("fake_shard.py")


@pytest.fixture
def fake(monkeypatch):
    boot = "import sys; sys.argv = sys.argv[1:]; sys.argv.insert(0, 'x'); "
    boot += f"exec(open({str(FAKE)!r}).read())"
    monkeypatch.setattr(parent, "BOOT", boot)

    def behave(behaviour):
        monkeypatch.setenv("FAKE_SHARD", behaviour)

    return behave


def test_a_shard_that_cannot_start_fails_the_jail_with_its_reason(fake):
    fake("refuse")
    before = {p.pid for p in psutil.Process().children()}
    with pytest.raises(IsolationError, match="requires nsjail isolation"):
        Jail(workers=2, processes=2)
    deadline = time.monotonic() + 10
    while {p.pid for p in psutil.Process().children()} - before:
        assert time.monotonic() < deadline, "a shard outlived the failed start"
        time.sleep(0.05)


def test_a_shard_that_sends_a_malformed_frame_is_killed_and_replaced(fake):
    fake("")
    with Jail(workers=2, processes=2) as jail:
        assert jail.run("1 + 1").value == "1 + 1"
        victim = jail.pool.pids()[0]
        result = jail.run("malformed")
        assert result.status == "killed", result
        assert "malformed frame" in result.errors[0]["message"]
        deadline = time.monotonic() + 30
        while victim in jail.pool.pids() or len(jail.pool.pids()) < 2:
            assert time.monotonic() < deadline, "the shard was not replaced"
            time.sleep(0.05)
        assert [r.value for r in jail.map(["a", "b", "c"])] == ["a", "b", "c"]
