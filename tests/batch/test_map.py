"""Jail.map, Jail.as_completed and AsyncJail.map through the real jail; the contract tests on
the module's jail run in one controller process and over two shards (lackjail/shards)."""

import asyncio
import itertools

import pytest

from lackjail.api import AsyncJail, Jail
from lackjail.pool import PoolError


@pytest.fixture(scope="module", params=[1, 2], ids=["one process", "two shards"])
def jail(request, require_nsjail):
    with Jail(policy="default", workers=2, processes=request.param) as j:
        yield j


def test_results_come_in_input_order_with_mixed_verdicts(jail):
    programs = []
    for i in range(60):
        programs.append([f"{i}", "1/0", "import os"][i % 3])
    results = list(jail.map(programs))
    assert len(results) == 60
    for i, r in enumerate(results):
        expected = ["ok", "error", "invalid"][i % 3]
        assert r.status == expected
        if expected == "ok":
            assert r.value == i


def test_each_program_may_carry_its_own_params(jail):
    results = list(jail.map(["a + b", ("a + b", {"b": 10}), ("a", None)], params={"a": 1, "b": 2}))
    assert [r.value for r in results] == [3, 11, 1]


def test_input_is_read_lazily_and_work_in_flight_is_bounded(jail):
    taken = itertools.count()

    def programs():
        while True:
            yield f"{next(taken)}"

    results = jail.map(programs(), concurrency=2, window=5)
    for n, r in enumerate(itertools.islice(results, 20)):
        assert r.value == n
    results.close()
    # 20 yielded, at most 5 more taken (the window), never the endless rest
    assert 20 <= next(taken) <= 26


def test_an_exception_surfaces_at_its_place_after_earlier_results(require_nsjail):
    jail = Jail(policy="default", workers=1)
    results = jail.map(["1", "2", "3", "4"], concurrency=1, window=1)
    assert next(results).value == 1
    jail.close()  # the pool goes away under the map
    with pytest.raises(PoolError) as info:
        list(results)
    assert any("Jail.map stopped at program #" in note for note in info.value.__notes__)


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


def test_as_completed_turns_a_pool_failure_into_a_killed_result(require_nsjail):
    jail = Jail(policy="default", workers=1)
    jail.close()
    got = dict(jail.as_completed([("a", "1", None), ("b", "2", None)]))
    assert set(got) == {"a", "b"}
    assert got["a"].status == "killed"
    assert "could not run this program" in got["a"].errors[0]["message"]


def test_concurrency_must_be_positive(jail):
    with pytest.raises(ValueError, match="concurrency"):
        list(jail.map(["1"], concurrency=0))


def test_async_map_in_order_and_stoppable(require_nsjail):
    async def main():
        async with AsyncJail(policy="default", workers=2) as aj:
            values = [r.value async for r in aj.map([f"{i}" for i in range(30)])]
            assert values == list(range(30))
            firsts = []
            async for r in aj.map([f"{i}" for i in range(1000)]):
                firsts.append(r.value)
                if len(firsts) == 3:
                    break
            assert firsts == [0, 1, 2]
            with pytest.raises(ValueError, match="concurrency"):
                async for _ in aj.map(["1"], concurrency=-1):
                    pass

    asyncio.run(main())


def test_the_batch_benchmark_measures_a_real_batch(require_nsjail):
    from lackjail.bench.batch import batch_runs_per_s

    assert batch_runs_per_s(n=30, workers=1) > 0
