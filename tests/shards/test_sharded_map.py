"""Jail.map, Jail.as_completed and AsyncJail.map over shards keep the one-process contract: a
closed jail fails at the program's place, the async map keeps order (tests/batch/test_map.py
runs the rest of the contract over two shards too)."""

import asyncio

import pytest

from lackjail.api import AsyncJail, Jail
from lackjail.pool import PoolError

pytestmark = pytest.mark.nsjail


def test_a_closed_jail_fails_at_the_programs_place(require_nsjail):
    jail = Jail(workers=2, processes=2)
    results = jail.map(["1", "2", "3", "4"], concurrency=1, window=1)
    assert next(results).value == 1
    jail.close()
    with pytest.raises(PoolError) as info:
        list(results)
    assert any("Jail.map stopped at program #" in note for note in info.value.__notes__)
    got = dict(jail.as_completed([("a", "1", None), ("b", "2", None)]))
    assert set(got) == {"a", "b"} and got["a"].status == "killed"
    assert "could not run this program" in got["a"].errors[0]["message"]


def test_async_map_in_order(require_nsjail):
    async def main():
        async with AsyncJail(workers=2, processes=2) as aj:
            assert [r.value async for r in aj.map([f"{i}" for i in range(30)])] == list(range(30))
            assert (await aj.run("6 * 7")).value == 42

    asyncio.run(main())
