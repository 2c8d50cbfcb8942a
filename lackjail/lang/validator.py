"""The validator: decode, parse once, walk the tree once; it never raises on any program.

The controller only parses and walks: it compiles nothing, because some
programs that parse crash CPython 3.12.1's compile() (about 21 nested list
comprehensions); the jail compiles, after validating again.
"""

import _ast as ast  # the node classes; ast.py would bring re and enum into every jail's start
import sys
import warnings
from _string import formatter_parser  # string.Formatter.parse, without importing string

from .errors import ValidationError, ValidationResult
from .facades import FACADES, IMPLIED, INSTEAD
from .grammar import (
    ALLOWED_BUILTINS,
    ALTERNATIVES,
    CALL_ONLY,
    DEFAULT_LANGUAGE,
    DEFINABLE_DUNDERS,
    FORBIDDEN_CONSTRUCTS,
    FORBIDDEN_INSTEAD,
    FORBIDDEN_NAMES,
    FORBIDDEN_OPERATORS,
    FORMAT_ATTRIBUTES,
    INTERNAL_ATTRIBUTE_PREFIXES,
    INTERNAL_ATTRIBUTES,
    LANGUAGES,
    LEVELS,
    NAMESPACE_DUNDERS,
    attribute_refused,
)
from .limits import ProgramLimits
from .source import SourceError, prepare
from .stdlib_names import NO_FILE, lacks

FILENAME = "<lackpy>"

# The parser reports some oddities (invalid escape sequences, `1if x`) as
# SyntaxWarning. A program's warnings are not the host's business, and under
# `-W error` they would reject valid programs. This filter matches our filename only:
# a plain string as a filter's module matches that module name exactly (as CPython's
# own default filter for '__main__' does); warnings.filterwarnings would import re.
_WARNING_FILTER = ("ignore", None, SyntaxWarning, FILENAME, 0)
_WARNING_MESSAGES = (
    "invalid escape sequence",
    "invalid decimal literal",
    "invalid hexadecimal literal",
    "invalid octal literal",
    "invalid binary literal",
)

_DEFAULT_LIMITS = ProgramLimits()
_BUILTINS = frozenset(ALLOWED_BUILTINS)
_STORE = ast.Store
_LOAD = ast.Load
_NAME = ast.Name
_CONSTANT = ast.Constant
_STARRED = ast.Starred
_LAMBDA = ast.Lambda


class _Abort(Exception):
    """Stops the walk: a size limit was hit and the rest of the tree is not worth reading."""


_LEVEL_NAMES = {"lackpy": "lackpy", "extended": "the extended level", "python": "the python level"}


class _Names:
    """What a program may use without binding it: tools (with namespace members),
    parameters, builtins, and above the lackpy level the exception classes."""

    __slots__ = (
        "tools",
        "members",
        "params",
        "callable",
        "builtins",
        "exceptions",
        "forbidden",
        "known",
        "binary",
        "unary",
        "level",
    )

    def __init__(self, tools, params, language="lackpy"):
        level = LEVELS[language]
        plain, members = set(), {}
        for name in tools:
            head, dot, member = name.partition(".")
            if dot:
                members.setdefault(head, set()).add(member)
            else:
                plain.add(name)
        # A namespace is declared by its members ("fs.read"), and allows just those, or
        # whole ("fs.*"); a name declared without members is a tool, called as it is and
        # without attributes.
        self.members = {ns: frozenset(m) for ns, m in members.items()}
        self.tools = frozenset(plain) | frozenset(self.members)
        self.params = frozenset(params)
        self.exceptions = frozenset(level.exceptions)
        self.builtins = frozenset(level.builtins) | self.exceptions
        self.callable = self.builtins | self.tools | self.params
        self.forbidden = level.forbidden_names
        self.binary, self.unary = level.binary, level.unary
        self.level = _LEVEL_NAMES[language]  # for messages
        # Names a read may skip every other check for: defined and harmless (and needing no
        # facade module: IMPLIED's are noted by name())
        self.known = frozenset(
            n
            for n in self.callable
            if n not in self.forbidden
            and n[:2] != "__"
            and n.isascii()
            and n not in CALL_ONLY
            and n not in IMPLIED
        )


def _name_list(names, what):
    """Names from an iterable of str, or from one comma-separated str."""
    if isinstance(names, str):
        names = names.split(",")
    out = []
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{what} must be names (str), not {type(name).__name__}")
        name = name.strip()
        if name:
            out.append(name)
    return out


_NO_NAMES = {language: _Names((), (), language) for language in LANGUAGES}
_NAMES_KEPT: dict = {}  # (tools, params, language) -> _Names, for callers that pass tuples


def _names(tools, params, language) -> _Names:
    """The names of TOOLS and PARAMS at LANGUAGE; kept when both are tuples (a Checker's, run
    after run), so a program's validation does not rebuild them."""
    key = (tools, params, language) if type(tools) is tuple and type(params) is tuple else None
    names = _NAMES_KEPT.get(key) if key is not None else None
    if names is None:
        names = _Names(_name_list(tools, "tools"), _name_list(params, "params"), language)
        if key is not None:
            if len(_NAMES_KEPT) >= 64:
                _NAMES_KEPT.clear()
            _NAMES_KEPT[key] = names
    return names


_NO_HINTS: dict = {}  # read only: shared by every walk without hints

_MODULE, _FUNCTION, _CLASS = 0, 1, 2


class _Scope:
    """The names bound so far in one scope, and the reads still waiting for a binding.

    A read of a name nothing has bound yet is not an error at once when a later
    binding can still reach it: inside a loop (a later iteration binds it), or
    in a function body or generator (it runs after the enclosing scope went on).
    A comprehension runs at once: it has no scope object, see `generators`.
    `loops` holds, per open loop, its waiting reads and the `finally` depth at
    its start; `late` the reads that wait for the scope's end; `yields` whether
    it is a def's body (where the python level allows `yield`).
    """

    __slots__ = ("kind", "names", "loops", "late", "in_finally", "yields")

    def __init__(self, kind):
        self.kind = kind
        self.names = set()
        self.loops = []
        self.late = []
        self.in_finally = 0
        self.yields = False


def _plain_format(node) -> bool:
    """Is NODE a str literal whose format fields (and the fields nested in their specs)
    look up no attribute and no index? `'{0.__class__}'.format(x)` must not run."""
    if node.__class__ is not ast.Constant or node.value.__class__ is not str:
        return False
    return _plain_fields(node.value)


def _plain_fields(text, depth=0) -> bool:
    try:
        for _, field, spec, _ in formatter_parser(text):
            if field is not None and ("." in field or "[" in field):
                return False
            if spec and "{" in spec and (depth > 0 or not _plain_fields(spec, depth + 1)):
                return False  # str.format nests fields one level deep at most
    except ValueError:  # not a valid format string: str.format would raise anyway
        return False
    return True


# The builtins that take an attribute's name as a string (the jail's own, guarded).
_BY_NAME = frozenset({"getattr", "hasattr", "setattr"})
_NAME_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__"})
# The names a script reads that the interpreter sets: `__debug__` is a constant (True
# without -O; the jail runs no -O), never bound.
_READ_DUNDERS = frozenset({"__name__", "__debug__"})
# A module's own data, as scripts set it: no meaning to the interpreter or the jail.
_MODULE_DUNDERS = frozenset({"__all__", "__version__", "__author__"})


# The classes a class pattern may take positional sub-patterns of: they match the subject
# itself (`case int(n):`). Any other class's positional sub-patterns read the attributes its
# __match_args__ names, which the program can make at run time (a dataclass or namedtuple
# field `tb_frame`, a class that ABC.register or a runtime_checkable Protocol makes match a
# traceback): attribute names the validator never sees.
_SELF_MATCHING = frozenset(
    {
        "bool",
        "bytearray",
        "bytes",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "set",
        "str",
        "tuple",
    }
)

# namedtuple's documented API, spelt with a leading '_' so as not to clash with field names.
_NAMEDTUPLE_API = frozenset({"_make", "_asdict", "_replace", "_fields", "_field_defaults"})


def _foreign(module) -> bool:
    """Is MODULE outside CPython's standard library (numpy, requests, a program's own
    package)? Importing one fails in the jail as where it is not installed. A '_' name
    counts as the standard library's (its private modules are not all listed)."""
    head = module.partition(".")[0]
    return head[:1] != "_" and head not in sys.stdlib_module_names


def _importing(ident) -> str:
    """The import statement that binds IDENT from a facade (`import sys`, `from re import
    compile`)."""
    if ident in FACADES:
        return f"import {ident}"
    module = next((m for m, names in FACADES.items() if ident in names), None)
    return f"from {module} import {ident}" if module else f"import {ident}"


def _is_dunder(name) -> bool:
    """'__x__', the names Python gives a meaning; a private '__x' is none of them."""
    return len(name) > 4 and name[:2] == "__" and name[-2:] == "__"


def _future_annotations(body) -> bool:
    """Does BODY start (after a docstring) with `from __future__ import annotations`?"""
    for statement in body:
        kind = statement.__class__
        if kind is ast.ImportFrom and statement.module == "__future__":
            if any(alias.name == "annotations" for alias in statement.names):
                return True
        elif not (kind is ast.Expr and statement.value.__class__ is _CONSTANT):
            return False
    return False


