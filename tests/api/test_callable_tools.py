"""Any callable as a tool (`Jail(tools=...)`), end to end in the real jail: closures, bound
methods, lambdas named by a dict, async functions; arguments checked against the signature,
results that are not plain data refused by name, the policy still in force."""

import asyncio
import functools
import threading

import pytest

from lackjail.api import AsyncJail, Jail
from lackjail.errors import KitError
from lackjail.policy import load_policy

pytestmark = pytest.mark.nsjail


class Client:
    """Stands for an authenticated client: a bound method carries its state."""

    def __init__(self, token):
        self.token = token
        self.calls = 0

    def fetch(self, key: str, upper: bool = False) -> dict:
        """Fetch one record.

        Parameters:
            key: the record's key
            upper: shout it
        """
        self.calls += 1
        return {"key": key.upper() if upper else key, "token": self.token, "n": self.calls}


def make_counter():
    seen = []

    def remember(item: str) -> int:
        """Remember ITEM; how many are remembered."""
        seen.append(item)
        return len(seen)

    return remember, seen


async def slow_add(a: int, b: int = 1) -> int:
    """Add, after a pause on the event loop."""
    await asyncio.sleep(0.01)
    return a + b


def test_closures_bound_methods_lambdas_and_async_functions(require_nsjail):
    client = Client("t0k")
    remember, seen = make_counter()
    tools = {
        "fetch": client.fetch,
        "remember": remember,
        "triple": lambda n: n * 3,
        "add": slow_add,
    }
    with Jail(workers=1, tools=tools) as jail:
        r = jail.run(
            "a = fetch('k', upper=True)\nb = remember('x')\n[a, b, triple(4), add(2, b=5)]"
        )
    assert r.status == "ok", r.errors
    assert r.value == [{"key": "K", "token": "t0k", "n": 1}, 1, 12, 7]
    assert seen == ["x"] and client.calls == 1
    assert [t["tool"] for t in r.trace] == ["fetch", "remember", "triple", "add"]


def test_a_list_names_each_tool_by_its_function(require_nsjail):
    client = Client("abc")
    with Jail(workers=1, tools=[client.fetch, slow_add]) as jail:
        assert jail.kit.specs["fetch"].description == "Fetch one record."
        assert [a.name for a in jail.kit.specs["fetch"].args] == ["key", "upper"]
        r = jail.run("[fetch('z')['token'], slow_add(1)]")
    assert (r.status, r.value) == ("ok", ["abc", 2]), r.errors


def test_a_lambda_in_a_list_asks_for_a_name():
    with pytest.raises(KitError, match=r"a lambda .*tools=\{'name': \.\.\.\}"):
        Jail(workers=1, tools=[lambda x: x])


def test_arguments_are_checked_against_the_signature(require_nsjail):
    client = Client("t")
    with Jail(workers=1, tools=[client.fetch]) as jail:
        literal = jail.run("fetch(3)")  # seen before the run: the spec came from the signature
        wrong_type = jail.run("key = 3\nfetch(key)")  # seen at the call, before the client
        unknown = jail.run("kw = {'colour': 'red'}\nfetch('k', **kw)")
    assert literal.status == "invalid" and "fetch" in literal.errors[0]["message"]
    assert wrong_type.status == "error"
    assert "fetch() argument 'key' must be str, not int" in wrong_type.errors[0]["message"]
    assert unknown.status in ("error", "invalid") and "colour" in str(unknown.errors)
    assert client.calls == 0  # no call reached the client


def test_a_result_that_is_not_plain_data_is_an_error_naming_the_tool(require_nsjail):
    with Jail(workers=1, tools={"handle": lambda: threading.Lock()}) as jail:
        r = jail.run("handle()")
    assert r.status == "error"
    assert "handle" in r.errors[0]["message"] and "lock" in r.errors[0]["message"].lower()


def test_the_policy_still_applies_to_callables(require_nsjail):
    base = load_policy("default")
    policy = base.replace(tools=base.tools.__class__(deny=("wipe",)))
    wiped = []
    with Jail(policy=policy, workers=1, tools={"wipe": lambda: wiped.append(1)}) as jail:
        r = jail.run("wipe()")
    assert r.status == "denied" and wiped == []


def test_async_tools_of_an_async_jail_run_on_the_callers_loop(require_nsjail):
    loops = []

    async def where() -> str:
        loops.append(asyncio.get_running_loop())
        return "here"

    async def main():
        async with AsyncJail(workers=1, tools=[where]) as jail:
            r = await jail.run("where()")
            return r, asyncio.get_running_loop()

    r, loop = asyncio.run(main())
    assert (r.status, r.value) == ("ok", "here"), r.errors
    assert loops == [loop]


def test_a_partial_is_described_by_the_function_it_wraps(require_nsjail):
    def scale(x: int, factor: int) -> int:
        """Scale X by FACTOR."""
        return x * factor

    with Jail(workers=1, tools={"double": functools.partial(scale, factor=2)}) as jail:
        assert jail.kit.specs["double"].description == "Scale X by FACTOR."
        r = jail.run("double(21)")
    assert (r.status, r.value) == ("ok", 42), r.errors
