"""Isolation levels, nsjail > landlock > seccomp: the strongest the host has runs, down
to the weakest the policy accepts, and the result says which; a policy demanding more
than the host has refuses rather than fall back."""

import pytest

from lackjail.api import Jail
from lackjail.pool import IsolationError, isolation
from lackjail.worker import landlock


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
        Jail(policy="strict", workers=1)
    message = str(info.value)
    assert "policy 'strict' requires nsjail isolation" in message
    assert "lackjail doctor" in message and 'isolation = "landlock"' in message


def test_the_default_policy_falls_back_to_landlock_and_says_so(host_without_nsjail):
    with Jail(policy="default", workers=1) as jail:
        r = jail.run("1 + 1")
    assert (r.status, r.value, r.isolation) == ("ok", 2, "landlock")


@pytest.fixture
def host_without_landlock(monkeypatch):
    """A kernel without Landlock (its ABI query fails)."""
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)


def test_a_policy_accepting_landlock_refuses_where_neither_level_runs(
    host_without_nsjail, host_without_landlock
):
    with pytest.raises(IsolationError) as info:
        Jail(policy="default", workers=1)
    message = str(info.value)
    assert "policy 'default' requires landlock isolation or stronger" in message
    assert "Landlock is not available" in message and 'isolation = "seccomp"' in message


def test_policy_allowing_any_falls_back_to_the_strongest_left(
    host_without_nsjail, host_without_landlock
):
    from lackjail.policy import load_policy

    policy = load_policy("default").replace(isolation="any")
    with Jail(policy=policy, workers=1) as jail:
        r = jail.run("1 + 1")
    assert (r.status, r.value, r.isolation) == ("ok", 2, "seccomp")


def test_an_exact_level_runs_at_that_level_even_where_a_stronger_one_works():
    with Jail(policy="strict", workers=1, isolation="landlock") as jail:
        r = jail.run("1 + 1")
    assert (r.status, r.value, r.isolation) == ("ok", 2, "landlock")


def test_a_level_that_fails_to_start_says_why(monkeypatch):
    """A zygote's last words (its stderr) reach the refusal: the jail's log is read before
    the jail is killed and its log closed."""
    launcher = isolation.landlock_launcher
    code = "raise PermissionError(1, 'the zygote says why')"
    monkeypatch.setattr(isolation, "landlock_launcher", lambda args: launcher(args, code=code))
    with pytest.raises(IsolationError) as info:
        Jail(policy="default", workers=1, isolation="landlock")
    assert "PermissionError: [Errno 1] the zygote says why" in str(info.value)