def _is_sentence(text) -> bool:
    """Does TEXT hold whitespace? Then it is no attribute name or dotted path for any sink
    ("from __exit__", an assert's message); what the program cuts out of it at run time
    meets getattr's own check."""
    return " " in text or any(c.isspace() for c in text)


def _dunder_word(text):
    """The first word of TEXT that starts with '__' and a letter or digit ('__class__',
    '__x'), other than '__main__'; None if there is none. A data string may hold '__'
    ('hi____', 'a__b'), but a dunder name in one is on its way to an attribute."""
    size = len(text)
    start = text.find("__")
    while start >= 0:
        end = start
        while end < size and (text[end] == "_" or text[end].isalnum()):
            end += 1
        word = text[start:end]
        head = start == 0 or not (text[start - 1] == "_" or text[start - 1].isalnum())
        if head and word.strip("_") and word != "__main__":
            return word
        start = text.find("__", max(end, start + 2))
    return None


def _stored_names(target):
    """The names a `for` target binds: its Name nodes, inside tuples, lists and stars."""
    names, todo = [], [target]
    while todo:
        node = todo.pop()
        kind = node.__class__
        if kind is _NAME:
            names.append(node.id)
        elif kind is ast.Tuple or kind is ast.List:
            todo += node.elts
        elif kind is ast.Starred:
            todo.append(node.value)
    return names


