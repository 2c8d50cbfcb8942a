"""Jail.map, Jail.as_completed and AsyncJail.map over shards keep the one-process contract
(tests/batch/test_map.py): input order, lazy input within the window, errors at their place."""

import asyncio
import itertools

import pytest

from lackjail.api import AsyncJail, Jail
from lackjail.pool import PoolError

pytestmark = pytest.mark.nsjail


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(workers=2, processes=2) as j:
        yield j


def test_results_come_in_input_order_with_mixed_verdicts(jail):
    programs = [[f"{i}", "1/0", "import os"][i % 3] for i in range(60)]
    results = list(jail.map(programs, params={"unused": 1}))
    assert [r.status for r in results] == [["ok", "error", "invalid"][i % 3] for i in range(60)]
    assert [r.value for r in results[::3]] == list(range(0, 60, 3))
    both = jail.map(["a + b", ("a + b", {"b": 10}), ("a", None)], params={"a": 1, "b": 2})
    assert [r.value for r in both] == [3, 11, 1]


def test_input_is_read_lazily_and_work_in_flight_is_bounded(jail):
    taken = itertools.count()

    def programs():
        while True:
            yield f"{next(taken)}"

    results = jail.map(programs(), concurrency=2, window=5)
    for n, r in enumerate(itertools.islice(results, 20)):
        assert r.value == n
    results.close()
    assert 20 <= next(taken) <= 26


def test_an_exception_from_the_input_is_raised_after_the_programs_before_it(jail):
    def programs():
        yield "1"
        yield "2"
        raise ValueError("the input broke")

    seen = []
    with pytest.raises(ValueError, match="the input broke") as info:
        for r in jail.map(programs()):
            seen.append(r.value)
    assert seen == [1, 2]
    assert "reading the programs" in info.value.__notes__[0]


def test_as_completed_yields_every_key_exactly_once(jail):
    jobs = [(f"id{i}", f"{i} * 2" if i % 2 else "1/0", None) for i in range(40)]
    got = dict(jail.as_completed(jobs))
    assert sorted(got) == sorted(k for k, _, _ in jobs)
    assert got["id7"].value == 14 and got["id4"].status == "error"
    with pytest.raises(ValueError, match="concurrency"):
        list(jail.map(["1"], concurrency=0))


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
