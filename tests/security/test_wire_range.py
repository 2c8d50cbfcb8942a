"""A parameter the wire cannot carry (an int wider
than 64 bits, anywhere in the value) is `invalid` before a jail is touched, and
the jails stay healthy."""

import pytest

from lackjail.api import Jail


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(workers=1) as j:
        yield j


@pytest.mark.parametrize(
    "value, where",
    [
        (1 << 64, "parameter 'n'"),
        (-(1 << 63) - 1, "parameter 'n'"),
        ([1, {"k": 1 << 100}], "parameter 'n'[1]['k']"),
    ],
)
def test_wide_int_parameters_are_invalid_before_the_jail(jail, value, where):
    pids = jail.pool.pids()
    r = jail.run("n", params={"n": value})
    assert r.status == "invalid", r
    assert r.errors[0]["message"].startswith(f"{where} is an integer wider than 64 bits")
    assert jail.pool.pids() == pids  # no jail was touched, none replaced
    assert jail.run("n", params={"n": (1 << 64) - 1}).value == (1 << 64) - 1
    assert jail.run("n", params={"n": -(1 << 63)}).value == -(1 << 63)