class _Walker:
    """One recursive pass over the tree, dispatching on node class (see _HANDLERS)."""

    __slots__ = (
        "errors",
        "calls",
        "variables",
        "names",
        "known",
        "forbidden_names",
        "lines",
        "room",
        "scope",
        "scopes",
        "current",
        "extended",
        "python",
        "comprehending",
        "modules",
        "needs",
        "lazy_annotations",
        "handlers",
        "hints",
        "max_nodes",
        "max_depth",
        "max_scope",
        "max_literal",
        "max_digits",
        "private_defined",
        "private_used",
        "rebound",
        "self_matched",
    )

    def __init__(self, names: _Names, limits: ProgramLimits, lines, language="lackpy", hints=None):
        self.errors = []
        self.calls = set()
        self.variables = set()
        self.names = names
        self.known = names.known  # read for most Name nodes: one attribute, not two
        self.forbidden_names = names.forbidden
        self.lines = lines  # UTF-8 lines when the source is not ASCII, else None
        self.room = limits.max_nodes  # nodes still allowed: one count and test per node
        self.scope = 0  # comprehension, lambda, generator and function nesting
        self.current = _Scope(_MODULE)
        self.scopes = [self.current]
        self.extended = language != "lackpy"
        self.python = language == "python"
        self.lazy_annotations = False
        self.modules = {}  # name -> the facade module an import bound it to (python level)
        self.needs = set()  # the facade modules a run needs loaded (ValidationResult.modules)
        self.comprehending = 0  # comprehensions open around the node being walked
        self.handlers = _LEVEL_HANDLERS[language]
        self.hints = hints or _NO_HINTS
        self.max_nodes = limits.max_nodes
        self.max_depth = limits.max_depth
        self.max_scope = limits.max_comprehension_depth
        self.max_literal = limits.max_literal_len
        self.max_digits = limits.int_digits(language)
        self.private_defined = set()  # the '_x' attributes the program's own objects get
        self.private_used = []  # (name, line, col) of each '_x' attribute it reads
        self.rebound = set()  # the builtin names the program binds anywhere
        self.self_matched = []  # (name, line, col): `case int(n)`, int must stay the builtin

    def run(self, tree) -> bool:
        """Walk TREE; False when the walk stopped early (a size limit, or too deep to recurse)."""
        try:
            self.visit(tree, 0)
            self.private_reads()
            self.self_matching()
            return True
        except _Abort:
            return False
        except RecursionError:
            self.error(
                "limit-depth",
                f"program nests too deeply to check; the limit is {self.max_depth} levels",
            )
            return False
        except Exception as exc:  # fail closed: a validator bug must never pass a program
            self.error("internal", f"validator error: {type(exc).__name__}: {exc}")
            return False

    def error(self, rule, message, line=None, col=None):
        """Record an error; COL is the parser's 0-based UTF-8 byte offset, stored as a
        1-based character column."""
        if col is not None:
            lines = self.lines
            if lines is not None and line is not None and 0 < line <= len(lines):
                col = len(lines[line - 1][:col].decode("utf-8", "replace"))
            col += 1
        self.errors.append(ValidationError(message, line, col, rule))

    def forbidden(self, node, what=None):
        """A construct the level does not allow, with what to write instead."""
        name = node.__class__.__name__
        what = what or FORBIDDEN_CONSTRUCTS.get(name, name)
        message = f"{what} is not allowed in {self.names.level}"
        instead = ALTERNATIVES.get(name)  # a higher level that accepts it: the Checker names it
        if instead:
            message += f": {instead}"
        self.error(
            "forbidden-node",
            message,
            getattr(node, "lineno", None),
            getattr(node, "col_offset", None),
        )

    def over_limit(self, node, depth):
        """Report the node or depth cap that NODE broke, and stop the walk."""
        if self.room < 0:
            self.error(
                "limit-nodes",
                f"program has more than {self.max_nodes} AST nodes; the limit is {self.max_nodes}",
            )
        else:
            self.error(
                "limit-depth",
                f"program nests more than {self.max_depth} levels deep; "
                f"the limit is {self.max_depth}",
                getattr(node, "lineno", None),
                getattr(node, "col_offset", None),
            )
        raise _Abort

    def operator(self, node, suffix=""):
        """Report NODE's operator, one lackpy does not allow (SUFFIX "=" for `x += 1`); the
        caller tests it (a call per operator node would cost every program)."""
        op = node.op.__class__
        spelt = FORBIDDEN_OPERATORS.get(op, op.__name__) + suffix
        self.error(
            "forbidden-operator",
            f"operator '{spelt}' is not allowed in {self.names.level}",
            node.lineno,
            node.col_offset,
        )

    def enter(self, node, depth):
        """Count a node that its parent walks itself (keyword, comprehension, lambda parts)."""
        self.room -= 1
        if self.room < 0 or depth > self.max_depth:
            self.over_limit(node, depth)

    def visit(self, node, depth):
        self.room -= 1
        if self.room < 0 or depth > self.max_depth:
            self.over_limit(node, depth)
        kind = node.__class__
        if kind is _NAME and self.lines is None:
            # Fast paths for the commonest node in an ASCII program: reading a known or bound
            # name, and binding an ordinary one; anything else takes v_name's full checks.
            ident, ctx = node.id, node.ctx.__class__
            if ctx is _LOAD:
                if ident in self.known or ident in self.current.names:
                    return
            elif ctx is _STORE and ident not in self.forbidden_names and ident[:2] != "__":
                if ident in self.names.callable:  # rebinding one: bind() reports it
                    self.bind(ident, node.lineno, node.col_offset)
                else:  # bind()'s own path for an ordinary name, without the call
                    if self.scope == 0:
                        self.variables.add(ident)
                    elif ident[:1] == "_" and self.current.kind == _CLASS:
                        self.private_defined.add(ident)
                    self.current.names.add(ident)
                    if self.modules:
                        self.modules.pop(ident, None)  # no longer (only) a module
                return
        elif kind is _CONSTANT:
            # The next commonest: a constant no rule of v_constant's can reject needs no call.
            value = node.value
            cls = value.__class__
            if cls is str:
                if len(value) <= self.max_literal and "__" not in value:
                    return
            elif cls is int:
                if value.bit_length() <= 3 * self.max_digits:
                    return
            elif cls is not bytes:  # None, bool, float, complex, Ellipsis: no rule applies
                return
        try:
            handler = self.handlers[kind]
        except KeyError:
            self.forbidden(node)
        else:
            handler(self, node, depth + 1)

    def block(self, statements, depth):
        visit = self.visit
        for statement in statements:
            visit(statement, depth)

    # -- scopes and the undefined-name rule -----------------------------------

    def push(self, kind, node) -> bool:
        """Open a scope for NODE; False (and an error) past the nesting cap."""
        if self.scope >= self.max_scope:
            self.scope_limit(node)
            return False
        self.scope += 1
        self.current = scope = _Scope(kind)
        self.scopes.append(scope)
        return True

    def pop(self):
        """Close the innermost scope. Its late reads (a function, lambda or generator body
        runs later) wait for the enclosing scope's end: any binding there counts, even one
        after them in the text."""
        scope = self.scopes.pop()
        self.current = outer = self.scopes[-1]
        self.scope -= 1
        for item in scope.late:
            if item[0] not in scope.names and item[0] not in outer.names:
                outer.late.append(item)

    def read(self, ident, line, col):
        """A read of IDENT (not a known name): bound already, or bound later where that counts.
        At the python level a name nothing binds is Python's NameError when it is reached, as
        in CPython; only a forbidden name a program may bind (by importing it), and a name
        with a hint (a tool of another kit: the program meant a tool), must be bound."""
        scope = self.current
        if ident not in scope.names and (
            not self.python or ident in FORBIDDEN_NAMES or self.hints is not _NO_HINTS
        ):
            self.wait(scope, (ident, line, col))

    def wait(self, scope, item):
        """ITEM is unbound in SCOPE so far: wait for its innermost loop's end or the
        scope's end where a later binding still counts; else it is undefined."""
        if scope.loops:
            scope.loops[-1][0].append(item)
        elif scope.kind == _MODULE:
            self.undefined(item)
        else:
            scope.late.append(item)

    def undefined(self, item):
        ident, line, col = item
        if self.python and ident in FORBIDDEN_NAMES:  # one a facade exports: sys, compile
            self.error(
                "forbidden-name",
                f"{ident!r} is a forbidden name in {self.names.level} unless the program "
                f"binds it: {_importing(ident)}",
                line,
                col,
            )
            return
        hint = self.hints.get(ident)
        if self.python and hint is None:  # NameError when the program reaches it
            return
        message = (
            f"name {ident!r} is not defined: it is not a builtin, a tool or a parameter, "
            "and nothing binds it before this use"
        )
        self.error("undefined-name", f"{message}; {hint}" if hint else message, line, col)

    def loop(self, body, depth, test=None):
        """Walk a loop's TEST and BODY; reads in them may be bound later in the loop."""
        scope = self.current
        scope.loops.append(([], scope.in_finally))
        if test is not None:
            self.visit(test, depth)
        self.block(body, depth)
        waiting = scope.loops.pop()[0]
        for item in waiting:
            if item[0] not in scope.names:
                self.wait(scope, item)

    # -- identifiers -------------------------------------------------------

    def ascii_identifier(self, ident, line, col, end=None):
        """Reject an identifier not spelt in ASCII in the source.

        The parser NFKC-normalises identifiers (`ｅｖａｌ` and `𝐞𝐯𝐚𝐥` become
        `eval`), so the tree cannot tell; the source bytes at the node can.
        END is given for an attribute, whose name ends there (its start is
        only known for an ASCII name).
        """
        lines = self.lines
        if line is None or not 0 < line <= len(lines):
            line = col = None
        elif (
            ident.isascii()
            and col >= 0
            and lines[line - 1][col : col + len(ident)] == ident.encode("ascii")
        ):
            return
        elif end is not None:  # report where the attribute name starts: after the dot and blanks
            text = lines[line - 1]
            col = text.rfind(b".", 0, end) + 1
            col += len(text[col:end]) - len(text[col:end].lstrip())
        self.error(
            "non-ascii-identifier",
            f"identifiers must be ASCII; this one reads as {ident!r} after Unicode normalisation",
            line,
            col,
        )

    def check_name(self, ident, line, col, what="name") -> bool:
        """A name or parameter: no forbidden name, no leading '__' (False, and an error)."""
        if ident in self.forbidden_names:
            message = f"{ident!r} is a forbidden name in {self.names.level}"
            instead = (FORBIDDEN_INSTEAD.get(ident) or INSTEAD.get(ident)) if self.python else None
            self.error("forbidden-name", f"{message}: {instead}" if instead else message, line, col)
        elif ident[:2] == "__" and (not self.python or ident[-2:] == "__"):
            self.error(
                "dunder-name",
                f"{what} {ident!r} starts with '__', which is not allowed"
                if not self.python
                else f"{what} {ident!r} is a dunder name, which is not allowed",
                line,
                col,
            )
        else:  # at the python level a private name (__x, not ending in '__') is a name
            return True
        return False

    def bind(self, ident, line, col):
        """A name being bound: never a builtin, tool or parameter (that would hide or swap a
        callable; the python level lets a builtin be rebound: it has no key= rule to keep).
        The caller has checked IDENT: a scope holds no forbidden or '__' name, so a read of
        a name found there needs no other test."""
        names = self.names
        if ident in names.builtins:
            self.rebound.add(ident)
        if ident in names.builtins and not self.python:
            self.error(
                "rebind-builtin", f"cannot bind {ident!r}: it is an allowed builtin", line, col
            )
        elif ident in names.tools:
            self.error("rebind-tool", f"cannot bind {ident!r}: it is a tool", line, col)
        elif ident in names.params:
            self.error("rebind-param", f"cannot bind {ident!r}: it is a parameter", line, col)
        elif self.scope == 0:
            self.variables.add(ident)
        if ident[:1] == "_" and self.current.kind == _CLASS:
            self.private_defined.add(ident)  # a class member: its objects' attribute
        self.current.names.add(ident)
        if self.modules:
            self.modules.pop(ident, None)

    def bind_identifier(self, ident, line, col, what):
        """A name bound by a parameter, a def or an `except ... as`: every identifier rule."""
        if self.lines is not None:
            self.ascii_identifier(ident, line, col)
        if self.check_name(ident, line, col, what):
            self.bind(ident, line, col)

    def bind_spelt(self, ident, node, before, what):
        """Bind the name of a def or an `except ... as` (the tree has no place for it):
        in a non-ASCII source it must be spelt in ASCII after the keyword BEFORE on a
        header line."""
        line, col = node.lineno, node.col_offset
        if self.lines is not None:
            spelt = ident.encode("utf-8")
            last = node.body[0].lineno if node.body else line
            for number in range(line, min(last, len(self.lines)) + 1):
                found = _spelt_after(
                    self.lines[number - 1], before, spelt, col if number == line else 0
                )
                if found >= 0 and ident.isascii():
                    line, col = number, found
                    break
            else:
                self.error(
                    "non-ascii-identifier",
                    f"identifiers must be ASCII; {ident!r} is not spelt in ASCII here",
                    line,
                    col,
                )
        if self.check_name(ident, line, col, what):
            self.bind(ident, line, col)

    # -- handlers, one per allowed node class ---------------------------------

    def children(self, node, depth):
        """Visit the fields _CHILDREN names for NODE's class, in the order Python evaluates
        them (None fields skipped): the whole handler of a node with no rule of its own.
        The order matters: a read is checked against the bindings made before it."""
        visit = self.visit
        for field in _CHILDREN[node.__class__]:
            child = getattr(node, field)
            if child.__class__ is list:
                for item in child:
                    visit(item, depth)
            elif child is not None:
                visit(child, depth)

    def v_module(self, node, depth):
        if self.python:
            self.lazy_annotations = _future_annotations(node.body)
        self.block(node.body, depth)
        scope = self.current
        for item in scope.late:  # function bodies' reads: any module binding counts
            if item[0] not in scope.names:
                self.undefined(item)

    def v_assign(self, node, depth):
        visit = self.visit
        visit(node.value, depth)  # the value is computed before any target is bound
        for target in node.targets:
            visit(target, depth)

    def v_augassign(self, node, depth):
        if node.op.__class__ not in self.names.binary:
            self.operator(node, "=")
        target = node.target
        if target.__class__ is _NAME and target.id not in self.names.callable:
            self.read(target.id, target.lineno, target.col_offset)  # `x += 1` reads x first
        self.visit(node.value, depth)
        self.visit(target, depth)

    def v_for(self, node, depth):
        it = node.iter
        if not self.extended and it.__class__ is not ast.Call and it.__class__ is not _NAME:
            self.error(
                "for-iter",
                "'for' must iterate over a call or a name (the data a tool or builtin made); "
                "name a literal first: items = [...], then for x in items",
                it.lineno,
                it.col_offset,
            )
        self.visit(it, depth)
        scope = self.current
        scope.loops.append(([], scope.in_finally))
        self.visit(node.target, depth)
        self.block(node.body, depth)
        waiting = scope.loops.pop()[0]
        for item in waiting:
            if item[0] not in scope.names:
                self.wait(scope, item)
        self.block(node.orelse, depth)

    def v_while(self, node, depth):
        self.loop(node.body, depth, node.test)
        self.block(node.orelse, depth)

    def v_call(self, node, depth):
        func = node.func
        kind = func.__class__
        names = self.names
        to_tool = False
        visit = self.visit
        namespace = None  # the dict literal that type(name, bases, {...}) makes a class of
        if kind is _NAME:
            ident = func.id
            if ident in _BY_NAME and self.python and not self.bound(ident):
                self.attribute_by_name(node)
            elif (
                ident == "type"
                and self.python
                and len(node.args) == 3
                and node.args[2].__class__ is ast.Dict
                and not self.bound(ident)
            ):
                namespace = node.args[2]
            if ident in CALL_ONLY and self.python and not self.bound(ident):
                self.call_only(node, depth)
            elif ident in names.callable:
                to_tool = ident in names.tools
                if to_tool or ident in names.builtins:
                    self.calls.add(ident)
                if ident in self.known and self.lines is None:  # visit()'s fast path, inline
                    self.room -= 1
                    if self.room < 0 or depth > self.max_depth:
                        self.over_limit(func, depth)
                else:
                    visit(func, depth)
            elif self.extended or ident in self.forbidden_names or ident[:2] == "__":
                visit(func, depth)  # a bound name (function, lambda) or its own error
            else:
                self.name(func, False)  # unknown-call says it all: no undefined-name too
                message = f"{ident!r} is not a tool, an allowed builtin or a parameter"
                hint = self.hints.get(ident)
                self.error(
                    "unknown-call",
                    f"{message}; {hint}" if hint else message,
                    func.lineno,
                    func.col_offset,
                )
        elif kind is ast.Attribute:
            owner = func.value
            if owner.__class__ is _NAME and owner.id in names.members:
                to_tool = True
                qualified = f"{owner.id}.{func.attr}"
                members = names.members[owner.id]
                if func.attr not in members and "*" not in members:
                    self.error(
                        "unknown-call", f"{qualified!r} is not a tool", func.lineno, func.col_offset
                    )
                else:
                    self.calls.add(qualified)
            visit(func, depth)
        elif not self.extended:
            self.error(
                "call-target",
                "only tools, allowed builtins, parameters and methods can be called, "
                f"not a {kind.__name__} expression",
                func.lineno,
                func.col_offset,
            )
            visit(func, depth)
        else:
            visit(func, depth)
        for arg in node.args:
            if arg.__class__ is _STARRED:
                self.unpacked(arg, depth)
            elif arg is namespace:
                self.class_namespace(arg, depth)
            else:
                visit(arg, depth)
        for kw in node.keywords:
            if (
                kw.arg is None
                and not to_tool
                and not self.python
                and not (kind is _NAME and func.id == "dict")
            ):
                # `sorted(x, **{"key": f})` would hand over any callable, past the key= rule.
                self.error(
                    "kwargs-argument",
                    "a **mapping argument is only allowed in a call of dict() or of a tool",
                    kw.lineno,
                    kw.col_offset,
                )
            self.keyword(kw, depth, to_tool)

    def call_only(self, node, depth):
        """`super()` at the python level: the one shape it may take."""
        func = node.func
        self.enter(func, depth)
        count = len(node.args) + len(node.keywords)
        starred = any(a.__class__ is _STARRED for a in node.args) or any(
            k.arg is None for k in node.keywords
        )
        if count not in (0, 2) or starred or node.keywords:
            self.error(
                "call-only",
                "super() takes no arguments here, or a class and an object: super().method(...)",
                node.lineno,
                node.col_offset,
            )
        self.calls.add(func.id)

    def class_namespace(self, node, depth):
        """The dict literal of `type(name, bases, {...})`: a class body's bindings. A str key
        that starts with '__' is one a class body may define (NAMESPACE_DUNDERS); the jail's
        type() checks every key again when it is called, whatever built the dict."""
        self.enter(node, depth)
        keys = node.keys
        if len(keys) > self.max_literal:
            self.display(node, keys)
        for key, value in zip(keys, node.values):
            name = key.value if key.__class__ is _CONSTANT else None
            if name.__class__ is str and name[:2] == "__" and len(name) <= self.max_literal:
                self.enter(key, depth + 1)  # not a data string: no dunder-string rule
                if name not in NAMESPACE_DUNDERS:
                    self.error(
                        "dunder-method",
                        f"a class may not define {name!r}, in type()'s namespace as in a "
                        "class body: the dunder methods a class may define are __init__, "
                        "__repr__, __str__, comparisons, arithmetic ... (the python level's "
                        "spec lists them)",
                        key.lineno,
                        key.col_offset,
                    )
            elif key is not None:  # None for a `**mapping` entry
                if name.__class__ is str and name[:1] == "_":
                    self.private_defined.add(name)  # as `_x = ...` in a class body
                self.visit(key, depth + 1)
            self.visit(value, depth + 1)

    def keyword(self, node, depth, to_tool):
        """A keyword argument; at the lackpy level key= is where a lambda may appear,
        and what it may be is restricted."""
        self.enter(node, depth)
        ident = node.arg
        value = node.value
        if ident is not None:
            if self.lines is not None:
                self.ascii_identifier(ident, node.lineno, node.col_offset)
            if ident[:2] == "__":
                self.error(
                    "dunder-name",
                    f"keyword argument {ident!r} starts with '__', which is not allowed",
                    node.lineno,
                    node.col_offset,
                )
            if ident == "key" and not self.extended:
                if value.__class__ is _LAMBDA:
                    self.key_lambda(value, depth + 1)
                    return
                # A builtin or method calls its key for every item: only a
                # name the validator knows may be handed over. A tool's key=
                # is plain data sent to the controller.
                if value.__class__ is _NAME and value.id in self.names.callable:
                    if value.id in _BUILTINS or value.id in self.names.tools:
                        self.calls.add(value.id)
                elif not to_tool:
                    self.error(
                        "key-argument",
                        "key= must be a lambda or the name of an allowed builtin, "
                        "a tool or a parameter",
                        value.lineno,
                        value.col_offset,
                    )
        self.visit(value, depth + 1)

    def key_lambda(self, node, depth):
        self.enter(node, depth)
        args = node.args
        self.enter(args, depth + 1)
        if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults:
            self.error(
                "lambda-args",
                "a key= lambda takes plain positional parameters only "
                "(no defaults, '/', '*' or '**')",
                node.lineno,
                node.col_offset,
            )
        if not self.push(_FUNCTION, node):
            return
        self.parameters(args.args, depth + 2)  # local: bound, but not program variables
        self.visit(node.body, depth + 1)
        self.pop()

    def v_lambda(self, node, depth):
        self.error(
            "lambda-position",
            "lambda is only allowed as the key= argument of a call",
            node.lineno,
            node.col_offset,
        )

    def name(self, node, read=True):
        ident, line, col = node.id, node.lineno, node.col_offset
        if self.lines is not None:
            self.ascii_identifier(ident, line, col)
        ctx = node.ctx.__class__
        if ident in self.forbidden_names or ident[:2] == "__":  # first: most names are fine
            if self.python and self.python_dunder(ident, ctx, line, col):
                return
            if not self.check_name(ident, line, col):
                return
        if ctx is _STORE:
            self.bind(ident, line, col)
        elif ident in CALL_ONLY and self.python and not self.bound(ident):
            self.error(
                "call-only",
                "'super' may only be called here, with no arguments: super().method(...)",
                line,
                col,
            )
        elif read and ident not in self.names.callable:
            self.read(ident, line, col)
        elif ident in IMPLIED and self.python:
            self.needs.add(IMPLIED[ident])

    def python_dunder(self, ident, ctx, line, col) -> bool:
        """The python level's '__' names: `__name__` and `__debug__` (CPython's constant
        True) read, and in a class body the dunders a class may define (DEFINABLE_DUNDERS).
        True when IDENT is one of those, handled."""
        if (ident in _READ_DUNDERS and ctx is _LOAD) or ident in _MODULE_DUNDERS:
            if ctx is _STORE:
                self.current.names.add(ident)
            return True
        if ctx is _STORE and self.current.kind == _CLASS and ident in DEFINABLE_DUNDERS:
            self.current.names.add(ident)
            return True
        return False

    def bound(self, ident) -> bool:
        """Has the program bound IDENT in any open scope (a builtin it rebound)?"""
        return any(ident in scope.names for scope in self.scopes)

    def v_name(self, node, depth):
        self.name(node)

    def v_attribute(self, node, depth):
        attr = node.attr
        line, end = node.end_lineno, node.end_col_offset
        col = end - len(attr)  # where the name is (when it is ASCII, as it must be)
        if self.lines is not None:
            self.ascii_identifier(attr, line, col, end)
        errors = len(self.errors)
        if attr[0] == "_" and not (self.python and self.python_attribute(node)):
            self.error(
                "dunder-attribute",
                f"attribute '.{attr}' is not allowed: attribute names must not start with "
                + ("'__'" if self.python else "'_'"),
                line,
                col,
            )
        elif attr in FORMAT_ATTRIBUTES and not (
            self.extended and attr == "format" and _plain_format(node.value)
        ):
            where = (
                " except on a string literal whose fields name no attribute or index "
                "('{}', '{0}', '{name:>8}')"
                if self.extended
                else ""
            )
            self.error(
                "format-attribute",
                f"attribute '.{attr}' is not allowed{where} (format fields look up "
                "attributes); use an f-string",
                line,
                col,
            )
        elif attr in INTERNAL_ATTRIBUTES or attr.startswith(INTERNAL_ATTRIBUTE_PREFIXES):
            self.error(
                "internal-attribute",
                f"attribute '.{attr}' is not allowed: frame, generator, code, "
                "traceback and type internals are off limits",
                line,
                col,
            )
        owner = node.value
        if self.modules and owner.__class__ is _NAME and owner.id in self.modules:
            self.module_attribute(node, owner.id, line, col)
        if (
            owner.__class__ is _NAME
            and owner.id in self.names.tools
            and owner.id not in self.names.members
            and len(self.errors) == errors
        ):
            self.error(
                "tool-attribute",
                f"{owner.id!r} is a tool: call it, {owner.id}(...); it has no attributes",
                line,
                col,
            )
        if node.ctx.__class__ is _STORE and not self.python:
            self.error(
                "attribute-store",
                "assigning to an attribute is not allowed",
                node.lineno,
                node.col_offset,
            )
        if (
            self.python
            and owner.__class__ is ast.Attribute
            and owner.attr == "__class__"
            and attr in _NAME_DUNDERS
            and node.ctx.__class__ is _LOAD
        ):  # `x.__class__.__name__`: the class is only named, never held
            self.enter(owner, depth)
            owner = owner.value
        self.visit(owner, depth)

    def display(self, node, items):
        """Report a list, tuple, set or dict display (NODE) of more than max_literal ITEMS
        (the caller tests the length)."""
        self.error(
            "limit-literal-len",
            f"display has {len(items)} items; the limit is {self.max_literal}",
            node.lineno,
            node.col_offset,
        )

    def v_sequence(self, node, depth):  # List, Tuple, Set
        elts = node.elts
        if len(elts) > self.max_literal:
            self.display(node, elts)
        visit = self.visit
        starred = 0
        for elt in elts:
            if elt.__class__ is _STARRED:
                starred += 1
                # parses, will not compile (a set display has no ctx)
                if starred == 2 and getattr(node, "ctx", None).__class__ is _STORE:
                    self.error(
                        "syntax",
                        "multiple starred expressions in assignment",
                        elt.lineno,
                        elt.col_offset,
                    )
                self.unpacked(elt, depth)
            else:
                visit(elt, depth)

    def unpacked(self, node, depth):
        """`*x` where it may stand: an element of a list, tuple or set (a target's too), or
        an argument of a call."""
        self.room -= 1
        if self.room < 0 or depth > self.max_depth:
            self.over_limit(node, depth)
        self.visit(node.value, depth + 1)

    def v_starred(self, node, depth):
        """`*x` anywhere else (`*x` alone, `y = *x`, `[*x for ...]`) parses, but Python will
        not compile it: a syntax error here, not a failure in the jail."""
        self.error(
            "syntax",
            "can't use starred expression here: *x may only be an element of a list, tuple "
            "or set, or an argument of a call",
            node.lineno,
            node.col_offset,
        )
        self.visit(node.value, depth)

    def v_dict(self, node, depth):
        keys = node.keys
        if len(keys) > self.max_literal:
            self.display(node, keys)
        visit = self.visit
        for key, value in zip(keys, node.values):
            if key is not None:  # None for a `**mapping` entry
                visit(key, depth)
            visit(value, depth)

    def scope_limit(self, node):
        self.error(
            "limit-comprehension-depth",
            f"comprehensions, lambdas and functions nest more than {self.max_scope} levels; "
            f"the limit is {self.max_scope}",
            node.lineno,
            node.col_offset,
        )

    def generators(self, node, depth, parts, lazy=False):
        """A comprehension or generator expression: its first iterable is read where it
        stands, the rest (targets, conditions, PARTS) with its targets bound.

        A generator expression runs later (LAZY): a scope of its own, whose reads may be
        bound after it. A comprehension runs at once: its targets are bound in the
        enclosing scope while it is walked, then the ones that were new are unbound
        again, as Python keeps them from leaking.
        """
        generators = node.generators
        visit = self.visit
        visit(generators[0].iter, depth + 1)
        if lazy:
            if not self.push(_FUNCTION, node):
                return
        elif self.scope >= self.max_scope:
            self.scope_limit(node)
            return
        else:
            self.scope += 1
            self.comprehending += 1
        names = self.current.names
        fresh = []
        for gen in generators:
            self.enter(gen, depth)
            target = gen.target
            if gen.is_async:
                self.error(
                    "forbidden-node",
                    f"'async for' is not allowed in {self.names.level}",
                    target.lineno,
                    target.col_offset,
                )
            if gen is not generators[0]:
                visit(gen.iter, depth + 1)
            if target.__class__ is _NAME:  # the common target, without a call
                if target.id not in names:
                    fresh.append(target.id)
            else:
                fresh += [ident for ident in _stored_names(target) if ident not in names]
            visit(target, depth + 1)
            for cond in gen.ifs:
                visit(cond, depth + 1)
        for part in parts:
            visit(part, depth)
        if lazy:
            self.pop()
        else:
            self.scope -= 1
            self.comprehending -= 1
            names.difference_update(fresh)

    def v_comp(self, node, depth):  # ListComp, SetComp
        self.generators(node, depth, (node.elt,))

    def v_dictcomp(self, node, depth):
        self.generators(node, depth, (node.key, node.value))

    def v_genexp(self, node, depth):
        self.generators(node, depth, (node.elt,), lazy=True)

    def v_unaryop(self, node, depth):
        if node.op.__class__ not in self.names.unary:
            self.operator(node)
        self.visit(node.operand, depth)

    def v_binop(self, node, depth):
        if node.op.__class__ not in self.names.binary:
            self.operator(node)
        visit = self.visit
        visit(node.left, depth)
        visit(node.right, depth)

    def v_value(self, node, depth):  # Expr: its one child (hot: not via _CHILDREN)
        value = node.value
        if self.python and value.__class__ is _CONSTANT and value.value.__class__ is str:
            # a docstring, or a string standing alone: it reaches no sink, so it may name
            # a dunder ("Implements __eq__"); its size is still capped
            self.enter(value, depth)
            if len(value.value) > self.max_literal:
                self.v_constant(value, depth)
            return
        self.visit(value, depth)

    def v_subscript(self, node, depth):  # hot: not via _CHILDREN
        visit = self.visit
        visit(node.value, depth)
        visit(node.slice, depth)

    def v_if(self, node, depth):  # hot: not via _CHILDREN
        self.visit(node.test, depth)
        self.block(node.body, depth)
        self.block(node.orelse, depth)

    def v_compare(self, node, depth):  # hot: not via _CHILDREN; every operator is allowed
        self.visit(node.left, depth)
        for right in node.comparators:
            self.visit(right, depth)

    def v_joinedstr(self, node, depth):  # f-strings are common: not via _CHILDREN
        for part in node.values:
            self.visit(part, depth)

    def v_formattedvalue(self, node, depth):  # hot: not via _CHILDREN
        self.visit(node.value, depth)
        if node.format_spec is not None:
            self.visit(node.format_spec, depth)

    def v_constant(self, node, depth):
        value = node.value
        kind = value.__class__
        if kind is str or kind is bytes:
            if len(value) > self.max_literal:
                self.error(
                    "limit-literal-len",
                    f"{kind.__name__} constant has {len(value)} items; "
                    f"the limit is {self.max_literal}",
                    node.lineno,
                    node.col_offset,
                )
            if ("__" if kind is str else b"__") in value:
                if not self.python:
                    self.error(
                        "dunder-string",
                        f"{kind.__name__} constants must not contain '__'",
                        node.lineno,
                        node.col_offset,
                    )
                else:
                    text = value if kind is str else value.decode("latin-1")
                    word = None if _is_sentence(text) else _dunder_word(text)
                    if word is not None:
                        self.error(
                            "dunder-string",
                            f"{kind.__name__} constants must not name a dunder ({word!r}); "
                            "'__' elsewhere in a string is fine",
                            node.lineno,
                            node.col_offset,
                        )
        # 10**d > 2**(3d): an int of at most 3d bits has at most d digits, so
        # the exact (costly) comparison runs only for big literals.
        elif (
            kind is int
            and value.bit_length() > 3 * self.max_digits
            and value >= 10**self.max_digits
        ):
            self.error(
                "limit-int-digits",
                f"integer literal has more than {self.max_digits} digits; "
                f"the limit is {self.max_digits}",
                node.lineno,
                node.col_offset,
            )

    # -- the extended level ---------------------------------------------------

    def arguments(self, node, args, depth):
        """Defaults and annotations run where the function is defined; the parameters
        are bound in its scope (the caller pushes it and binds them with `parameters`)."""
        self.enter(args, depth)
        visit = self.visit
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            visit(default, depth)
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        for param in params:
            if param.annotation is not None:
                self.annotation(param.annotation, depth)
        return params

    def annotation(self, node, depth):
        """An annotation is checked as any expression; under `from __future__ import
        annotations` it is never evaluated, so its names may be bound later (a class
        named before its definition), as in a function body."""
        if self.lazy_annotations and self.push(_FUNCTION, node):
            self.visit(node, depth)
            self.pop()
        else:
            self.visit(node, depth)

    def parameters(self, params, depth):
        seen = set()
        for param in params:
            self.enter(param, depth)
            if param.arg in seen:  # parses, but Python will not compile it
                self.error(
                    "syntax",
                    f"duplicate argument {param.arg!r} in function definition",
                    param.lineno,
                    param.col_offset,
                )
            seen.add(param.arg)
            self.bind_identifier(param.arg, param.lineno, param.col_offset, "parameter")

    def v_lambda_extended(self, node, depth):
        params = self.arguments(node, node.args, depth)
        if self.push(_FUNCTION, node):
            self.parameters(params, depth)
            self.visit(node.body, depth)
            self.pop()

    def v_functiondef(self, node, depth):
        if self.python:
            self.block(node.decorator_list, depth)  # evaluated first, then the defaults
        else:
            for decorator in node.decorator_list:
                self.error(
                    "decorator",
                    "decorators are not allowed: call the function where you need it",
                    decorator.lineno,
                    decorator.col_offset,
                )
        if getattr(node, "type_params", None):
            self.forbidden(node.type_params[0], "a type parameter list")
        params = self.arguments(node, node.args, depth)
        if node.returns is not None:
            self.annotation(node.returns, depth)
        # the name is bound where the def stands, after its defaults ran
        if self.python and _is_dunder(node.name) and self.current.kind == _CLASS:
            self.dunder_method(node)
        else:
            self.bind_spelt(node.name, node, b"def", "function name")
        if self.push(_FUNCTION, node):
            self.current.yields = True
            self.parameters(params, depth)
            self.block(node.body, depth)
            self.pop()

    def v_return(self, node, depth):
        scope = self.current
        if scope.kind != _FUNCTION:
            self.misplaced(node, "'return' is only allowed inside a function")
        elif scope.in_finally and not self.python:
            self.finally_exit(node, "return")
        if node.value is not None:
            self.visit(node.value, depth)

    def loop_exit(self, node, word):
        loops = self.current.loops
        if not loops:
            self.misplaced(node, f"'{word}' is only allowed inside a loop")
        elif self.current.in_finally > loops[-1][1] and not self.python:
            self.finally_exit(node, word)

    def v_break(self, node, depth):
        self.loop_exit(node, "break")

    def v_continue(self, node, depth):
        self.loop_exit(node, "continue")

    def v_pass(self, node, depth):
        pass

    def misplaced(self, node, message):
        self.error("misplaced-statement", message, node.lineno, node.col_offset)

    def finally_exit(self, node, word):
        self.error(
            "finally-exit",
            f"'{word}' in a finally block is not allowed: it would swallow the exception "
            "that is on its way out",
            node.lineno,
            node.col_offset,
        )

    def v_try(self, node, depth):
        self.block(node.body, depth)
        for handler in node.handlers:
            self.handler(handler, depth)
        self.block(node.orelse, depth)
        scope = self.current
        scope.in_finally += 1
        self.block(node.finalbody, depth)
        scope.in_finally -= 1

    def handler(self, node, depth):
        self.enter(node, depth)
        kind = node.type
        # The python level's except clause is CPython's: bare, or any expression (a class
        # that is no exception is a TypeError when an exception meets it). A stop verdict a
        # handler catches is raised again at the program's next line: nothing is lost.
        if kind is None:
            if not self.python:
                self.error(
                    "except-class",
                    "a bare 'except:' is not allowed: name the classes, e.g. except Exception:",
                    node.lineno,
                    node.col_offset,
                )
        else:
            if not self.python:
                for cls in kind.elts if kind.__class__ is ast.Tuple else (kind,):
                    if cls.__class__ is not _NAME or cls.id not in self.names.exceptions:
                        self.error(
                            "except-class",
                            "except names builtin exception classes (Exception, ValueError, "
                            "KeyError, ..., ToolError), alone or in a tuple",
                            cls.lineno,
                            cls.col_offset,
                        )
            self.visit(kind, depth + 1)
        name, scope = node.name, self.current
        fresh = name is not None and name not in scope.names
        if name is not None:
            self.bind_spelt(name, node, b"as", "exception name")
        self.block(node.body, depth + 1)
        if fresh:  # Python deletes the name when the handler ends
            scope.names.discard(name)

    # -- the python level -----------------------------------------------------

    def attribute_by_name(self, node):
        """getattr/hasattr/setattr with a literal name: the name the jail's own would refuse
        when called (attribute_refused), rejected here already."""
        if len(node.args) < 2:
            return
        name = node.args[1]
        if name.__class__ is ast.Constant and name.value.__class__ is str:
            if attribute_refused(name.value):
                self.error(
                    "attribute-name",
                    f"{node.func.id}() must not name {name.value!r}: no '_' name, and no "
                    "frame, code, generator, traceback, type or format attribute",
                    name.lineno,
                    name.col_offset,
                )

    def python_attribute(self, node) -> bool:
        """The '_' attributes the python level reads or writes: `self._x`, a private
        `self.__x` (Python renames it `_Class__x`), and of the dunders only a name's text
        (`f.__name__`, `x.__class__.__name__`: see v_attribute) and, through super(), a
        parent's method of DEFINABLE_DUNDERS (`super().__init__(...)`)."""
        attr = node.attr
        if not _is_dunder(attr):
            self.private_attribute(node)
            return True
        if node.ctx.__class__ is not _LOAD:
            return False
        if attr in _NAME_DUNDERS:
            return True
        owner = node.value
        return (
            attr in DEFINABLE_DUNDERS
            and attr != "__slots__"
            and owner.__class__ is ast.Call
            and owner.func.__class__ is _NAME
            and owner.func.id == "super"
            and not owner.keywords
        )

    def private_attribute(self, node):
        """`obj._x`: the program's own private attributes, never the standard library's.

        The validator cannot see whose object OBJ is, so a '_x' attribute may be read only
        when the program itself gives its objects one of that name (assigns `obj._x = ...`
        or binds `_x` in a class body); checked once the whole program is walked
        (`private_reads`). The library's own '_x' attributes (Enum._convert_ looks a module
        up by name, ABCMeta._dump_registry prints to the process's stdout) stay out of
        reach. A '_x_' name is the enum machinery's: never read, whoever defines it."""
        attr = node.attr
        if node.ctx.__class__ is _STORE:
            if not (len(attr) > 2 and attr[-1] == "_"):
                self.private_defined.add(attr)
        else:
            self.private_read(attr, node.end_lineno, node.end_col_offset - len(attr))

    def private_read(self, attr, line, col):
        """A '_x' attribute read (`obj._x`, or a class pattern's keyword `C(_x=v)`)."""
        if len(attr) > 2 and attr[-1] == "_":
            self.error(
                "dunder-attribute",
                f"attribute '.{attr}' is not allowed: '_name_' attributes are the enum "
                "machinery's (use .name and .value)",
                line,
                col,
            )
        else:
            self.private_used.append((attr, line, col))

    def private_reads(self):
        """Each '_x' attribute read must be one the program gives its own objects."""
        defined = self.private_defined
        for attr, line, col in self.private_used:
            if attr not in defined and attr not in _NAMEDTUPLE_API:
                self.error(
                    "dunder-attribute",
                    f"attribute '.{attr}' is not one this program defines: a program reads "
                    "the '_' attributes of its own objects only (assign self."
                    f"{attr} = ... or define it in a class)",
                    line,
                    col,
                )

    def dunder_method(self, node):
        """A '__' method in a class body: one of DEFINABLE_DUNDERS, spelt in ASCII."""
        ident = node.name
        if ident in DEFINABLE_DUNDERS:
            if self.lines is not None and not ident.isascii():
                self.error(
                    "non-ascii-identifier",
                    f"identifiers must be ASCII; {ident!r} is not spelt in ASCII here",
                    node.lineno,
                    node.col_offset,
                )
            self.current.names.add(ident)
            return
        self.error(
            "dunder-method",
            f"a class may not define {ident!r}: the dunder methods a class may define are "
            "__init__, __repr__, __str__, comparisons, arithmetic, __len__, __iter__, "
            "__getitem__, __enter__/__exit__ ... (the python level's spec lists them)",
            node.lineno,
            node.col_offset,
        )

    def v_classdef(self, node, depth):
        self.block(node.decorator_list, depth)
        if getattr(node, "type_params", None):
            self.forbidden(node.type_params[0], "a type parameter list")
        for base in node.bases:
            if base.__class__ is _STARRED:
                self.unpacked(base, depth)
            else:
                if base.__class__ is _NAME and base.id == "type" and not self.bound("type"):
                    self.error(
                        "class-keyword",
                        "a class may not derive from type: no metaclasses (a class statement "
                        "or type(name, bases, namespace) makes a class)",
                        base.lineno,
                        base.col_offset,
                    )
                self.visit(base, depth)
        for kw in node.keywords:
            self.error(
                "class-keyword",
                f"a class statement takes no keywords ({kw.arg or '**'}=...): no metaclass, "
                "no class arguments",
                kw.lineno,
                kw.col_offset,
            )
            self.visit(kw.value, depth + 1)
        if self.push(_CLASS, node):
            self.block(node.body, depth)
            self.pop()
        self.bind_spelt(node.name, node, b"class", "class name")

    def module_name(self, module, node):
        """Is MODULE a facade (True), one outside the standard library (None: importing it
        fails in the jail, as where it is not installed), else an error naming what to
        write instead (False)?"""
        if module in FACADES and module != "__future__":
            return True
        if _foreign(module):
            return None
        instead = INSTEAD.get(module) or INSTEAD.get(module.partition(".")[0])
        if instead is None:
            head = module.partition(".")[0]
            if head in FACADES and head != module:
                instead = f"import {head} (submodules are not available)"
            else:
                instead = "the modules are " + ", ".join(m for m in FACADES if m[0] != "_")
        self.error(
            "import-module",
            f"module {module!r} is not available in {self.names.level}: {instead}",
            node.lineno,
            node.col_offset,
        )
        return False

    def module_attribute(self, node, name, line, col):
        """`json.loads`: a name of the module's facade, read (a facade is read-only). A
        public name the real module lacks too (re.PatternError in 3.12) is read: the facade
        raises CPython's own AttributeError."""
        module = self.modules[name]
        if node.ctx.__class__ is not _LOAD:
            self.error(
                "module-attribute",
                f"{name}.{node.attr} cannot be assigned or deleted: a module is read-only",
                line,
                col,
            )
        elif node.attr not in FACADES[module] and not lacks(module, node.attr):
            self.error(
                "module-attribute",
                f"{module} has no {node.attr!r} here: its names are "
                + (
                    ", ".join(FACADES[module])
                    if len(FACADES[module]) <= 12
                    else "in the python level's spec"
                )
                + (f"; {INSTEAD[module]}" if module in INSTEAD else ""),
                line,
                col,
            )

    def bind_alias(self, alias, name, what):
        """Bind NAME, what ALIAS (`a`, `a.b`, `a as b`) binds, where it is spelt: at the
        alias's start, or (`as b`) at its end (the identifier checks read the source there)."""
        line, col = alias.lineno, alias.col_offset
        if alias.asname is not None and alias.end_lineno is not None:
            line, col = alias.end_lineno, alias.end_col_offset - len(name)
        self.bind_identifier(name, line, col, what)

    def v_import(self, node, depth):
        for alias in node.names:
            self.enter(alias, depth)
            if "." in alias.name and alias.name in FACADES:
                self.error(
                    "import-module",
                    f"import {alias.name} binds {alias.name.partition('.')[0]}, whose facade "
                    f"has no submodule: from {alias.name} import ...",
                    alias.lineno,
                    alias.col_offset,
                )
            else:
                known = self.module_name(alias.name, alias)
                if known is False:
                    continue
                name = alias.asname or alias.name.partition(".")[0]
                self.bind_alias(alias, name, "module name")
                if known:
                    self.modules[name] = alias.name
                    self.needs.add(alias.name)

    def v_importfrom(self, node, depth):
        module = node.module or ""
        # a relative import, or one of a module outside the standard library, fails in the
        # jail (ImportError): its names are bound, as they would be where it succeeded
        if node.level or module != "__future__" and _foreign(module):
            allowed = None
        elif module == "__future__" or self.module_name(module, node):
            allowed = FACADES[module]
            self.needs.add(module)  # `from __future__ import ...` imports it at run time too
        else:
            return
        if len(node.names) == 1 and node.names[0].name == "*" and module != "__future__":
            self.enter(node.names[0], depth)
            if self.current.kind != _MODULE:
                self.misplaced(node, "'from ... import *' is only allowed at the module level")
            for name in allowed or ():  # every name of the facade, as Python binds them
                if self.check_name(name, node.lineno, node.col_offset, "imported name"):
                    self.bind(name, node.lineno, node.col_offset)
            return
        for alias in node.names:
            self.enter(alias, depth)
            if allowed is None:
                self.bind_alias(alias, alias.asname or alias.name, "imported name")
            elif alias.name not in allowed and not (
                module in NO_FILE and lacks(module, alias.name)
            ):
                self.error(
                    "import-name",
                    f"{module} has no {alias.name!r} here; its names are {', '.join(allowed)}"
                    if len(allowed) <= 12
                    else f"{module} has no {alias.name!r} here; the python level's spec lists "
                    "its names",
                    alias.lineno,
                    alias.col_offset,
                )
            elif module != "__future__":
                self.bind_alias(alias, alias.asname or alias.name, "imported name")

    def v_yield(self, node, depth):  # Yield, YieldFrom
        if not self.current.yields or self.comprehending:
            self.misplaced(
                node,
                "'yield' is only allowed in the body of a def (not in a lambda, a "
                "comprehension, a class body or the module)",
            )
        if node.value is not None:
            self.visit(node.value, depth)

    def v_match(self, node, depth):
        self.visit(node.subject, depth)
        for case in node.cases:
            self.enter(case, depth)
            self.pattern(case.pattern, depth + 1)
            if case.guard is not None:
                self.visit(case.guard, depth + 1)
            self.block(case.body, depth + 1)

    def pattern(self, node, depth):
        """A `case` pattern: its values are expressions, its names bindings, and a class
        pattern's keywords are attribute names, checked as any attribute's."""
        self.enter(node, depth)
        kind = node.__class__
        if kind is ast.MatchValue:
            self.visit(node.value, depth + 1)
        elif kind is ast.MatchSequence or kind is ast.MatchOr:
            for item in node.patterns:
                self.pattern(item, depth + 1)
        elif kind is ast.MatchMapping:
            for key in node.keys:
                self.visit(key, depth + 1)
            for item in node.patterns:
                self.pattern(item, depth + 1)
            if node.rest is not None:
                self.pattern_name(node.rest, node)
        elif kind is ast.MatchClass:
            self.visit(node.cls, depth + 1)
            if node.patterns:
                self.positional_patterns(node)
            for item in node.patterns:
                self.pattern(item, depth + 1)
            for attr in node.kwd_attrs:
                if (
                    _is_dunder(attr)
                    or attr.startswith(INTERNAL_ATTRIBUTE_PREFIXES)
                    or (attr in INTERNAL_ATTRIBUTES or attr in FORMAT_ATTRIBUTES)
                ):
                    self.error(
                        "dunder-attribute",
                        f"a class pattern's keyword {attr}= reads an attribute that is off "
                        "limits (a dunder, or a frame, code or format attribute)",
                        node.lineno,
                        node.col_offset,
                    )
                elif attr[:1] == "_":
                    self.private_read(attr, node.lineno, node.col_offset)
            for item in node.kwd_patterns:
                self.pattern(item, depth + 1)
        elif kind is ast.MatchStar:
            if node.name is not None:
                self.pattern_name(node.name, node)
        elif kind is ast.MatchAs:
            if node.pattern is not None:
                self.pattern(node.pattern, depth + 1)
            if node.name is not None:
                self.pattern_name(node.name, node)
        elif kind is not ast.MatchSingleton:
            self.forbidden(node)

    def positional_patterns(self, node):
        """`case C(a, b)`: only a builtin class that matches the subject itself (checked, once
        the walk is done, never to be rebound: `self_matching`)."""
        cls = node.cls
        if cls.__class__ is _NAME and cls.id in _SELF_MATCHING:
            self.self_matched.append((cls.id, node.lineno, node.col_offset))
            return
        self.error(
            "dunder-attribute",
            "a class pattern takes keyword sub-patterns here (case Point(x=x, y=y)): "
            "positional ones read the attributes its __match_args__ names, unseen; only "
            "int(n), str(s), list(l) ... (the builtins that match themselves) take one",
            node.lineno,
            node.col_offset,
        )

    def self_matching(self):
        for ident, line, col in self.self_matched:
            if ident in self.rebound:
                self.error(
                    "dunder-attribute",
                    f"case {ident}(...) with a positional sub-pattern needs the builtin "
                    f"{ident}, and this program binds {ident!r}",
                    line,
                    col,
                )

    def pattern_name(self, ident, node):
        """A name a pattern binds (its place in the line is not in the tree)."""
        if self.lines is not None and not ident.isascii():
            self.error(
                "non-ascii-identifier",
                f"identifiers must be ASCII; {ident!r} is not",
                node.lineno,
                node.col_offset,
            )
        if self.check_name(ident, node.lineno, node.col_offset, "pattern name"):
            self.bind(ident, node.lineno, node.col_offset)

    def v_with(self, node, depth):
        for item in node.items:
            self.enter(item, depth)
            self.visit(item.context_expr, depth + 1)
            if item.optional_vars is not None:
                self.visit(item.optional_vars, depth + 1)
        self.block(node.body, depth)

    def v_global(self, node, depth):
        module = self.scopes[0]
        for ident in node.names:
            if self.check_name(ident, node.lineno, node.col_offset):
                if self.lines is not None and not ident.isascii():
                    self.ascii_identifier(ident, node.lineno, node.col_offset)
                self.bind(ident, node.lineno, node.col_offset)
                module.names.add(ident)
                self.variables.add(ident)

    def v_nonlocal(self, node, depth):
        if self.scope == 0:  # the compiler's error, not the parser's: said here as it says it
            self.error(
                "syntax",
                "nonlocal declaration not allowed at module level",
                node.lineno,
                node.col_offset,
            )
            return
        for ident in node.names:
            if self.check_name(ident, node.lineno, node.col_offset):
                if self.lines is not None and not ident.isascii():
                    self.ascii_identifier(ident, node.lineno, node.col_offset)
                self.bind(ident, node.lineno, node.col_offset)

    def v_delete(self, node, depth):
        self.block(node.targets, depth)

    def v_namedexpr(self, node, depth):
        self.visit(node.value, depth)
        self.visit(node.target, depth)

    def v_annassign(self, node, depth):
        target = node.target
        if node.value is not None:
            self.visit(node.value, depth)
        self.annotation(node.annotation, depth)
        if node.value is not None or target.__class__ is not _NAME:
            self.visit(target, depth)
        else:  # `x: int` binds nothing; the name must still be a name a program may use
            if self.check_name(target.id, target.lineno, target.col_offset):
                if target.id[:1] == "_" and self.current.kind == _CLASS:
                    self.private_defined.add(target.id)  # a dataclass field


