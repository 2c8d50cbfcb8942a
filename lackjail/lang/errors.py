"""What validation returns: the verdict, each error with its place and rule, and what was called.

Plain classes, not dataclasses: the jail imports this package at every start,
and dataclasses pulls in inspect (a fifth of the zygote's start-up).
"""


class ValidationError:
    """One reason a program is rejected; immutable.

    `line` and `col` are 1-based, `col` counting characters (as editors and
    SARIF do); both are None when the error has no place.
    """

    __slots__ = ("message", "line", "col", "rule")
    message: str
    line: int | None
    col: int | None
    rule: str

    def __init__(
        self, message: str, line: int | None = None, col: int | None = None, rule: str = "custom"
    ):
        for name, value in (("message", message), ("line", line), ("col", col), ("rule", rule)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"ValidationError is immutable; cannot set {name!r}")

    def _key(self):
        return (self.message, self.line, self.col, self.rule)

    def __eq__(self, other):
        return self._key() == other._key() if isinstance(other, ValidationError) else NotImplemented

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (
            f"ValidationError(message={self.message!r}, line={self.line!r}, "
            f"col={self.col!r}, rule={self.rule!r})"
        )

    def format(self, filename: str = "<program>") -> str:
        """`file:line:col: message [rule]`, for people and editors (see format_error)."""
        return format_error(self, filename)

    def to_dict(self) -> dict:
        """Plain data for JSON and the wire; line and col are left out when unknown."""
        out: dict = {"message": self.message, "rule": self.rule}
        if self.line is not None:
            out["line"] = self.line
            if self.col is not None:
                out["col"] = self.col
        return out


class ValidationResult:
    """The verdict on a program; truthy exactly when it is valid.

    `calls` lists, sorted and unique, the tools and builtins the program calls
    (a namespace member as `ns.member`); `variables` the names it assigns at top level;
    `modules` the python level's facade modules a run needs loaded in its child: those it
    imports, and those a builtin it names needs (lang.facades.IMPLIED). Not part of the
    verdict's equality or its plain data: what the controller lends a run follows from it.
    """

    __slots__ = ("valid", "errors", "calls", "variables", "modules")
    valid: bool
    errors: list[ValidationError]
    calls: list[str]
    variables: list[str]
    modules: tuple[str, ...]

    def __init__(self, valid: bool, errors=None, calls=None, variables=None, modules=()):
        self.valid = valid
        self.errors = list(errors or ())
        self.calls = list(calls or ())
        self.variables = list(variables or ())
        self.modules = tuple(modules)

    def __bool__(self) -> bool:
        return self.valid

    def __eq__(self, other):
        if not isinstance(other, ValidationResult):
            return NotImplemented
        return (self.valid, self.errors, self.calls, self.variables) == (
            other.valid,
            other.errors,
            other.calls,
            other.variables,
        )

    __hash__ = None  # type: ignore[assignment]  # a verdict is not a dict key

    def __repr__(self):
        return (
            f"ValidationResult(valid={self.valid!r}, errors={self.errors!r}, "
            f"calls={self.calls!r}, variables={self.variables!r})"
        )

    def to_dict(self) -> dict:
        """Plain data for JSON output."""
        return {
            "valid": self.valid,
            "errors": [e.to_dict() for e in self.errors],
            "calls": list(self.calls),
            "variables": list(self.variables),
        }


def format_error(error, filename: str = "<program>") -> str:
    """`file:line:col: message [rule]`: the one text form of a program error.

    ERROR is a ValidationError or an error dict ({message, line?, col?, rule?}
    as results and reports carry; columns are 1-based everywhere). Control
    characters are escaped, since file names and messages may come from a program.
    """
    if isinstance(error, ValidationError):
        message, line, col, rule = error.message, error.line, error.col, error.rule
    else:
        message, line, col, rule = (error.get(k) for k in ("message", "line", "col", "rule"))
    place = str(filename)
    if line is not None:
        place += f":{line}"
        if col is not None:
            place += f":{col}"
    text = f"{place}: {message}" + (f" [{rule}]" if rule else "")
    return text if text.isprintable() else "".join(_printable(c) for c in text)


def _printable(char: str) -> str:
    return char if char.isprintable() else repr(char)[1:-1]
