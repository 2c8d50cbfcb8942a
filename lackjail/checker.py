"""Validation as the jail will do it, in one place: `Checker(policy, kit, language)`.

`Jail`, `check`, the gate, `delegate` and the MCP server all judge programs
with a Checker, so a program one of them passes is one the jail accepts: the
same language level, the policy's program size cap, the kit's tool names and signatures, and
the same rules for parameter names and values.
"""

from __future__ import annotations

import functools
import keyword
import os
import threading
from collections.abc import Iterable, Mapping

from lackjail import lang, plain
from lackjail.lang import ValidationError, ValidationResult, format_error
from lackjail.policy import Policy, is_policy_name, load_policy

__all__ = ["Checker", "check", "format_error"]

CACHED = 256  # valid verdicts a Checker keeps
CACHED_BYTES = 8 << 10  # of programs up to this size
# How a rejection names the higher level that accepts what was rejected, per audience: a
# person at the CLI, an MCP client (which sets a tool argument, never a flag), a library caller.
LEVEL_HINTS = {
    "cli": "accepted at --language {level}",
    "mcp": 'accepted with the language argument "{level}"',
    "library": "accepted with language={level!r}",
}


class Checker:
    """Judges programs and their parameters for one policy, kit and language level.

    KIT is a resolved kit (anything with `.names`), None (no tools), a kit name
    or spec string (resolved beneath WORKSPACE), or an iterable of tool names.
    LANGUAGE overrides the policy's level, among the levels the policy allows (a PolicyError
    names them otherwise). RULES are extra custom rules. A rejected construct that a higher
    level the policy allows accepts names that level, worded for AUDIENCE (LEVEL_HINTS).
    """

    def __init__(
        self,
        policy: Policy | str | None = "default",
        kit=None,
        language: str | None = None,
        *,
        rules=(),
        workspace=None,
        audience: str = "library",
    ):
        self.policy = load_policy(policy)
        self.language = self.policy.check_language(
            lang.check_language(language or self.policy.language)
        )
        kit = _resolved(kit, workspace)
        self.tools, self.calls = _tool_names(kit)
        self.signatures = _signatures(kit)
        self.hints = _Hints(self.tools)
        self.limits = lang.ProgramLimits(max_source_bytes=self.policy.limits.program_bytes)
        self.rules = tuple(rules)
        self.level_hint = LEVEL_HINTS[audience]
        self.higher = tuple(
            level
            for level in lang.LANGUAGES[lang.LANGUAGES.index(self.language) + 1 :]
            if level in self.policy.languages
        )
        self._verdicts: dict = {}  # (program, parameter names) -> a valid verdict's parts
        self._keeping = threading.Lock()  # held while _verdicts changes
        level = lang.LEVELS[self.language]
        self.reserved = frozenset(lang.ALLOWED_BUILTINS) | frozenset(self.tools)
        if self.language != "lackpy":
            self.reserved |= frozenset(level.exceptions)

    def check(
        self,
        program: str | bytes,
        params: Mapping[str, object] | Iterable[str] | None = None,
        defined: Iterable[str] = (),
    ) -> ValidationResult:
        """The verdict on PROGRAM (str or bytes) with PARAMS; never raises for any program.

        PARAMS is a mapping of names to values (both are checked) or an
        iterable of names (names only, as `check` without values does).
        DEFINED: names an earlier run of the same session bound (a tuple).
        """
        params = params or {}
        names = tuple(n for n in params if isinstance(n, str))
        defined = tuple(defined)
        if type(program) in (str, bytes) and len(program) <= CACHED_BYTES and not self.rules:
            result = self._kept(program, names, defined)
        else:
            result = self._validate(program, names, defined)
        bad = self.param_errors(params)
        if not bad:
            return result
        return ValidationResult(False, bad + result.errors, result.calls, result.variables)

    def _validate(self, program, names: tuple, defined: tuple = ()) -> ValidationResult:
        result = self._at(self.language, program, names, defined)
        if result.valid or not self.higher:
            return result
        return self._name_higher_levels(result, program, names, defined)

    def _at(self, level: str, program, names: tuple, defined: tuple, rules=None, hints=None):
        return lang.validate(
            program,
            tools=self.calls,
            params=names,
            defined=defined,
            rules=self.rules if rules is None else rules,
            limits=self.limits,
            language=level,
            hints=hints or self.hints,
            signatures=self.signatures,
        )

    def _name_higher_levels(self, result, program, names: tuple, defined: tuple):
        """RESULT with each error of a built-in rule ending in the hint of the lowest higher
        level whose verdict has no error on that line: what the program needs there, when
        the policy allows it. (A line, not a column: levels may place one problem apart.)"""
        from lackjail.lang.rulebook import RULES

        lines = {e.line for e in result.errors if e.line is not None and e.rule in RULES}
        hinted: dict = {}  # line -> level
        for level in self.higher:
            if len(hinted) == len(lines):
                break
            # a name nothing binds counts against a level that accepts it (the python level
            # only raises NameError when the program reaches it): that level does not need it
            busy = {
                e.line
                for e in self._at(level, program, names, defined, rules=(), hints=_UNBOUND).errors
            }
            for line in lines - busy:
                hinted.setdefault(line, level)
        if not hinted:
            return result
        errors = [
            ValidationError(
                f"{e.message}; {self.level_hint.format(level=hinted[e.line])}",
                e.line,
                e.col,
                e.rule,
            )
            if e.rule in RULES and e.line in hinted
            else e
            for e in result.errors
        ]
        return ValidationResult(False, errors, result.calls, result.variables)

    def _kept(self, program, names: tuple, defined: tuple) -> ValidationResult:
        """The verdict on PROGRAM with parameter NAMES. A valid one is kept (the latest
        CACHED of them, as immutable parts): the same text with the same names gets the same
        verdict from this Checker, and a program run many times (Jail.map over parameters,
        a reused jail) is parsed once. Only valid ones: a rejection may come from the
        parser's recursion or memory limits, which depend on more than the text."""
        key = (program, names, defined)
        verdict = self._verdicts.get(key)
        if verdict is not None:
            return ValidationResult(*verdict)  # lists of its own for every caller
        result = self._validate(program, names, defined)
        if result.valid:
            with self._keeping:  # callers on other threads keep and drop verdicts too
                if len(self._verdicts) >= CACHED:
                    del self._verdicts[next(iter(self._verdicts))]  # the oldest
                self._verdicts[key] = (
                    True,
                    (),
                    tuple(result.calls),
                    tuple(result.variables),
                    result.modules,
                )
        return result

    def param_errors(self, params) -> list[ValidationError]:
        """Parameters become top-level names: each must be a name a program may use,
        hide no builtin or tool, and (when values are given) be plain data."""
        errors = []
        values = params if isinstance(params, Mapping) else None
        for name in params:
            problem = self._name_problem(name)
            if problem:
                errors.append(ValidationError(problem, rule="param-name"))
            elif values is not None:
                problem = plain.problem(
                    values[name], f"parameter {name!r}", self.policy.limits.value_bytes
                )
                if problem:
                    errors.append(ValidationError(problem, rule="param-value"))
        return errors

    def _name_problem(self, name) -> str | None:
        if (
            not isinstance(name, str)
            or not name.isidentifier()
            or not name.isascii()
            or keyword.iskeyword(name)
        ):
            return f"parameter name {name!r} is not a valid identifier"
        if name.startswith("_"):
            return f"parameter name {name!r} must not start with '_'"
        if name in lang.FORBIDDEN_NAMES:
            return f"parameter name {name!r} is a forbidden name in lackpy; rename it"
        if name in self.reserved:
            return f"parameter {name!r} would hide the builtin or tool of that name; rename it"
        return None