# What `children()` visits of each node class, in the order Python evaluates it.
_CHILDREN = {
    ast.Slice: ("lower", "upper", "step"),
    ast.BoolOp: ("values",),
    ast.IfExp: ("test", "body", "orelse"),
    ast.Raise: ("exc", "cause"),
    ast.Assert: ("test", "msg"),
}


_HANDLERS = {
    ast.Module: _Walker.v_module,
    ast.Expr: _Walker.v_value,
    ast.Assign: _Walker.v_assign,
    ast.AugAssign: _Walker.v_augassign,
    ast.For: _Walker.v_for,
    ast.If: _Walker.v_if,
    ast.Call: _Walker.v_call,
    ast.Lambda: _Walker.v_lambda,
    ast.Name: _Walker.v_name,
    ast.Attribute: _Walker.v_attribute,
    ast.Subscript: _Walker.v_subscript,
    ast.Slice: _Walker.children,
    ast.Starred: _Walker.v_starred,
    ast.List: _Walker.v_sequence,
    ast.Tuple: _Walker.v_sequence,
    ast.Set: _Walker.v_sequence,
    ast.Dict: _Walker.v_dict,
    ast.ListComp: _Walker.v_comp,
    ast.SetComp: _Walker.v_comp,
    ast.DictComp: _Walker.v_dictcomp,
    ast.Compare: _Walker.v_compare,
    ast.BoolOp: _Walker.children,
    ast.UnaryOp: _Walker.v_unaryop,
    ast.BinOp: _Walker.v_binop,
    ast.IfExp: _Walker.children,
    ast.JoinedStr: _Walker.v_joinedstr,
    ast.FormattedValue: _Walker.v_formattedvalue,
    ast.Constant: _Walker.v_constant,
}

