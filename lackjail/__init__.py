"""lackjail: run agent-written lackpy programs in nsjail jails.

Attributes load lazily so that the worker, which the jail mounts with only
`lang`, `protocol` and `worker`, can import `lackjail.worker` without pulling
in the host side.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Jail": "lackjail.api",
    "AsyncJail": "lackjail.api",
    "Result": "lackjail.result",
    "Stats": "lackjail.result",
    "Event": "lackjail.result",
    "Session": "lackjail.sessions",
    "AsyncSession": "lackjail.sessions",
    "SessionError": "lackjail.sessions",
    "check": "lackjail.checker",
    "Checker": "lackjail.checker",
    "ValidationResult": "lackjail.lang",
    "Policy": "lackjail.policy",
    "load_policy": "lackjail.policy",
    "generate": "lackjail.infer",
    "delegate": "lackjail.infer",
    "LackjailError": "lackjail.errors",
    "InputError": "lackjail.errors",
    "HostError": "lackjail.errors",
    "prompt": "lackjail.infer.prompt",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lackjail' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
