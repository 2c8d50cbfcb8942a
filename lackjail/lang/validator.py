"""The validator: decode, parse once, walk the tree once; it never raises on any program.

The controller only parses and walks: it compiles nothing, because some
programs that parse crash CPython 3.12.1's compile() (about 21 nested list
comprehensions); the jail compiles, after validating again.
"""

import ast
import re
import warnings

from .errors import ValidationError, ValidationResult
from .grammar import (
    ALLOWED_BUILTINS,
    BINARY_OPERATORS,
    FORBIDDEN_CONSTRUCTS,
    FORBIDDEN_NAMES,
    FORBIDDEN_OPERATORS,
    FORMAT_ATTRIBUTES,
    INTERNAL_ATTRIBUTE_PREFIXES,
    INTERNAL_ATTRIBUTES,
    LANGUAGES,
    UNARY_OPERATORS,
)
from .limits import ProgramLimits
from .source import SourceError, prepare

FILENAME = "<lackpy>"

# The parser reports some oddities (invalid escape sequences, `1if x`) as
# SyntaxWarning. A program's warnings are not the host's business, and under
# `-W error` they would reject valid programs. This filter matches our filename only.
_WARNING_MODULE = r"<lackpy>\Z"
_WARNING_FILTER = ("ignore", None, SyntaxWarning, re.compile(_WARNING_MODULE), 0)
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
_LAMBDA = ast.Lambda


class _Abort(Exception):
    """Stops the walk: a size limit was hit and the rest of the tree is not worth reading."""


class _Names:
    """What a program may call: tools (with namespace members), parameters, builtins."""

    __slots__ = ("tools", "members", "params", "callable")

    def __init__(self, tools, params):
        plain, members = set(), {}
        for name in tools:
            head, dot, member = name.partition(".")
            if dot:
                members.setdefault(head, set()).add(member)
            else:
                plain.add(name)
        # A namespace declared whole ("fs") allows every member; one declared by
        # members only ("fs.read") allows just those.
        self.members = {ns: frozenset(m) for ns, m in members.items() if ns not in plain}
        self.tools = frozenset(plain) | frozenset(self.members)
        self.params = frozenset(params)
        self.callable = _BUILTINS | self.tools | self.params


_NO_NAMES = _Names((), ())


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