_EXTENDED_HANDLERS = {
    **_HANDLERS,
    ast.Lambda: _Walker.v_lambda_extended,
    ast.FunctionDef: _Walker.v_functiondef,
    ast.Return: _Walker.v_return,
    ast.While: _Walker.v_while,
    ast.Try: _Walker.v_try,
    ast.Raise: _Walker.children,
    ast.Assert: _Walker.children,
    ast.Break: _Walker.v_break,
    ast.Continue: _Walker.v_continue,
    ast.Pass: _Walker.v_pass,
    ast.GeneratorExp: _Walker.v_genexp,
}

_PYTHON_HANDLERS = {
    **_EXTENDED_HANDLERS,
    ast.ClassDef: _Walker.v_classdef,
    ast.Import: _Walker.v_import,
    ast.ImportFrom: _Walker.v_importfrom,
    ast.With: _Walker.v_with,
    ast.Global: _Walker.v_global,
    ast.Nonlocal: _Walker.v_nonlocal,
    ast.Delete: _Walker.v_delete,
    ast.NamedExpr: _Walker.v_namedexpr,
    ast.AnnAssign: _Walker.v_annassign,
    ast.Yield: _Walker.v_yield,
    ast.YieldFrom: _Walker.v_yield,
    ast.Match: _Walker.v_match,
}

