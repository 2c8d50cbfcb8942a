"""Issue 12, class 11: in reuse mode each run gets the CPU limit for itself, and
`cpu_ms` is that run's own CPU time, not the child's running total."""

from lackjail.api import Jail
from lackjail.policy import Limits, Policy, PoolSettings

# About a third of a second of CPU on these machines: four of them add up to more
# than the 1 s limit, each alone stays well inside it.
BURN = "x = 0\nfor i in range(3000000):\n    x += i\nx"


def test_reused_child_gives_each_run_its_own_cpu_limit(require_nsjail):
    policy = Policy(
        limits=Limits(wall_s=20.0, cpu_s=1),
        pool=PoolSettings(workers=1, mode="reuse", recycle_after=100, spares=1),
    )
    with Jail(policy=policy) as jail:
        results = [jail.run(BURN) for _ in range(6)]
        pids = jail.pool.pids()
    assert [r.status for r in results] == ["ok"] * 6, [r.errors for r in results]
    total = sum(r.stats["cpu_ms"] for r in results)
    assert total > 1000, "the runs together used more CPU than one run may"
    assert all(r.stats["cpu_ms"] < 1000 for r in results)
    assert len(pids) == 1


def test_a_run_over_the_cpu_limit_still_times_out_in_reuse_mode(require_nsjail):
    policy = Policy(
        limits=Limits(wall_s=20.0, cpu_s=1),
        pool=PoolSettings(workers=1, mode="reuse", recycle_after=100, spares=1),
    )
    with Jail(policy=policy) as jail:
        first = jail.run("1 + 1")
        r = jail.run("x = 0\nfor i in range(10000000000):\n    x += i\nx")
        after = jail.run("2 + 2")
    assert first.value == 2 and after.value == 4
    assert r.status == "timeout" and "CPU time limit of 1 s" in r.errors[0]["message"]
    assert 500 <= r.stats["cpu_ms"] < 3000, r.stats  # this run's CPU, not a running total