def _resolved(kit, workspace):
    if isinstance(kit, str):
        from lackjail.kit import resolve_kit

        return resolve_kit(kit, workspace=workspace)
    return kit


def _tool_names(kit) -> tuple[tuple, tuple]:
    """The kit's names (a pack by its namespace) and the names the validator is given:
    a pack's members one by one ("fs.read"), so that its namespace allows just those."""
    if kit is None:
        return (), ()
    names = kit.names if hasattr(kit, "names") else kit
    names = tuple(names() if callable(names) else names)
    specs = getattr(kit, "specs", None)
    return names, (tuple(specs) if isinstance(specs, dict) else names)


def _signatures(kit) -> dict:
    """Call name -> ((argument, accepted base types or None for any, required), ...): the data
    lang.calls checks calls against, from a resolved kit's specs (none from a list of names)."""
    specs = getattr(kit, "specs", {})
    if not specs:
        return {}
    from lackjail.kit.tools.toolspec import parse_type

    signatures = {}
    for call, spec in specs.items():
        params = []
        for arg in spec.args:
            types = parse_type(arg.type, f"argument '{arg.name}' of tool '{call}'")
            params.append((arg.name, None if "Any" in types else types, arg.required))
        signatures[call] = tuple(params)
    return signatures


class _Hints:
    """The bundled kits' hints for names that are not among TOOLS, read on the first unknown
    name: building them resolves every bundled kit, which a valid program never needs."""

    def __init__(self, tools):
        self.tools = tools

    def get(self, name):
        return None if name in self.tools else bundled_hints().get(name)