_LEVEL_HANDLERS = {"lackpy": _HANDLERS, "extended": _EXTENDED_HANDLERS, "python": _PYTHON_HANDLERS}


def _rule_id(rule) -> str:
    rule_id = getattr(rule, "rule_id", None)
    if isinstance(rule_id, str) and rule_id:
        return rule_id
    name = getattr(rule, "__name__", "")
    return name.replace("_", "-") if name and not name.startswith("<") else "custom"


def _apply_rules(rules, tree, walker: _Walker):
    """Run custom rules; each returns messages, (message, node) pairs or ValidationErrors."""
    for rule in rules:
        rule_id = _rule_id(rule)
        try:
            found = list(rule(tree) or ())
        except Exception as exc:  # a broken rule rejects (fails closed), it does not crash
            walker.error("rule-error", f"custom rule {rule_id} failed: {type(exc).__name__}: {exc}")
            continue
        for item in found:
            if isinstance(item, ValidationError):
                walker.errors.append(item)
            elif isinstance(item, str):
                walker.error(rule_id, item)
            elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                node = item[1]
                walker.error(
                    rule_id,
                    item[0],
                    getattr(node, "lineno", None),
                    getattr(node, "col_offset", None),
                )
            else:
                walker.error(
                    "rule-error", f"custom rule {rule_id} returned {item!r}, not a message"
                )


