"""What validation returns: the verdict, each error with its place and rule, and what was called."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ValidationError:
    """One reason a program is rejected.

    `line` is 1-based and `col` is a 0-based character offset (both None when
    the error has no place); `format()` prints the column 1-based, like compilers.
    """

    message: str
    line: int | None = None
    col: int | None = None
    rule: str = "custom"

    def format(self, filename: str = "<program>") -> str:
        """`file:line:col: message`, with a 1-based column, for people and editors."""
        if self.line is None:
            return f"{filename}: {self.message}"
        if self.col is None:
            return f"{filename}:{self.line}: {self.message}"
        return f"{filename}:{self.line}:{self.col + 1}: {self.message}"

    def to_dict(self) -> dict:
        """Plain data for JSON and the wire; line and col are left out when unknown."""
        out = {"message": self.message, "rule": self.rule}
        if self.line is not None:
            out["line"] = self.line
            if self.col is not None:
                out["col"] = self.col
        return out


@dataclass
class ValidationResult:
    """The verdict on a program; truthy exactly when it is valid.

    `calls` lists, sorted and unique, the tools and builtins the program calls
    (a namespace member as `ns.member`); `variables` the names it assigns at top level.
    """

    valid: bool
    errors: list[ValidationError] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.valid

    def to_dict(self) -> dict:
        """Plain data for JSON output."""
        return {
            "valid": self.valid,
            "errors": [e.to_dict() for e in self.errors],
            "calls": list(self.calls),
            "variables": list(self.variables),
        }
