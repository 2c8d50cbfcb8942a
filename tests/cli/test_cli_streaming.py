"""Printed output reaches --stream, Jail.stream and AsyncJail.stream while the program still runs.

The program prints, then spins until the policy's CPU limit kills it: its
output can only arrive if the jail sent it when it was printed, not at the end.
"""

import asyncio
import json

import pytest
from cli_support import lackjail

from lackjail.api import AsyncJail, Jail, Result
from lackjail.policy import load_policy

SPIN = "print('started')\nn = 0\nfor i in range(1000000000000):\n    n = n + 1\n"
KILLED = ("timeout", "limit", "killed")


@pytest.fixture(autouse=True)
def _nsjail(require_nsjail):
    pass


def short_policy():
    base = load_policy("default")
    return base.replace(limits=base.limits.__class__(wall_s=60.0, cpu_s=1))


def test_jail_stream_delivers_output_before_the_run_ends():
    with Jail(policy=short_policy(), workers=1) as jail:
        events = list(jail.stream(SPIN))
    assert events[0] == {"event": "output", "text": "started\n"}
    assert isinstance(events[-1], Result) and events[-1].status in KILLED


def test_async_jail_stream_delivers_output_before_the_run_ends():
    async def main():
        async with AsyncJail(policy=short_policy(), workers=1) as jail:
            return [event async for event in jail.stream(SPIN)]

    events = asyncio.run(main())
    assert events[0] == {"event": "output", "text": "started\n"}
    assert isinstance(events[-1], Result) and events[-1].status in KILLED


def test_cli_stream_delivers_output_before_the_run_ends(tmp_path):
    policy = tmp_path / "short.toml"
    policy.write_text('name = "short"\n[limits]\nwall_s = 60.0\ncpu_s = 1\n')
    proc = lackjail("run", "-", "--stream", "--policy", str(policy), stdin=SPIN)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0] == {"event": "output", "text": "started\n"}
    assert events[-1]["status"] in KILLED and proc.returncode == 1


def test_output_in_a_burst_is_batched_not_lost():
    program = "for i in range(2000):\n    print(i)\n"
    with Jail(policy="default", workers=1) as jail:
        events = list(jail.stream(program))
    texts = [e["text"] for e in events[:-1] if e["event"] == "output"]
    assert "".join(texts) == "".join(f"{i}\n" for i in range(2000))
    assert len(texts) < 2000  # batched, not one frame per print
    assert events[-1].status == "ok" and events[-1].output == "".join(texts)
