"""Package names that load on first use (PEP 562), so that importing a package costs only
what its caller touches: a command that opens a folder does not import the commit path."""

import importlib


def exports(package: str, table: dict, namespace: dict):
    """A module `__getattr__` for PACKAGE: NAME in TABLE (name -> module) is imported on first
    use and kept in NAMESPACE (the package's globals), so later lookups skip this."""

    def __getattr__(name):
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
