"""Providers: how a tool spec becomes something the controller can call.

The protocol is two methods on an object with a `name`:

    check(spec)        raise KitError if this provider cannot serve SPEC (at kit resolution)
    bind(spec, ctx)    a callable for one call; the session calls it with the bound
                       arguments as keywords, in a worker thread, under the tool's timeout

`ctx` is a ToolContext: the call's confined WorkspaceView (the only sanctioned
way for a host tool to touch files), the policy, the call name, and a
`cancelled` event set when the call times out. A provider whose tools take no
context says so with `uses_context = False`: the session then binds each tool
once (with ctx None) instead of per call. Whatever a bound callable returns must
be plain data; the session checks.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from lackjail.errors import KitError
from lackjail.kit.tools import builtin as builtin_tools
from lackjail.kit.tools.toolspec import MODULE_RE, ToolSpec


@dataclass
class ToolContext:
    """What a provider's callable may use for one call, besides its arguments."""

    workspace: Any  # WorkspaceView
    policy: Any
    call_name: str
    cancelled: threading.Event = field(default_factory=threading.Event)


class Provider(Protocol):
    name: str

    def check(self, spec: ToolSpec) -> None: ...

    def bind(self, spec: ToolSpec, ctx: ToolContext) -> Callable[..., Any]: ...


class BuiltinProvider:
    """The file tools implemented in lackjail.kit.tools.builtin, confined to the workspace."""

    name = "builtin"

    def check(self, spec: ToolSpec) -> None:
        if spec.name not in builtin_tools.IMPLEMENTATIONS:
            known = ", ".join(sorted(builtin_tools.IMPLEMENTATIONS))
            raise KitError(
                f"tool '{spec.name}': no built-in tool of that name; built-in tools: {known}"
            )

    def bind(self, spec: ToolSpec, ctx: ToolContext) -> Callable[..., Any]:
        return functools.partial(builtin_tools.IMPLEMENTATIONS[spec.name], ctx)


class PythonProvider:
    """A function `provider_config["function"]` of module `provider_config["module"]`, imported on
    the host.
    """

    name = "python"
    uses_context = False  # its tools are plain functions: bound once per session, not per call

    def __init__(self):
        self._bound: dict = {}  # (module, function) -> callable, resolved once

    def check(self, spec: ToolSpec) -> None:
        fn = self._function(spec)
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return  # a builtin without introspection: trust the spec
        try:
            signature.bind(**{a.name: None for a in spec.args})
        except TypeError as exc:
            raise KitError(
                f"tool '{spec.name}': the spec's arguments do not fit "
                f"{spec.provider_config['module']}."
                f"{spec.provider_config.get('function', spec.name)}: {exc}"
            ) from None

    def bind(self, spec: ToolSpec, ctx: ToolContext) -> Callable[..., Any]:
        config = spec.provider_config
        key = (config.get("module"), config.get("function", spec.name.rpartition(".")[2]))
        fn = self._bound.get(key)
        if fn is None:
            fn = self._bound[key] = self._function(spec)
        return fn

    @staticmethod
    def _function(spec: ToolSpec):
        config = spec.provider_config
        unknown = set(config) - {"module", "function"}
        if unknown:
            raise KitError(
                f"tool '{spec.name}': unknown provider_config key(s) {', '.join(sorted(unknown))}; "
                "the python provider takes module and function"
            )
        module_name = config.get("module")
        function = config.get("function", spec.name.rpartition(".")[2])
        if not isinstance(module_name, str) or not MODULE_RE.fullmatch(module_name):
            raise KitError(
                f"tool '{spec.name}': provider_config.module must be a dotted module name, not "
                f"{module_name!r}"
            )
        if not isinstance(function, str) or not function.isidentifier() or function.startswith("_"):
            raise KitError(
                f"tool '{spec.name}': provider_config.function must be a public function name, not "
                f"{function!r}"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise KitError(
                f"tool '{spec.name}': cannot import module '{module_name}': {exc}"
            ) from None
        fn = getattr(module, function, None)
        if not callable(fn):
            raise KitError(
                f"tool '{spec.name}': module '{module_name}' has no function '{function}'"
            )
        return fn
