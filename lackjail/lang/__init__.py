"""The lackpy language: grammar tables, the validator, custom rules and the spec.

Only the standard library is used here and nothing else from lackjail: the
jail mounts this package and validates again before it compiles anything.
"""

from . import rules
from .errors import ValidationError, ValidationResult
from .grammar import ALLOWED_BUILTINS, FORBIDDEN_NAMES
from .limits import Limits
from .source import decode_source
from .spec import spec
from .validator import check, validate, validate_tree

SPEC = spec()

__all__ = [
    "ALLOWED_BUILTINS",
    "FORBIDDEN_NAMES",
    "Limits",
    "SPEC",
    "ValidationError",
    "ValidationResult",
    "check",
    "decode_source",
    "rules",
    "spec",
    "validate",
    "validate_tree",
]