def _place(exc: SyntaxError):
    """Line and 1-based column of a SyntaxError (its offset counts characters from 1)."""
    line, offset = exc.lineno, exc.offset
    return line, (offset if line is not None and isinstance(offset, int) and offset > 0 else None)


def _parse(text: str) -> ast.Module:
    """Parse TEXT to a tree (no compiling), keeping the parser's warnings to ourselves."""
    if _WARNING_FILTER not in warnings.filters:  # a catch_warnings block may have dropped it
        _ignore_our_warnings()
    try:
        return compile(text, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)  # type: ignore[return-value]
    except SyntaxError as exc:
        if not (exc.msg or "").startswith(_WARNING_MESSAGES):
            raise
    # A filter set after import (`-W error`, pytest) turned a parser warning
    # into an error: parse again with our filter in front.
    with warnings.catch_warnings():
        _ignore_our_warnings()
        return compile(text, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)  # type: ignore[return-value]


_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _spelt_after(line: bytes, keyword: bytes, name: bytes, start: int) -> int:
    """Where NAME begins in LINE, at or after START, written after KEYWORD and whitespace
    and ending at a word boundary; -1 if nowhere. What
    re.compile(KEYWORD + rb"\\s+" + re.escape(NAME) + rb"\\b").search(LINE, START) finds
    (its end less len(NAME)), without re: the jail does not load it."""
    at = line.find(keyword, start)
    while at >= 0:
        begin = at + len(keyword)
        while begin < len(line) and line[begin] in b" \t\n\r\f\v":
            begin += 1
        end = begin + len(name)
        if (
            begin > at + len(keyword)
            and line.startswith(name, begin)
            and (line[end - 1] in _WORD) != (end < len(line) and line[end] in _WORD)
        ):
            return begin
        at = line.find(keyword, at + 1)
    return -1


