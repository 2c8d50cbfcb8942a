"""Isolation levels: the seccomp fallback runs and says so; a policy demanding
nsjail refuses to run on a host without it rather than fall back."""

import pytest

from lackjail.api import Jail
from lackjail.pool import IsolationError, isolation


def test_seccomp_level_runs_and_says_so():
    with Jail(workers=1, isolation="seccomp") as jail:
        r = jail.run("sorted([3, 1, 2])")
        bomb = jail.run("x = 'a' * 500000000\nlen(x)")
    assert (r.status, r.value, r.isolation) == ("ok", [1, 2, 3], "seccomp")
    assert bomb.status == "memory"  # the child's own rlimits hold without namespaces


@pytest.fixture
def host_without_nsjail(monkeypatch):
    """A host where the nsjail binary is missing (the controller's only way to learn it)."""
    monkeypatch.setattr(isolation, "nsjail_binary", lambda: None)


def test_policy_demanding_nsjail_refuses(host_without_nsjail):
    with pytest.raises(IsolationError) as info:
        Jail(policy="default", workers=1)
    message = str(info.value)
    assert "requires nsjail isolation" in message and "lackjail doctor" in message
    assert 'isolation = "any"' in message


def test_policy_allowing_any_falls_back_and_says_so(host_without_nsjail):
    from lackjail.policy import load_policy

    policy = load_policy("default").replace(isolation="any")
    with Jail(policy=policy, workers=1) as jail:
        r = jail.run("1 + 1")
    assert (r.status, r.value, r.isolation) == ("ok", 2, "seccomp")