class _Unbound:
    """Hints that make every name nothing binds an error, at the python level too."""

    @staticmethod
    def get(name):
        return ""


_UNBOUND = _Unbound()


@functools.cache
def bundled_hints() -> dict:
    """Tool name -> "the bundled kit 'K' has it", K the smallest bundled kit that has it: words
    for every front end (a command line, the library, an MCP client), naming no flag."""
    from lackjail.kit import KitError, resolve_kit
    from lackjail.kit.assembly.kitfile import BUNDLED_DIR

    kits = []
    for path in sorted(BUNDLED_DIR.glob("*.kit")):
        try:
            kits.append((path.stem, resolve_kit(str(path)).names))
        except KitError:  # a broken bundled kit is reported where it is used, not here
            continue
    hints = {}
    for name, names in sorted(kits, key=lambda kit: len(kit[1])):
        for tool in names:
            hints.setdefault(tool, f"the bundled kit {name!r} has it")
    return hints


def check(
    program: str | bytes,
    kit: object = None,
    params: Mapping[str, object] | Iterable[str] | None = None,
    *,
    policy: Policy | str | None = "default",
    language: str | None = None,
) -> ValidationResult:
    """Validate PROGRAM as a jail with POLICY, KIT and LANGUAGE would (`lackjail.check`).

    KIT: a kit name, spec or resolved Kit (None: no tools); PARAMS: values by name, or names.
    """
    key = _checker_key(policy, kit, language)
    if key is None:
        return Checker(policy, kit, language).check(program, params)
    checker = _checkers.get(key)
    if checker is None:
        checker = Checker(policy, kit, language)
        with _keeping_checkers:
            if len(_checkers) >= CHECKERS:
                del _checkers[next(iter(_checkers))]  # the oldest
            _checkers[key] = checker
    return checker.check(program, params)


CHECKERS = 32  # Checkers `check` keeps, by what they were built from
_checkers: dict = {}
_keeping_checkers = threading.Lock()


def _checker_key(policy, kit, language) -> tuple | None:
    """What a Checker for POLICY, KIT and LANGUAGE is built from, as a key that changes when
    a file it reads changes (path, device, inode, size, mtime): `check` then parses a policy and
    resolves a kit once, not per call. None when that cannot be told cheaply (a Kit object,
    which its owner may change; a file that cannot be found: the Checker reports it)."""
    policy_key: object
    try:
        if isinstance(policy, Policy):
            policy_key = policy if _hashable(policy) else None
        elif policy is None or isinstance(policy, str) and is_policy_name(policy):
            # a bundled policy is package data: read once
            policy_key = ("bundled", "default" if policy is None else policy)
        elif isinstance(policy, (str, os.PathLike)):
            policy_key = _file_key(policy)
        else:
            return None
        kit_key = _kit_key(kit)
    except (OSError, ValueError):  # PolicyError, KitError: the Checker raises them properly
        return None
    if policy_key is None or kit_key is None:
        return None
    return (policy_key, kit_key, language)


def _kit_key(kit):
    if kit is None:
        return ("none",)
    if isinstance(kit, (tuple, list, frozenset)) and all(isinstance(n, str) for n in kit):
        return ("names", type(kit), tuple(kit))
    if not isinstance(kit, str):
        return None
    from lackjail.kit.assembly.kitfile import KIT_NAME_RE, find_kit

    folder = os.getcwd()
    if kit.endswith(".kit"):
        return ("file", folder, kit, _file_key(os.path.join(folder, kit)))
    if KIT_NAME_RE.fullmatch(kit):
        found = find_kit(kit, folder)
        return ("named", folder, kit, found and _file_key(found))
    return ("spec", kit)  # tool and pack names: the default toolbox, no file


def _file_key(path) -> tuple:
    st = os.stat(path)
    return (os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
