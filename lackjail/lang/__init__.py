"""The lackpy language: grammar tables, the validator, custom rules and the spec.

Only the standard library is used here and nothing else from lackjail: the
jail mounts this package and validates again before it compiles anything.
"""

from . import custom_rules
from .describe import render, spec
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

SPEC = spec()

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
