"""In reuse mode each run gets the CPU limit for itself, and
`cpu_ms` is that run's own CPU time, not the child's running total."""

from lackjail.api import Jail
from lackjail.policy import Limits, Policy, PoolSettings

# About a quarter of a second of CPU on these machines, well inside the 1 s limit;
# the test runs it until the runs together have used several times the limit.
BURN = "x = 0\nfor i in range(4000000):\n    x += i\nx"


def test_reused_child_gives_each_run_its_own_cpu_limit(require_nsjail):
    policy = Policy(
        limits=Limits(wall_s=20.0, cpu_s=1),
        pool=PoolSettings(workers=1, mode="reuse", recycle_after=100, spares=1),
    )
    results, total = [], 0.0
    with Jail(policy=policy) as jail:
        while total < 3000 and len(results) < 300:  # three times the limit, all on one child
            results.append(jail.run(BURN))
            total += results[-1].stats["cpu_ms"]
            assert results[-1].status == "ok", (len(results), total, results[-1].errors)
        pids = jail.pool.pids()
    assert total >= 3000, "the runs together used more CPU than one run may"
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
