"""One written signature for methods that take another's parameters and pass them on.

The asyncio twins (AsyncJail, AsyncSession) and a run's stream take exactly what the run
they delegate to takes: `takes(source)` gives such a method SOURCE's parameters, for
type checkers (through ParamSpec) and for `help()` and `inspect` (through `__signature__`),
so that the parameters are typed and documented in one place.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Concatenate


def takes[**P, S, R](
    source: Callable[Concatenate[Any, P], Any], drop: tuple[str, ...] = ()
) -> Callable[[Callable[Concatenate[S, ...], R]], Callable[Concatenate[S, P], R]]:
    """Give the decorated method SOURCE's parameters (less those named in DROP) and keep its
    own return annotation; the method takes `*args, **kwargs` and passes them on."""

    def adopt(method: Callable[Concatenate[S, ...], R]) -> Callable[Concatenate[S, P], R]:
        theirs = inspect.signature(source)
        kept = [p for p in theirs.parameters.values() if p.name not in drop]
        own = inspect.signature(method).return_annotation
        method.__signature__ = theirs.replace(  # type: ignore[attr-defined]
            parameters=kept, return_annotation=own
        )
        return method

    return adopt
