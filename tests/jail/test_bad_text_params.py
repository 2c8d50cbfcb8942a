"""A parameter holding text UTF-8 cannot carry (a lone surrogate) is the caller's bad input,
refused before the run with a clear error; it never reaches, breaks or replaces a jail."""

import pytest

import lackjail

pytestmark = pytest.mark.nsjail


@pytest.mark.usefixtures("require_nsjail")
def test_a_lone_surrogate_parameter_is_invalid_and_the_jail_lives_on(tmp_path):
    with lackjail.Jail(workers=1, workspace=tmp_path) as jail:
        assert jail.run("1").status == "ok"
        (pid,) = jail.pool.pids()
        for params in ({"x": "a\ud800b"}, {"x": ["ok", {"k": "\udc80"}]}):
            result = jail.run("x", params)
            assert result.status == "invalid", result
            message = result.errors[0]["message"]
            assert "lone surrogate" in message and "parameter 'x'" in message
        assert jail.run("x", {"x": "é"}).value == "é"
        assert jail.pool.pids() == [pid]  # the same jail served every run


def test_check_refuses_it_too():
    result = lackjail.check("x", params={"x": "\ud83d"})
    assert not result.valid and result.errors[0].rule == "param-value"
    assert "U+D83D" in result.errors[0].message
