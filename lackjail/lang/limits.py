"""Size caps that keep validation (and the jail's later compile) bounded in time and memory."""

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Limits:
    """Caps on a program; exceeding one is a validation error naming the cap.

    max_comprehension_depth is low on purpose: about 21 nested list
    comprehensions crash CPython 3.12.1's compile() with SIGSEGV.
    """

    max_source_bytes: int = 64 * 1024
    max_nodes: int = 20_000
    max_depth: int = 100
    max_comprehension_depth: int = 8
    max_literal_len: int = 32 * 1024
    max_int_digits: int = 100

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or value < 1:
                raise ValueError(f"Limits.{f.name} must be a positive int, not {value!r}")

    def to_dict(self) -> dict:
        """The caps by name, for the spec and JSON output."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