class _Walker:
    """One recursive pass over the tree, dispatching on node class (see _HANDLERS)."""

    __slots__ = (
        "errors",
        "calls",
        "variables",
        "names",
        "lines",
        "nodes",
        "scope",
        "max_nodes",
        "max_depth",
        "max_scope",
        "max_literal",
        "max_digits",
    )

    def __init__(self, names: _Names, limits: ProgramLimits, lines):
        self.errors = []
        self.calls = set()
        self.variables = set()
        self.names = names
        self.lines = lines  # UTF-8 lines when the source is not ASCII, else None
        self.nodes = 0
        self.scope = 0  # comprehension and lambda nesting
        self.max_nodes = limits.max_nodes
        self.max_depth = limits.max_depth
        self.max_scope = limits.max_comprehension_depth
        self.max_literal = limits.max_literal_len
        self.max_digits = limits.max_int_digits

    def run(self, tree) -> bool:
        """Walk TREE; False when the walk stopped early (a size limit, or too deep to recurse)."""
        try:
            self.visit(tree, 0)
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

    def over_limit(self, node, depth):
        """Report the node or depth cap that NODE broke, and stop the walk."""
        if self.nodes > self.max_nodes:
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

    def enter(self, node, depth):
        """Count a node that its parent walks itself (keyword, comprehension, lambda parts)."""
        self.nodes += 1
        if self.nodes > self.max_nodes or depth > self.max_depth:
            self.over_limit(node, depth)

    def visit(self, node, depth):
        self.nodes += 1
        if self.nodes > self.max_nodes or depth > self.max_depth:
            self.over_limit(node, depth)
        kind = node.__class__
        if kind is _NAME and node.ctx.__class__ is _LOAD and self.lines is None:
            # Fast path for the commonest node: reading an ordinary name in an ASCII program.
            ident = node.id
            if ident not in FORBIDDEN_NAMES and ident[:2] != "__":
                return
        handler = _HANDLERS.get(kind)
        if handler is None:
            name = kind.__name__
            self.error(
                "forbidden-node",
                f"{FORBIDDEN_CONSTRUCTS.get(name, name)} is not allowed in lackpy",
                getattr(node, "lineno", None),
                getattr(node, "col_offset", None),
            )
        else:
            handler(self, node, depth + 1)

    def block(self, statements, depth):
        visit = self.visit
        for statement in statements:
            visit(statement, depth)

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
        elif (
            end is not None
        ):  # report where the attribute name starts: after the dot and any blanks
            text = lines[line - 1]
            col = text.rfind(b".", 0, end) + 1
            col += len(text[col:end]) - len(text[col:end].lstrip())
        self.error(
            "non-ascii-identifier",
            f"identifiers must be ASCII; this one reads as {ident!r} after Unicode normalisation",
            line,
            col,
        )

    def check_name(self, ident, line, col, what="name"):
        """A name or parameter: no forbidden name, no leading '__'."""
        if ident in FORBIDDEN_NAMES:
            self.error("forbidden-name", f"{ident!r} is a forbidden name in lackpy", line, col)
        elif ident[:2] == "__":
            self.error(
                "dunder-name", f"{what} {ident!r} starts with '__', which is not allowed", line, col
            )

    def bind(self, ident, line, col):
        """A name being bound: never a builtin, tool or parameter (that would hide or swap a callable)."""
        names = self.names
        if ident in _BUILTINS:
            self.error(
                "rebind-builtin", f"cannot bind {ident!r}: it is an allowed builtin", line, col
            )
        elif ident in names.tools:
            self.error("rebind-tool", f"cannot bind {ident!r}: it is a tool", line, col)
        elif ident in names.params:
            self.error("rebind-param", f"cannot bind {ident!r}: it is a parameter", line, col)
        elif self.scope == 0:
            self.variables.add(ident)

    # -- handlers, one per allowed node class ---------------------------------

    def v_module(self, node, depth):
        self.block(node.body, depth)

    def v_expr(self, node, depth):
        self.visit(node.value, depth)

    def v_assign(self, node, depth):
        visit = self.visit
        for target in node.targets:
            visit(target, depth)
        visit(node.value, depth)

    def v_augassign(self, node, depth):
        op = node.op.__class__
        if op not in BINARY_OPERATORS:
            self.error(
                "forbidden-operator",
                f"operator '{FORBIDDEN_OPERATORS.get(op, op.__name__)}=' is not allowed in lackpy",
                node.lineno,
                node.col_offset,
            )
        self.visit(node.target, depth)
        self.visit(node.value, depth)

    def v_for(self, node, depth):
        it = node.iter
        if it.__class__ is not ast.Call and it.__class__ is not _NAME:
            self.error(
                "for-iter", "'for' must iterate over a call or a name", it.lineno, it.col_offset
            )
        self.visit(node.target, depth)
        self.visit(it, depth)
        self.block(node.body, depth)
        self.block(node.orelse, depth)

    def v_if(self, node, depth):
        self.visit(node.test, depth)
        self.block(node.body, depth)
        self.block(node.orelse, depth)

    def v_call(self, node, depth):
        func = node.func
        kind = func.__class__
        names = self.names
        to_tool = False
        if kind is _NAME:
            ident = func.id
            if ident in names.callable:
                to_tool = ident in names.tools
                if to_tool or ident in _BUILTINS:
                    self.calls.add(ident)
            elif ident not in FORBIDDEN_NAMES and ident[:2] != "__":  # those get their own error
                self.error(
                    "unknown-call",
                    f"{ident!r} is not a tool, an allowed builtin or a parameter",
                    func.lineno,
                    func.col_offset,
                )
        elif kind is ast.Attribute:
            owner = func.value
            if owner.__class__ is _NAME and owner.id in names.tools:
                to_tool = True
                qualified = f"{owner.id}.{func.attr}"
                members = names.members.get(owner.id)
                if members is not None and func.attr not in members:
                    self.error(
                        "unknown-call", f"{qualified!r} is not a tool", func.lineno, func.col_offset
                    )
                else:
                    self.calls.add(qualified)
        else:
            self.error(
                "call-target",
                "only tools, allowed builtins, parameters and methods can be called, "
                f"not a {kind.__name__} expression",
                func.lineno,
                func.col_offset,
            )
        visit = self.visit
        visit(func, depth)
        for arg in node.args:
            visit(arg, depth)
        for kw in node.keywords:
            if kw.arg is None and not to_tool and not (kind is _NAME and func.id == "dict"):
                # `sorted(x, **{"key": f})` would hand over any callable, past the key= rule.
                self.error(
                    "kwargs-argument",
                    "a **mapping argument is only allowed in a call of dict() or of a tool",
                    kw.lineno,
                    kw.col_offset,
                )
            self.keyword(kw, depth, to_tool)

    def keyword(self, node, depth, to_tool):
        """A keyword argument; key= is where a lambda may appear, and what it may be is restricted."""
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
            if ident == "key":
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
        if self.scope >= self.max_scope:
            self.scope_limit(node)
            return
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
        self.scope += 1  # its parameters are local: bound, but not program variables
        for param in args.args:
            self.enter(param, depth + 2)
            ident, line, col = param.arg, param.lineno, param.col_offset
            if self.lines is not None:
                self.ascii_identifier(ident, line, col)
            self.check_name(ident, line, col, "parameter")
            self.bind(ident, line, col)
        self.visit(node.body, depth + 1)
        self.scope -= 1

    def v_lambda(self, node, depth):
        self.error(
            "lambda-position",
            "lambda is only allowed as the key= argument of a call",
            node.lineno,
            node.col_offset,
        )

    def v_name(self, node, depth):
        ident, line, col = node.id, node.lineno, node.col_offset
        if self.lines is not None:
            self.ascii_identifier(ident, line, col)
        if ident in FORBIDDEN_NAMES or ident[:2] == "__":  # tested here first: most names are fine
            self.check_name(ident, line, col)
        if node.ctx.__class__ is _STORE:
            self.bind(ident, line, col)

    def v_attribute(self, node, depth):
        attr = node.attr
        line, end = node.end_lineno, node.end_col_offset
        col = end - len(attr)  # where the name is (when it is ASCII, as it must be)
        if self.lines is not None:
            self.ascii_identifier(attr, line, col, end)
        if attr[0] == "_":
            self.error(
                "dunder-attribute",
                f"attribute '.{attr}' is not allowed: attribute names must not start with '_'",
                line,
                col,
            )
        elif attr in FORMAT_ATTRIBUTES:
            self.error(
                "format-attribute",
                f"attribute '.{attr}' is not allowed (format fields look up "
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
        if node.ctx.__class__ is _STORE:
            self.error(
                "attribute-store",
                "assigning to an attribute is not allowed",
                node.lineno,
                node.col_offset,
            )
        self.visit(node.value, depth)

    def v_subscript(self, node, depth):
        self.visit(node.value, depth)
        self.visit(node.slice, depth)

    def v_slice(self, node, depth):
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.visit(part, depth)

    def v_starred(self, node, depth):
        self.visit(node.value, depth)

    def v_sequence(self, node, depth):  # List, Tuple, Set
        elts = node.elts
        if len(elts) > self.max_literal:
            self.error(
                "limit-literal-len",
                f"display has {len(elts)} items; the limit is {self.max_literal}",
                node.lineno,
                node.col_offset,
            )
        visit = self.visit
        for elt in elts:
            visit(elt, depth)

    def v_dict(self, node, depth):
        keys = node.keys
        if len(keys) > self.max_literal:
            self.error(
                "limit-literal-len",
                f"display has {len(keys)} items; the limit is {self.max_literal}",
                node.lineno,
                node.col_offset,
            )
        visit = self.visit
        for key, value in zip(keys, node.values):
            if key is not None:  # None for a `**mapping` entry
                visit(key, depth)
            visit(value, depth)

    def scope_limit(self, node):
        self.error(
            "limit-comprehension-depth",
            f"comprehensions and lambdas nest more than {self.max_scope} levels; "
            f"the limit is {self.max_scope}",
            node.lineno,
            node.col_offset,
        )

    def v_comp(self, node, depth):  # ListComp, SetComp
        if self.scope >= self.max_scope:
            self.scope_limit(node)
            return
        self.scope += 1
        for gen in node.generators:
            self.comprehension(gen, depth)
        self.visit(node.elt, depth)
        self.scope -= 1

    def v_dictcomp(self, node, depth):
        if self.scope >= self.max_scope:
            self.scope_limit(node)
            return
        self.scope += 1
        for gen in node.generators:
            self.comprehension(gen, depth)
        self.visit(node.key, depth)
        self.visit(node.value, depth)
        self.scope -= 1

    def comprehension(self, node, depth):
        self.enter(node, depth)
        target = node.target
        if node.is_async:
            self.error(
                "forbidden-node",
                "'async for' is not allowed in lackpy",
                target.lineno,
                target.col_offset,
            )
        depth += 1
        visit = self.visit
        visit(target, depth)
        visit(node.iter, depth)
        for cond in node.ifs:
            visit(cond, depth)

    def v_compare(self, node, depth):  # every comparison operator is allowed
        visit = self.visit
        visit(node.left, depth)
        for right in node.comparators:
            visit(right, depth)

    def v_boolop(self, node, depth):  # `and` and `or` are both allowed
        visit = self.visit
        for value in node.values:
            visit(value, depth)

    def v_unaryop(self, node, depth):
        op = node.op.__class__
        if op not in UNARY_OPERATORS:
            self.error(
                "forbidden-operator",
                f"operator '{FORBIDDEN_OPERATORS.get(op, op.__name__)}' is not allowed in lackpy",
                node.lineno,
                node.col_offset,
            )
        self.visit(node.operand, depth)

    def v_binop(self, node, depth):
        op = node.op.__class__
        if op not in BINARY_OPERATORS:
            self.error(
                "forbidden-operator",
                f"operator '{FORBIDDEN_OPERATORS.get(op, op.__name__)}' is not allowed in lackpy",
                node.lineno,
                node.col_offset,
            )
        self.visit(node.left, depth)
        self.visit(node.right, depth)

    def v_ifexp(self, node, depth):
        self.visit(node.body, depth)
        self.visit(node.test, depth)
        self.visit(node.orelse, depth)

    def v_joinedstr(self, node, depth):
        visit = self.visit
        for value in node.values:
            visit(value, depth)

    def v_formattedvalue(self, node, depth):
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
                self.error(
                    "dunder-string",
                    f"{kind.__name__} constants must not contain '__'",
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


_HANDLERS = {
    ast.Module: _Walker.v_module,
    ast.Expr: _Walker.v_expr,
    ast.Assign: _Walker.v_assign,
    ast.AugAssign: _Walker.v_augassign,
    ast.For: _Walker.v_for,
    ast.If: _Walker.v_if,
    ast.Call: _Walker.v_call,
    ast.Lambda: _Walker.v_lambda,
    ast.Name: _Walker.v_name,
    ast.Attribute: _Walker.v_attribute,
    ast.Subscript: _Walker.v_subscript,
    ast.Slice: _Walker.v_slice,
    ast.Starred: _Walker.v_starred,
    ast.List: _Walker.v_sequence,
    ast.Tuple: _Walker.v_sequence,
    ast.Set: _Walker.v_sequence,
    ast.Dict: _Walker.v_dict,
    ast.ListComp: _Walker.v_comp,
    ast.SetComp: _Walker.v_comp,
    ast.DictComp: _Walker.v_dictcomp,
    ast.Compare: _Walker.v_compare,
    ast.BoolOp: _Walker.v_boolop,
    ast.UnaryOp: _Walker.v_unaryop,
    ast.BinOp: _Walker.v_binop,
    ast.IfExp: _Walker.v_ifexp,
    ast.JoinedStr: _Walker.v_joinedstr,
    ast.FormattedValue: _Walker.v_formattedvalue,
    ast.Constant: _Walker.v_constant,
}


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
    if (
        _WARNING_FILTER not in warnings.filters
    ):  # (re)install: a catch_warnings block may have dropped it
        warnings.filterwarnings("ignore", category=SyntaxWarning, module=_WARNING_MODULE)
    try:
        return compile(text, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        if not (exc.msg or "").startswith(_WARNING_MESSAGES):
            raise
    # A filter set after import (`-W error`, pytest) turned a parser warning
    # into an error: parse again with our filter in front.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=SyntaxWarning, module=_WARNING_MODULE)
        return compile(text, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)


def check_language(language) -> str:
    """LANGUAGE when it names a level, else a ValueError listing the levels."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language level {language!r}; levels: {', '.join(LANGUAGES)}")
    return language


def _failure(message, rule, line=None, col=None) -> ValidationResult:
    return ValidationResult(False, [ValidationError(message, line, col, rule)], [], [])


def validate(
    source, *, tools=(), params=(), rules=(), limits: ProgramLimits | None = None
) -> ValidationResult:
    """Check SOURCE (str or bytes) against the lackpy language; never raises for any SOURCE.

    TOOLS are the names a program may call (kit tools; a pack namespace "fs"
    allows `fs.anything(...)`, "fs.read" allows just `fs.read(...)`); PARAMS
    the names the caller injects; RULES extra callables that tighten the check.
    """
    return validate_tree(source, tools=tools, params=params, rules=rules, limits=limits)[0]


def validate_tree(source, *, tools=(), params=(), rules=(), limits: ProgramLimits | None = None):
    """validate(), and the module AST it checked when valid (else None).

    The jail compiles that very tree: no second parse, and nothing but what
    was checked.
    """
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
            return _failure(
                f"integer literal has more than {limits.max_int_digits} digits; "
                f"the limit is {limits.max_int_digits}",
                "limit-int-digits",
                *_place(exc),
            ), None
        return _failure(exc.msg or "invalid syntax", "syntax", *_place(exc)), None
    except (RecursionError, MemoryError) as exc:
        return _failure(f"program is too complex to parse ({exc})", "limit-parse"), None
    except Exception as exc:  # e.g. ValueError: whatever the parser raises is a rejection
        return _failure(f"program cannot be parsed: {type(exc).__name__}: {exc}", "syntax"), None
    if tools or params:
        names = _Names(_name_list(tools, "tools"), _name_list(params, "params"))
    else:
        names = _NO_NAMES
    walker = _Walker(names, limits, lines)
    complete = walker.run(tree)
    if rules and complete:
        _apply_rules(rules, tree, walker)
    errors = walker.errors
    if len(errors) > 1:
        errors.sort(key=_position)
    result = ValidationResult(not errors, errors, sorted(walker.calls), sorted(walker.variables))
    return result, (tree if result.valid else None)


def _position(error: ValidationError):
    return (error.line or 0, error.col or 0)
