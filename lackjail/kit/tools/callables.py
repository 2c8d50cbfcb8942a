"""Any Python callable as a tool: functions, closures, bound methods, lambdas, async functions.

`Jail(tools=[f, client.fetch])` or `Jail(tools={"name": callable})`: each
callable becomes a ToolSpec (arguments and types from its signature, prose
from its docstring) served by a `CallableProvider`, which holds the callables
themselves: no import path is needed, so a closure over a database handle or
a method of an authenticated client works as it is. What a call returns may
be awaitable (an `async def`): it is awaited on the provider's loop, one the
provider owns (a thread of its own) unless it was given the caller's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import Callable, Mapping

from lackjail.errors import KitError, ToolCallError
from lackjail.kit.tools.docspec import _annotation, parse_docstring, spec_from_function
from lackjail.kit.tools.providers import ToolContext
from lackjail.kit.tools.toolspec import ToolSpec, parse_type

CANCEL_POLL_S = 0.05  # how often an awaited call looks whether it was abandoned


class CallableProvider:
    """Serves the tools made from callables (provider "callable"; provider_config {"key": K})."""

    name = "callable"

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None):
        self.callables: dict[str, Callable] = {}
        self._loop = loop  # the caller's (AsyncJail), or None: our own, started on first use
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def add(self, key: str, fn: Callable) -> None:
        self.callables[key] = fn

    def check(self, spec: ToolSpec) -> None:
        key = spec.provider_config.get("key")
        if key not in self.callables:
            raise KitError(f"tool '{spec.name}': no callable registered under {key!r}")
        try:
            inspect.signature(self.callables[key]).bind(**{a.name: None for a in spec.args})
        except (TypeError, ValueError) as exc:
            raise KitError(
                f"tool '{spec.name}': the spec does not fit the callable: {exc}"
            ) from None

    def bind(self, spec: ToolSpec, ctx: ToolContext) -> Callable:
        return functools.partial(
            self._call, spec.name, self.callables[spec.provider_config["key"]], ctx
        )

    def _call(self, name: str, fn: Callable, ctx: ToolContext, **arguments):
        value = fn(**arguments)
        if inspect.isawaitable(value):
            value = self._await(name, value, ctx)
        return value

    def _await(self, name: str, awaitable, ctx: ToolContext):
        """Await AWAITABLE on the provider's loop from this (the tool's) thread; cancelled
        when the session abandons the call (ctx.cancelled)."""
        future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), self._running_loop(name))
        while True:
            try:
                return future.result(CANCEL_POLL_S)
            except concurrent.futures.TimeoutError:
                if ctx.cancelled.is_set():
                    future.cancel()
                    raise ToolCallError(f"{name} was abandoned") from None

    def _running_loop(self, name: str) -> asyncio.AbstractEventLoop:
        if self._loop is not None:
            if self._loop.is_closed():
                raise ToolCallError(f"{name} is async and the event loop it runs on is closed")
            return self._loop
        with self._lock:
            if self._own_loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="lackjail-async-tools", daemon=True
                ).start()
                self._own_loop = loop
            return self._own_loop

    def close(self) -> None:
        """Stop the loop this provider started (not a caller's)."""
        with self._lock:
            loop, self._own_loop = self._own_loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)


async def _awaited(awaitable):
    return await awaitable


def callable_specs(tools, provider: CallableProvider) -> list[ToolSpec]:
    """ToolSpecs for TOOLS (a list of named callables, or a dict name -> callable), each
    registered with PROVIDER. KitError names the entry and the fix."""
    if isinstance(tools, Mapping):
        entries = list(tools.items())
    elif isinstance(tools, (list, tuple)):
        entries = [(_name_of(fn), fn) for fn in tools]
    else:
        raise KitError(
            f"tools= takes a list of callables or a dict of name -> callable, not "
            f"{type(tools).__name__}"
        )
    specs = []
    for name, fn in entries:
        if not isinstance(name, str):
            raise KitError(f"tools= name {name!r} must be a str")
        if not callable(fn):
            raise KitError(f"tools= entry {name!r} is not callable ({type(fn).__name__})")
        if name in provider.callables:
            raise KitError(f"tools= names two callables {name!r}; give one another name")
        provider.add(name, fn)
        prose = {}
        if isinstance(fn, functools.partial):  # its own docstring is functools' own
            prose["description"] = parse_docstring(fn.func.__doc__)["summary"]
        specs.append(
            spec_from_function(
                fn,
                name=name,
                provider=CallableProvider.name,
                provider_config={"key": name},
                returns=_returns(fn),
                **prose,
            )
        )
    return specs


def _name_of(fn) -> str:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        what = "a lambda" if name == "<lambda>" else f"{type(fn).__name__} {fn!r:.60}"
        raise KitError(
            f"tools=[...]: {what} has no name a program can call it by; "
            "pass it in a dict: tools={'name': ...}"
        )
    return name


def _returns(fn) -> str:
    """The declared return type when a spec can hold it, else Any: whatever comes back is
    checked to be plain data all the same."""
    try:
        text = _annotation(inspect.signature(fn).return_annotation)
    except (TypeError, ValueError):
        return "Any"
    if text is None:
        return "Any"
    try:
        parse_type(text, "return")
    except KitError:
        return "Any"
    return text
