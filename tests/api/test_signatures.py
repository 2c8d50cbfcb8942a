"""The asyncio twins and the streams show the parameters of the calls they pass theirs to:
`help()` and `inspect` see real, typed parameters, and a wrong argument fails at once."""

import inspect

import pytest

from lackjail.api import AsyncJail, Jail
from lackjail.sessions import AsyncSession, Session


def _params(func) -> list[tuple[str, object, object, object]]:
    return [
        (p.name, p.kind, p.default, p.annotation)
        for p in inspect.signature(func).parameters.values()
    ]


@pytest.mark.parametrize(
    ("twin", "source"),
    [
        (Jail.stream, Jail.run),
        (AsyncJail.run, Jail.run),
        (AsyncJail.stream, Jail.run),
        (AsyncJail.map, Jail.map),
        (Session.stream, Session.run),
        (AsyncSession.run, Session.run),
        (AsyncSession.stream, Session.run),
    ],
)
def test_a_delegating_method_shows_its_sources_parameters(twin, source):
    names = [name for name, *_ in _params(twin)]
    assert "args" not in names and "kwargs" not in names
    assert _params(twin) == _params(source)


def test_a_method_keeps_its_own_return_annotation():
    assert inspect.signature(Jail.run).return_annotation == "Result"
    assert inspect.signature(Jail.stream).return_annotation == "Iterator[dict | Result]"
    assert inspect.signature(AsyncJail.stream).return_annotation == "AsyncIterator[dict | Result]"


def test_async_jail_takes_jails_arguments_but_the_loop_and_audience():
    jail = _params(Jail.__init__)
    assert _params(AsyncJail.__init__) == [p for p in jail if p[0] not in ("tool_loop", "audience")]
    with pytest.raises(TypeError, match="tool_loop"):
        AsyncJail(tool_loop=None)
    with pytest.raises(TypeError):
        AsyncJail("default", None, 1, None, None, None, None, None, None, None, "extra")


def test_async_jail_keeps_every_argument_by_name():
    ajail = AsyncJail("strict", workers=1)
    assert ajail._kwargs["policy"] == "strict" and ajail._kwargs["workers"] == 1
    assert set(ajail._kwargs) == {p[0] for p in _params(AsyncJail.__init__)} - {"self"}
