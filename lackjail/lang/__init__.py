"""The lackpy language: grammar tables, the validator, custom rules and the spec.

Only the standard library is used here and nothing else from lackjail: the
jail mounts this package and validates again before it compiles anything.
"""

from .errors import ValidationError, ValidationResult, format_error
from .grammar import (
    ALLOWED_BUILTINS,
    DEFAULT_LANGUAGE,
    EXCEPTION_NAMES,
    FORBIDDEN_NAMES,
    LANGUAGES,
    LEVELS,
)
from .limits import ProgramLimits
from .source import decode_source
from .validator import check_language, validate, validate_tree


def __getattr__(name):
    """The spec for prompts and the optional rules load on first use: the jail, which
    imports this package at every zygote's start, never uses them."""
    if name not in ("SPEC", "custom_rules", "render", "spec"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib  # `from . import` would ask this function again

    if name == "custom_rules":
        value = importlib.import_module(f"{__name__}.custom_rules")
    else:
        describe = importlib.import_module(f"{__name__}.describe")
        value = describe.spec() if name == "SPEC" else getattr(describe, name)
    globals()[name] = value
    return value


__all__ = [
    "ALLOWED_BUILTINS",
    "DEFAULT_LANGUAGE",
    "EXCEPTION_NAMES",
    "FORBIDDEN_NAMES",
    "LANGUAGES",
    "LEVELS",
    "ProgramLimits",
    "SPEC",
    "ValidationError",
    "ValidationResult",
    "check_language",
    "custom_rules",
    "decode_source",
    "format_error",
    "render",
    "spec",
    "validate",
    "validate_tree",
]
