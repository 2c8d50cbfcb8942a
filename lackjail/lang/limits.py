"""Size caps that keep validation (and the jail's later compile) bounded in time and memory."""

import sys

DEFAULTS = {
    "max_source_bytes": 64 * 1024,
    "max_nodes": 20_000,
    "max_depth": 100,
    "max_comprehension_depth": 8,
    "max_literal_len": 32 * 1024,
    "max_int_digits": None,  # the level's: INT_DIGITS
}
# max_int_digits by level, unless a caller sets it: the python level takes the literals a
# script may hold, up to CPython's own cap on int/str conversion (4,300 digits: its parser
# refuses a longer decimal literal, in the controller and in the jail alike); the levels
# below keep their 100. A program computes bigger ints anyway (10 ** 5000): what the cap
# bounds is the validator's and the compiler's work on one literal, never a value.
INT_DIGITS = {
    "lackpy": 100,
    "extended": 100,
    "python": sys.int_info.default_max_str_digits,
}


class ProgramLimits:
    """Caps on a program; exceeding one is a validation error naming the cap. Immutable.

    max_comprehension_depth is low on purpose: about 21 nested list
    comprehensions crash CPython 3.12.1's compile() with SIGSEGV.
    (A plain class: dataclasses would pull inspect into the jail's start-up.)
    """

    __slots__ = tuple(DEFAULTS)
    max_source_bytes: int
    max_nodes: int
    max_depth: int
    max_comprehension_depth: int
    max_literal_len: int
    max_int_digits: int | None

    def __init__(self, **caps):
        unknown = set(caps) - set(DEFAULTS)
        if unknown:
            raise TypeError(
                f"ProgramLimits has no cap {sorted(unknown)[0]!r}; caps: {', '.join(DEFAULTS)}"
            )
        for name, default in DEFAULTS.items():
            value = caps.get(name, default)
            unset = value is None is default  # max_int_digits: the level's own
            if not unset and (type(value) is not int or value < 1):
                raise ValueError(f"ProgramLimits.{name} must be a positive int, not {value!r}")
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(
            f"ProgramLimits is immutable; make a new one with ProgramLimits({name}=...)"
        )

    def __eq__(self, other):
        return (
            self.to_dict() == other.to_dict()
            if isinstance(other, ProgramLimits)
            else NotImplemented
        )

    def __hash__(self):
        return hash(tuple(self.to_dict().items()))

    def __repr__(self):
        return "ProgramLimits(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"

    def int_digits(self, level: str) -> int:
        """The integer-literal cap at LEVEL: the one set, else the level's (INT_DIGITS)."""
        return self.max_int_digits or INT_DIGITS[level]

    def to_dict(self, level: str | None = None) -> dict:
        """The caps by name, for the spec and JSON output; at LEVEL, max_int_digits is
        the one that level applies."""
        caps = {name: getattr(self, name) for name in DEFAULTS}
        if level is not None:
            caps["max_int_digits"] = self.int_digits(level)
        return caps