def _ignore_our_warnings() -> None:
    """Put _WARNING_FILTER first, as warnings.filterwarnings puts its own."""
    warnings.filters.insert(0, _WARNING_FILTER)  # type: ignore[attr-defined]
    warnings._filters_mutated()  # type: ignore[attr-defined]  # what filterwarnings calls: cached verdicts are dropped


def check_language(language) -> str:
    """LANGUAGE when it names a level, else a ValueError listing the levels."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language level {language!r}; levels: {', '.join(LANGUAGES)}")
    return language


def _failure(message, rule, line=None, col=None) -> ValidationResult:
    return ValidationResult(False, [ValidationError(message, line, col, rule)], [], [])


def validate(source, **options) -> ValidationResult:
    """Check SOURCE (str or bytes); OPTIONS are validate_tree()'s keywords.

    Never raises for any SOURCE; raises ValueError only for an unknown language.
    """
    return validate_tree(source, **options)[0]


def validate_tree(
    source,
    *,
    tools=(),
    params=(),
    rules=(),
    limits: ProgramLimits | None = None,
    language: str = DEFAULT_LANGUAGE,
    hints=None,
    defined=(),
    signatures=None,
) -> tuple[ValidationResult, ast.Module | None]:
    """Check SOURCE (str or bytes) against the LANGUAGE level; return the result and,
    when valid, the module AST it checked (else None). Never raises for any SOURCE.

    TOOLS are the names a program may call (kit tools; "fs.read" allows
    `fs.read(...)`, a namespace declared whole, "fs.*", `fs.anything(...)`; a tool
    declared without members has no attributes); PARAMS
    the names the caller injects; DEFINED the names an earlier run of the same
    session bound (readable and rebindable, as if this program had bound them
    first); RULES extra callables that tighten the check;
    HINTS maps a name the program may have meant to what to do about it (shown
    when it is unknown or undefined); SIGNATURES the tools' arguments, to check each call's
    arity, keyword names and literal types (see lang.calls). Raises ValueError only for an
    unknown LANGUAGE.
    The jail compiles the returned tree: no second parse, and nothing but what was checked.
    """
    language = check_language(language)
    if limits is None:
        limits = _DEFAULT_LIMITS
    try:
        text, lines = prepare(source, limits.max_source_bytes)
    except SourceError as exc:
        return ValidationResult(False, [exc.error], [], []), None
    try:
        tree = _parse(text)
    except SyntaxError as exc:
        if (exc.msg or "").startswith("Exceeds the limit"):  # CPython's own int-digit cap
            cap = min(limits.int_digits(language), sys.get_int_max_str_digits() or sys.maxsize)
            return _failure(
                f"integer literal has more than {cap} digits; the limit is {cap}",
                "limit-int-digits",
                *_place(exc),
            ), None
        return _failure(exc.msg or "invalid syntax", "syntax", *_place(exc)), None
    except (RecursionError, MemoryError) as exc:
        return _failure(f"program is too complex to parse ({exc})", "limit-parse"), None
    except Exception as exc:  # e.g. ValueError: whatever the parser raises is a rejection
        return _failure(f"program cannot be parsed: {type(exc).__name__}: {exc}", "syntax"), None
    names = _names(tools, params, language) if tools or params else _NO_NAMES[language]
    walker = _Walker(names, limits, lines, language, hints)
    if defined:
        walker.current.names.update(_definable(defined, names))
    complete = walker.run(tree)
    # only a program that calls a tool with a signature has calls to check (the walk noted
    # every tool it saw called, by name or as a pack's member)
    if signatures and complete and not walker.calls.isdisjoint(signatures):
        from .calls import check_calls  # the host's check: the jail never loads it

        try:
            check_calls(tree, signatures, walker.error)
        except Exception as exc:  # fail closed, as the walk does
            walker.error("internal", f"tool call check error: {type(exc).__name__}: {exc}")
    if rules and complete:
        _apply_rules(rules, tree, walker)
    errors = walker.errors
    if len(errors) > 1:
        errors.sort(key=_position)
    result = ValidationResult(
        not errors, errors, sorted(walker.calls), sorted(walker.variables), sorted(walker.needs)
    )
    return result, (tree if result.valid else None)


def _definable(defined, names: _Names) -> list:
    """The names of DEFINED a program could have bound itself: a read of a bound name skips
    every other check, so nothing forbidden, '__', non-ASCII, or hiding a builtin, tool or
    parameter is let in (a keyword is harmless: no program can spell it as a name)."""
    return [
        n
        for n in _name_list(defined, "defined")
        if n.isidentifier()
        and n.isascii()
        and n[:2] != "__"
        and n not in names.forbidden
        and n not in names.callable
    ]


def _position(error: ValidationError):
    return (error.line or 0, error.col or 0)
