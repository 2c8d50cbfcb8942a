"""Fuzzing the validator: it never raises, answers quickly, and what it accepts obeys the language.

The invariants are checked by a naive, independent checker (ast.walk over a
freshly parsed tree, with its own statement of the rules), never by the
validator's own code. Budget: LACKJAIL_FUZZ_EXAMPLES examples per test.
"""

import ast
import io
import os
import string
import sys
import time
import tokenize

import hypothesmith
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from lackjail.lang import ValidationResult, validate

EXAMPLES = int(os.environ.get("LACKJAIL_FUZZ_EXAMPLES", "200"))
# hypothesmith filters its own candidates: a run where it discards many is not a failure.
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# hypothesmith spends 0.1-0.5 s making each example: those suites take a share of the budget.
SLOW_FUZZ = settings(FUZZ, max_examples=max(10, EXAMPLES // 4))
# CPU seconds per validate() call: CPU, not wall time, so a loaded machine cannot fail it.
TIME_BOUND = 1.0

TOOLS = ("read_file", "fs.*")
PARAMS = ("path",)
# the tools' signatures, so that every fuzzed program's tool calls are checked too
SIGNATURES = {
    "read_file": (("path", ("str",), True),),
    "fs.read": (("path", ("str", "None"), True), ("limit", ("int",), False)),
}

# The language, restated independently of lackjail.lang.grammar.
ALLOWED_NODES = {
    "Module",
    "Expr",
    "Assign",
    "AugAssign",
    "For",
    "If",
    "Call",
    "Name",
    "Attribute",
    "Subscript",
    "List",
    "Dict",
    "Tuple",
    "Set",
    "ListComp",
    "DictComp",
    "SetComp",
    "Compare",
    "BoolOp",
    "UnaryOp",
    "BinOp",
    "JoinedStr",
    "FormattedValue",
    "Constant",
    "Starred",
    "Slice",
    "comprehension",
    "IfExp",
    "keyword",
    "Lambda",
    "arguments",
    "arg",
    "Load",
    "Store",
    "Add",
    "Sub",
    "Mult",
    "Div",
    "FloorDiv",
    "Mod",
    "Not",
    "USub",
    "UAdd",
    "And",
    "Or",
    "Eq",
    "NotEq",
    "Lt",
    "LtE",
    "Gt",
    "GtE",
    "Is",
    "IsNot",
    "In",
    "NotIn",
}
BUILTINS = {
    "len",
    "sorted",
    "reversed",
    "enumerate",
    "zip",
    "range",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "abs",
    "round",
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "set",
    "tuple",
    "isinstance",
    "print",
}
CALLABLE = BUILTINS | set(TOOLS) | set(PARAMS)
DANGEROUS = {
    "eval",
    "exec",
    "compile",
    "open",
    "getattr",
    "setattr",
    "delattr",
    "hasattr",
    "globals",
    "locals",
    "vars",
    "dir",
    "type",
    "object",
    "breakpoint",
    "input",
    "super",
    "id",
    "iter",
    "next",
    "chr",
    "ord",
    "format",
    "bytes",
    "bytearray",
    "memoryview",
    "exit",
    "quit",
    "help",
}
BAD_ATTRIBUTE_PREFIXES = ("_", "f_", "gi_", "cr_", "ag_", "tb_", "co_")


def accepted_text(source) -> str:
    """An accepted SOURCE as text: bytes decoded as UTF-8, a leading BOM dropped."""
    text = source.decode("utf-8") if isinstance(source, bytes) else source
    return text.removeprefix("\ufeff")


def assert_safe_attribute(node: ast.Attribute) -> None:
    """No underscore or frame/code/generator attribute, no format lookups, no stores."""
    assert not node.attr.startswith(BAD_ATTRIBUTE_PREFIXES)
    assert node.attr not in ("format", "format_map", "mro")
    assert not isinstance(node.ctx, ast.Store)


def assert_obeys_language(source):
    """The naive checker: walk a fresh parse of an accepted program and check every rule."""
    text = accepted_text(source)
    assert "\x00" not in text
    tree = ast.parse(text)
    key_lambdas = set()
    for node in ast.walk(tree):
        assert type(node).__name__ in ALLOWED_NODES, ast.dump(node)
        if isinstance(node, ast.Attribute):
            assert_safe_attribute(node)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                assert "__" not in node.value
            elif isinstance(node.value, bytes):
                assert b"__" not in node.value
            elif type(node.value) is int:
                assert len(str(node.value)) <= 100
        elif isinstance(node, ast.Call):
            func = node.func
            assert isinstance(func, ast.Attribute) or (
                isinstance(func, ast.Name) and func.id in CALLABLE
            )
            key_lambdas.update(id(kw.value) for kw in node.keywords if kw.arg == "key")
            owner = func.value if isinstance(func, ast.Attribute) else func
            to_tool = isinstance(owner, ast.Name) and owner.id in TOOLS
            for kw in node.keywords:
                if kw.arg is None:  # **mapping: only dict() and tools, never a key= in disguise
                    assert to_tool or (isinstance(func, ast.Name) and func.id == "dict")
                elif kw.arg == "key" and not to_tool:
                    assert isinstance(kw.value, ast.Lambda) or (
                        isinstance(kw.value, ast.Name) and kw.value.id in CALLABLE
                    )
        elif isinstance(node, ast.Name):
            assert node.id not in DANGEROUS and not node.id.startswith("__")
            if isinstance(node.ctx, ast.Store):
                assert node.id not in CALLABLE
        elif isinstance(node, ast.arg):
            assert node.arg not in CALLABLE and node.arg not in DANGEROUS
        elif isinstance(node, ast.For):
            assert isinstance(node.iter, (ast.Call, ast.Name))
        elif isinstance(node, ast.comprehension):
            assert not node.is_async
    assert {id(n) for n in ast.walk(tree) if isinstance(n, ast.Lambda)} <= key_lambdas
    lines = text.replace("\r\n", "\n").replace("\r", "\n")  # the parser's universal newlines
    for token in tokenize.generate_tokens(io.StringIO(lines).readline):
        if token.type == tokenize.NAME:
            assert token.string.isascii(), token


def coherent(source, language: str) -> ValidationResult:
    """Validate SOURCE at LANGUAGE: no exception, within the time bound, a coherent result."""
    started = time.thread_time()
    result = validate(source, tools=TOOLS, params=PARAMS, language=language, signatures=SIGNATURES)
    assert time.thread_time() - started < TIME_BOUND
    assert isinstance(result, ValidationResult)
    assert result.valid == (not result.errors)
    assert not [e for e in result.errors if e.rule == "internal"], result.errors
    for error in result.errors:
        assert isinstance(error.message, str) and error.message
        assert error.line is None or error.line >= 1
        assert error.col is None or error.col >= 1  # 1-based
    return result


def checked(source) -> ValidationResult:
    """Validate SOURCE (coherent(), at the lackpy level) and check what it accepts."""
    result = coherent(source, "lackpy")
    if result.valid:
        assert_obeys_language(source)
        assert set(result.calls) <= CALLABLE | {c for c in result.calls if c.startswith("fs.")}
    return result


@FUZZ
@given(st.text())
def test_arbitrary_text(source):
    checked(source)


@FUZZ
@given(st.binary())
def test_arbitrary_bytes(source):
    checked(source)


@SLOW_FUZZ
@given(hypothesmith.from_grammar())
def test_generated_python_from_grammar(source):
    checked(source)


@SLOW_FUZZ
@given(hypothesmith.from_node())
def test_generated_python_from_nodes(source):
    checked(source)


# A generator of lackpy-looking programs, mostly made of allowed pieces with
# forbidden ones mixed in, so that many are accepted and the invariants are exercised.
GOOD_NAMES = ["x", "y", "_", "path", "words"]
BAD_NAMES = [
    "read_file",
    "fs",
    "len",
    "print",
    "eval",
    "getattr",
    "type",
    "vars",
    "chr",
    "format",
    "__import__",
    "__builtins__",
    "ｅｖａｌ",
    "𝐥𝐞𝐧",
    "café",
]
CALLEES = [
    "len",
    "sorted",
    "print",
    "str",
    "range",
    "read_file",
    "fs.read",
    "path",
    "x",
    "eval",
    "ｌｅｎ",
]
GOOD_ATTRIBUTES = ["upper", "split", "append", "items", "get", "decode"]
BAD_ATTRIBUTES = [
    "format",
    "format_map",
    "mro",
    "__class__",
    "__self__",
    "_x",
    "gi_frame",
    "f_globals",
    "tb_frame",
    "co_code",
    "ｆormat",
]
GOOD_CONSTANTS = [
    "1",
    "0",
    "-2",
    "1.5",
    "None",
    "True",
    "'a'",
    "'_'",
    "b'x'",
    "'%c'",
    "...",
    "f'{x}'",
]
BAD_CONSTANTS = [
    "'__'",
    "'_' '_'",
    "'\\x5f\\x5f'",
    "b'__'",
    "'{0.__class__}'",
    "9" * 101,
    "f'{x:__}'",
]
GOOD_BINARY = ["+", "-", "*", "/", "//", "%", "and", "or", "==", "<", "in", "is not"]
BAD_BINARY = ["**", "|", "&", "^", "<<", "@"]


def rarely(good, bad):
    """Draw from strategy GOOD nine times in ten, else from BAD."""
    return st.sampled_from([False] * 9 + [True]).flatmap(lambda is_bad: bad if is_bad else good)


def mostly(good, bad):
    """Draw from the list GOOD nine times in ten, else from BAD."""
    return rarely(st.sampled_from(good), st.sampled_from(bad))


NAMES = mostly(GOOD_NAMES, BAD_NAMES)
ATTRIBUTES = mostly(GOOD_ATTRIBUTES, BAD_ATTRIBUTES)


def _expressions():
    leaves = st.one_of(NAMES, mostly(GOOD_CONSTANTS, BAD_CONSTANTS))

    def extend(inner):
        pair = st.tuples(inner, inner)
        return rarely(
            allowed(inner, pair),
            st.one_of(  # constructs that are always rejected
                inner.map(lambda e: f"(lambda: {e})"),
                inner.map(lambda e: f"({e} for a in b)"),
                inner.map(lambda e: f"(y := {e})"),
            ),
        )

    def allowed(inner, pair):
        return st.one_of(
            st.tuples(inner, mostly(GOOD_BINARY, BAD_BINARY), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            st.tuples(inner, ATTRIBUTES).map(lambda t: f"({t[0]}).{t[1]}"),
            st.tuples(st.sampled_from(CALLEES), st.lists(inner, max_size=3)).map(
                lambda t: f"{t[0]}({', '.join(t[1])})"
            ),
            st.tuples(inner, ATTRIBUTES, inner).map(lambda t: f"({t[0]}).{t[1]}({t[2]})"),
            st.tuples(inner, mostly(["a", "_"], BAD_NAMES), inner).map(
                lambda t: f"sorted({t[0]}, key=lambda {t[1]}: {t[2]})"
            ),
            st.tuples(inner, inner).map(lambda t: f"max({t[0]}, key={t[1]})"),
            st.tuples(st.sampled_from(["dict", "sorted", "read_file", "x.get"]), inner).map(
                lambda t: f"{t[0]}(**{{'key': {t[1]}}})"
            ),
            st.tuples(inner, st.sampled_from(["len", "str", "read_file"])).map(
                lambda t: f"min({t[0]}, key={t[1]})"
            ),
            st.lists(inner, max_size=3).map(lambda es: f"[{', '.join(es)}]"),
            pair.map(lambda t: f"{{{t[0]}: {t[1]}}}"),
            pair.map(lambda t: f"({t[0]})[{t[1]}]"),
            st.tuples(inner, mostly(["a", "_"], BAD_NAMES), inner, inner).map(
                lambda t: f"[{t[0]} for {t[1]} in {t[2]} if {t[3]}]"
            ),
            inner.map(lambda e: f"f'{{{e}}}'"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
            st.tuples(mostly(["-", "not "], ["~"]), inner).map(lambda t: f"({t[0]}{t[1]})"),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def _statements(expr):
    targets = mostly(
        ["x", "y", "_", "words", "a, *b", "d['k']"], ["path", "len", "read_file", "fs", "x.y"]
    )
    simple = st.one_of(
        st.tuples(targets, expr).map(lambda t: f"{t[0]} = {t[1]}"),
        st.tuples(targets, mostly(["+=", "-="], ["**=", "|="]), expr).map(
            lambda t: f"{t[0]} {t[1]} {t[2]}"
        ),
        expr,
    )
    return rarely(
        st.one_of(
            simple,
            simple,
            st.tuples(targets, st.one_of(NAMES, expr), simple).map(
                lambda t: f"for {t[0]} in {t[1]}:\n    {t[2]}"
            ),
            st.tuples(expr, simple, simple).map(
                lambda t: f"if {t[0]}:\n    {t[1]}\nelse:\n    {t[2]}"
            ),
        ),
        st.one_of(
            st.sampled_from(["import os", "del x", "pass", "global x", "x: int = 1"]),
            st.tuples(expr, simple).map(lambda t: f"while {t[0]}:\n    {t[1]}"),
        ),
    )


PROGRAMS = st.lists(_statements(_expressions()), min_size=1, max_size=4).map("\n".join)


@FUZZ
@given(PROGRAMS)
def test_generated_lackpy_like_programs(source):
    result = checked(source)
    # Non-ASCII text outside identifiers changes nothing (it switches on the source-byte checks).
    assert checked(source + "\n# é ｅｖａｌ").valid == result.valid


def test_the_program_generator_reaches_accepted_programs():
    # Otherwise the invariant checks above would be vacuous.
    found = find(
        PROGRAMS,
        lambda s: validate(s, tools=TOOLS, params=PARAMS).valid and "key=lambda" in s,
        settings=settings(max_examples=5000, deadline=None, database=None),
    )
    assert_obeys_language(found)


ESCAPES = [
    "u = '_' * 2\n('{0.' + u + 'globals' + u + '}').format(read_file)",
    "().__class__.__bases__[0].__subclasses__()",
    "len = read_file\nlen(path)",
    "len = str.mro()[-1]\nlen()",
    "x = sorted([path], key=[read_file][0])",
    "x = b'{0.__self__}'.decode()",
    "ｅｖａｌ('1')",
    "x = (a for a in [1]).gi_frame.f_back.f_globals",
    "f = lambda: 1",
    "for a in [1, 2]:\n    x = a",
    "x = [[[[[[[[[1 for a in b] for a in b] for a in b] for a in b] for a in b]"
    " for a in b] for a in b] for a in b]"
    " for a in b]",
    "x = " + "-" * 300 + "1",
    "x = 1\ny = x.upper()\nz = sorted([y], key=lambda v: len(v))\nprint(f'{z!r:>10}')",
]


@st.composite
def mutated_escapes(draw):
    """A known escape with a few characters inserted, deleted or replaced."""
    text = draw(st.sampled_from(ESCAPES))
    alphabet = st.sampled_from(
        list("_.()[]'\"{}:=,+*-\n #\\ab0xyｅ\x00") + ["__", "eval", "format", "lambda "]
    )
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(alphabet)
        if action == "insert":
            text = text[:at] + piece + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + piece + text[at + 1 :]
    return text


@FUZZ
@given(mutated_escapes(), st.booleans())
def test_mutated_escapes(source, as_bytes):
    checked(source.encode("utf-8", "surrogatepass") if as_bytes else source)


# -- the extended level ---------------------------------------------------------------

EXTENDED_NODES = ALLOWED_NODES | {
    "FunctionDef",
    "Return",
    "While",
    "Try",
    "ExceptHandler",
    "Raise",
    "Assert",
    "Break",
    "Continue",
    "Pass",
    "GeneratorExp",
    # operators: `**` and the bit operators (the jail bounds their cost)
    "Pow",
    "LShift",
    "RShift",
    "BitOr",
    "BitXor",
    "BitAnd",
    "Invert",
}
# Harmless once no format field can look anything up: strings they build reach no sink.
EXTENDED_BUILTINS = BUILTINS | {
    "repr",
    "map",
    "filter",
    "divmod",
    "pow",
    "chr",
    "ord",
    "hex",
    "oct",
    "bin",
    "iter",
    "next",
    "frozenset",
}
EXTENDED_DANGEROUS = DANGEROUS - EXTENDED_BUILTINS


class _Probe:
    """Stands in for every argument of a format call: any attribute or item lookup fails."""

    def __getattr__(self, name):
        raise AssertionError(f"a format field looked up .{name}")

    def __getitem__(self, key):
        raise AssertionError(f"a format field looked up [{key!r}]")

    def __format__(self, spec):
        return ""


class _Probes(dict):
    def __missing__(self, key):
        return _Probe()


def assert_plain_format(node: ast.Attribute) -> None:
    """`.format` at the extended level: on a str literal, and formatting it with probes
    for every argument looks nothing up."""
    assert isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    string.Formatter().vformat(node.value.value, [_Probe()] * 50, _Probes())


EXCEPTIONS = {
    "Exception",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "IndexError",
    "KeyError",
    "LookupError",
    "NameError",
    "NotImplementedError",
    "OverflowError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "TypeError",
    "UnicodeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "ValueError",
    "ZeroDivisionError",
    "ToolError",
}
BOUND_NEVER = EXTENDED_BUILTINS | set(TOOLS) | set(PARAMS) | EXCEPTIONS | DANGEROUS


def _exits_in_finally(statements, in_loop=False):
    """A return, or a break/continue of a loop outside the block, anywhere in STATEMENTS."""
    for node in statements:
        if isinstance(node, ast.Return):
            return True
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            return True
        if isinstance(node, ast.FunctionDef):
            continue
        loop = isinstance(node, (ast.For, ast.While))
        blocks = [getattr(node, field, []) for field in ("body", "orelse", "finalbody")]
        blocks += [handler.body for handler in getattr(node, "handlers", [])]
        for index, block in enumerate(blocks):
            if _exits_in_finally(block, in_loop or (loop and index == 0)):
                return True
    return False


def assert_obeys_extended(source):
    """The naive checker for the extended level."""
    tree = ast.parse(accepted_text(source))
    compile(tree, "<fuzz>", "exec")  # return/break/continue placed where Python allows them
    for node in ast.walk(tree):
        assert type(node).__name__ in EXTENDED_NODES, ast.dump(node)
        if isinstance(node, ast.Attribute) and node.attr == "format":
            assert_plain_format(node)
        elif isinstance(node, ast.Attribute):
            assert_safe_attribute(node)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, (str, bytes)):
                assert ("__" if isinstance(node.value, str) else b"__") not in node.value
        elif isinstance(node, ast.Name):
            assert node.id not in EXTENDED_DANGEROUS and not node.id.startswith("__")
            if isinstance(node.ctx, ast.Store):
                assert node.id not in BOUND_NEVER
        elif isinstance(node, ast.arg):
            assert node.arg not in BOUND_NEVER and not node.arg.startswith("__")
        elif isinstance(node, ast.FunctionDef):
            assert not node.decorator_list and node.name not in BOUND_NEVER
        elif isinstance(node, ast.ExceptHandler):
            assert node.type is not None, "a bare except catches the stop verdicts"
            kinds = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            assert all(isinstance(k, ast.Name) and k.id in EXCEPTIONS for k in kinds)
            assert node.name is None or node.name not in BOUND_NEVER
        elif isinstance(node, ast.Try):
            assert not _exits_in_finally(node.finalbody), "finally would swallow a stop"
        elif isinstance(node, ast.Call):
            func = node.func
            owner = func.value if isinstance(func, ast.Attribute) else func
            to_tool = isinstance(owner, ast.Name) and owner.id in TOOLS
            for kw in node.keywords:
                if kw.arg is None:
                    assert to_tool or (isinstance(func, ast.Name) and func.id == "dict")


def checked_extended(source) -> ValidationResult:
    """Validate SOURCE (coherent(), at the extended level) and check what it accepts."""
    result = coherent(source, "extended")
    if result.valid:
        assert_obeys_extended(source)
        # what lackpy accepts, extended accepts too
    if validate(source, tools=TOOLS, params=PARAMS, signatures=SIGNATURES).valid:
        assert result.valid, result.errors
    return result


EXCEPT_TYPES = mostly(
    ["ValueError", "Exception", "(KeyError, IndexError)", "ToolError", "ZeroDivisionError"],
    ["", "BaseException", "KeyboardInterrupt", "(ValueError, SystemExit)", "x", "GeneratorExit"],
)


def _extended_statements(expr):
    simple = st.one_of(
        st.tuples(st.sampled_from(["x", "y", "words"]), expr).map(lambda t: f"{t[0]} = {t[1]}"),
        expr,
        mostly(["pass", "break", "continue", "return x", "raise ValueError('v')"], ["del x"]),
        expr.map(lambda e: f"assert {e}, 'msg'"),
    )
    body = st.lists(simple, min_size=1, max_size=3).map(lambda ls: "\n".join(ls))

    def indent(text, n=4):
        return "\n".join(" " * n + line for line in text.splitlines())

    return st.one_of(
        simple,
        st.tuples(
            mostly(["", "@print\n"], ["@print\n"]), mostly(["f", "g"], ["len", "__f"]), body
        ).map(lambda t: f"{t[0]}def {t[1]}(x, y=1, *r, **k):\n{indent(t[2])}"),
        st.tuples(expr, body).map(lambda t: f"while {t[0]}:\n{indent(t[1])}"),
        st.tuples(expr, body).map(lambda t: f"for x in {t[0]}:\n{indent(t[1])}"),
        st.tuples(body, EXCEPT_TYPES, mostly([" as e", ""], [" as len"]), body, body).map(
            lambda t: (
                f"try:\n{indent(t[0])}\nexcept {t[1]}{t[2]}:\n{indent(t[3])}"
                f"\nfinally:\n{indent(t[4])}"
            )
        ),
        expr.map(lambda e: f"g = (a + {e} for a in range(3))"),
        expr.map(lambda e: f"h = lambda a, b=2: ({e}, a, b)"),
        st.tuples(body, expr).map(
            lambda t: f"def f(x):\n    for a in x:\n{indent(t[0], 8)}\n    return {t[1]}"
        ),
    )


# The names the expressions read, bound first (else most programs are undefined-name errors).
EXTENDED_PROGRAMS = st.lists(_extended_statements(_expressions()), min_size=1, max_size=4).map(
    lambda statements: "x = y = _ = words = a = 1\n" + "\n".join(statements)
)


@FUZZ
@given(EXTENDED_PROGRAMS)
def test_generated_extended_programs(source):
    result = checked_extended(source)
    assert checked_extended(source + "\n# é ｅｖａｌ").valid == result.valid


@FUZZ
@given(PROGRAMS)
def test_lackpy_programs_at_the_extended_level(source):
    checked_extended(source)


@SLOW_FUZZ
@given(hypothesmith.from_grammar())
def test_generated_python_at_the_extended_level(source):
    checked_extended(source)


@FUZZ
@given(st.text())
def test_arbitrary_text_at_the_extended_level(source):
    checked_extended(source)


def test_the_extended_generator_reaches_accepted_programs():
    found = find(
        EXTENDED_PROGRAMS,
        lambda s: (
            validate(
                s, tools=TOOLS, params=PARAMS, language="extended", signatures=SIGNATURES
            ).valid
            and ("except" in s or "def " in s or "while" in s)
        ),
        settings=settings(max_examples=5000, deadline=None, database=None),
    )
    assert_obeys_extended(found)


# -- the python level ---------------------------------------------------------------
#
# Restated here: what the python level adds, and what must never pass it. The module table
# is data (lackjail.lang.facades), read as such; every rule is this file's own.

from lackjail.lang.facades import FACADES  # noqa: E402 - the python level's section

PYTHON_NODES = EXTENDED_NODES | {
    "ClassDef",
    "Import",
    "ImportFrom",
    "alias",
    "With",
    "withitem",
    "Global",
    "Nonlocal",
    "Delete",
    "Del",
    "NamedExpr",
    "AnnAssign",
    "MatMult",
    "Yield",
    "YieldFrom",
    "Match",
    "match_case",
    "MatchValue",
    "MatchSingleton",
    "MatchSequence",
    "MatchMapping",
    "MatchClass",
    "MatchStar",
    "MatchAs",
    "MatchOr",
}
# Hooks of attribute lookup, class creation, descriptors, pickling and finalisation.
HOOKS = {
    "__getattribute__",
    "__getattr__",
    "__setattr__",
    "__delattr__",
    "__init_subclass__",
    "__set_name__",
    "__class_getitem__",
    "__del__",
    "__reduce__",
    "__reduce_ex__",
    "__new__",
    "__get__",
    "__set__",
    "__delete__",
    "__dict__",
    "__class__",
    "__globals__",
    "__builtins__",
    "__import__",
    "__subclasses__",
    "__mro__",
    "__bases__",
    "__code__",
    "__closure__",
    "__traceback__",
}
# getattr, hasattr and setattr are the jail's own at the python level (they refuse, when
# called, what a literal name may not be): a literal name they get is checked below.
PYTHON_DANGEROUS = {
    "eval",
    "exec",
    "open",
    "delattr",
    "globals",
    "locals",
    "vars",
    "dir",
    "breakpoint",
    "input",
    "memoryview",
    "exit",
    "quit",
    "help",
    "__import__",
    "__builtins__",
    "__build_class__",
}
DUNDER_WORD = __import__("re").compile(r"(?<![A-Za-z0-9_])__[A-Za-z0-9]\w*")
INTERNAL = ("f_", "gi_", "cr_", "ag_", "tb_", "co_", "func_")
PY_TOOLS = {"read_file", "fs"}
PY_CALLABLE = (
    EXTENDED_BUILTINS
    | PY_TOOLS
    | {
        "type",
        "super",
        "id",
        "hash",
        "bytes",
        "bytearray",
        "slice",
        "callable",
        "issubclass",
        "object",
        "property",
        "staticmethod",
        "classmethod",
        "format",
        "ascii",
        "complex",
    }
)


def _is_super_call(node) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _outside_stdlib(module) -> bool:
    head = module.partition(".")[0]
    return not head.startswith("_") and head not in sys.stdlib_module_names


def assert_obeys_python(source):
    """The naive checker for the python level."""
    tree = ast.parse(accepted_text(source))
    bound = _bound_anywhere(tree)
    named = {  # `x.__class__` whose only use is its name: x.__class__.__name__
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("__name__", "__qualname__")
    }
    for node in ast.walk(tree):
        assert type(node).__name__ in PYTHON_NODES, ast.dump(node)
        if isinstance(node, ast.Attribute):
            attr = node.attr
            if attr.startswith("__") and attr.endswith("__"):
                assert isinstance(node.ctx, ast.Load), attr
                if attr == "__class__":
                    assert id(node) in named
                elif attr not in ("__name__", "__qualname__", "__doc__", "__module__"):
                    assert _is_super_call(node.value) and attr not in HOOKS, attr
            assert not attr.startswith(INTERNAL) and attr not in ("mro", "with_traceback")
            assert attr != "format_map"
            if attr == "format":
                assert_plain_format(node)
            owner = node.value
            assert not (isinstance(owner, ast.Name) and owner.id == "read_file"), "tool attribute"
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if not any(c.isspace() for c in text):  # a text with whitespace is no name
                assert {w for w in DUNDER_WORD.findall(text)} <= {"__main__"}, text
        elif isinstance(node, ast.Name):
            assert node.id not in PYTHON_DANGEROUS
            # a name nothing binds is NameError at run time, but one a facade exports must be
            # imported to be read
            assert node.id not in ("compile", "reduce", "sys") or node.id in bound, node.id
            if node.id.startswith("__") and node.id.endswith("__"):
                assert node.id in ("__name__", "__all__", "__version__", "__author__") or (
                    isinstance(node.ctx, ast.Store)
                ), node.id
                assert node.id not in HOOKS
            if isinstance(node.ctx, ast.Store):
                assert node.id not in PY_TOOLS and node.id not in PARAMS
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            by_name = node.func.id in ("getattr", "hasattr", "setattr")
            if by_name and len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                name = node.args[1].value
                if isinstance(name, str):
                    assert not name.startswith(("_", *INTERNAL)), name
                    assert name not in ("mro", "with_traceback", "format", "format_map"), name
            # type(name, bases, namespace) is a class statement: its literal namespace defines
            # no hook (the jail's type() checks every key again when it is called)
            if node.func.id == "type" and len(node.args) == 3:
                namespace = node.args[2]
                if isinstance(namespace, ast.Dict):
                    keys = {k.value for k in namespace.keys if isinstance(k, ast.Constant)}
                    assert not keys & HOOKS, keys
            if node.func.id == "super":
                assert len(node.args) in (0, 2) and not node.keywords
        elif isinstance(node, ast.ClassDef):
            assert not node.keywords, "a metaclass or class keyword"
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    assert item.name not in HOOKS
        elif isinstance(node, ast.FunctionDef):
            assert node.name not in HOOKS
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _outside_stdlib(alias.name):  # which the jail never has: ImportError
                    assert alias.name in FACADES and alias.name != "__future__", alias.name
        elif isinstance(node, ast.ImportFrom):
            star = [alias.name for alias in node.names] == ["*"]
            assert not star or node in tree.body, "import * inside a function"
            if node.level == 0 and not _outside_stdlib(node.module):
                assert node.module in FACADES
                assert star or all(alias.name in FACADES[node.module] for alias in node.names)
        # a bare except is allowed: the runner raises a stop verdict again at the next line
        elif isinstance(node, ast.MatchClass):
            for attr in node.kwd_attrs:  # a keyword pattern reads that attribute
                assert not (attr.startswith("__") and attr.endswith("__")), attr
                assert not attr.startswith(INTERNAL), attr
            if node.patterns:  # positional: only a builtin that matches itself, never rebound
                cls = node.cls
                assert isinstance(cls, ast.Name) and cls.id in SELF_MATCHING, ast.dump(cls)
                assert cls.id not in _bound_anywhere(tree), cls.id
    _assert_own_private_reads(tree)


# The builtins a class pattern's positional sub-pattern may name: they match the subject.
SELF_MATCHING = {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list"}
SELF_MATCHING |= {"set", "str", "tuple"}
NAMEDTUPLE_API = {"_make", "_asdict", "_replace", "_fields", "_field_defaults"}


def _bound_anywhere(tree):
    """Every name the program binds, in any scope."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).partition(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def _assert_own_private_reads(tree):
    """A '_x' attribute is read only when the program gives its own objects one (a store, or
    a name bound in a class body), or it is namedtuple's API; a '_x_' never."""
    defined, read = set(NAMEDTUPLE_API), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif not (node.attr.startswith("__") and node.attr.endswith("__")):
                read.append(node.attr)
        elif isinstance(node, ast.MatchClass):
            read += [a for a in node.kwd_attrs if a.startswith("_")]
        elif isinstance(node, ast.ClassDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    defined.add(inner.id)
                elif isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
                    defined.add(inner.name)
    for attr in read:
        assert not (len(attr) > 2 and attr.endswith("_")), f"an enum '_x_' read: {attr}"
        assert attr in defined, f"a '_x' attribute the program never defines: {attr}"


def checked_python(source) -> ValidationResult:
    """Validate SOURCE (coherent(), at the python level) and check what it accepts; what
    extended accepts, python accepts too."""
    result = coherent(source, "python")
    if result.valid:
        assert_obeys_python(source)
        for call in result.calls:  # calls are of callables, never of a tool's attribute
            assert call in PY_CALLABLE or call.startswith("fs.") or call[0].isupper(), call
    if validate(
        source, tools=TOOLS, params=PARAMS, language="extended", signatures=SIGNATURES
    ).valid:
        assert result.valid, result.errors
    return result


MODULES = mostly(
    ["json", "re", "math", "collections", "dataclasses", "functools", "typing", "enum"],
    ["os", "sys", "io", "builtins", "importlib", "json.decoder", "collections.abc", "inspect"],
)
FROM_IMPORTS = mostly(
    [
        "from json import loads, dumps",
        "from dataclasses import dataclass, field",
        "from collections import Counter as C",
        "from functools import wraps, reduce",
        "from typing import Optional",
        "from json import *",
        "from . import x",
        "from numpy import array",
        "import numpy as np",
    ],
    [
        "from json import codecs",
        "from typing import get_type_hints",
        "from operator import attrgetter",
        "from os import path",
        "from string import Formatter",
    ],
)
METHOD_NAMES = mostly(
    ["__init__", "__repr__", "__eq__", "run", "_helper", "__len__", "__enter__", "__exit__"],
    sorted(HOOKS),
)
DECORATORS = mostly(
    ["@staticmethod", "@classmethod", "@property", "@deco", "@functools.lru_cache(maxsize=2)"],
    ["@getattr", "@(lambda f: f.__globals__)", "@type"],
)
OWNER_ATTRIBUTES = mostly(
    ["self.x", "self._y", "super().__init__", "json.loads", "obj.value", "self.__z"],
    [
        "self.__dict__",
        "super().__getattribute__",
        "json.codecs",
        "typing.sys",
        "read_file.name",
        "x.__class__",
        "e.with_traceback",
        "g.gi_frame",
        "x.__class__",
        "x.__class__.__bases__",
        "super().__class__",
    ],
)
STRINGS = mostly(
    ["'hi____'", "'a__b'", "'__main__'", "'____'", "b'__'"],
    ["'__class__'", "'{0.__globals__}'", "b'__import__'", "'x __init__'", "'x.__init__'"],
)


def _python_statements(expr):
    simple = st.one_of(
        st.tuples(st.sampled_from(["x", "y", "self.x", "obj.value"]), expr).map(
            lambda t: f"{t[0]} = {t[1]}"
        ),
        expr,
        OWNER_ATTRIBUTES.map(lambda a: f"z = {a}"),
        STRINGS.map(lambda s: f"s = {s}"),
        mostly(
            ["pass", "del x", "global x", "y: int = 1", "w = (v := 3) + v", "z = type(x)"],
            ["z = type(x, y, x)", "z = super(x)", "t = type", "__x = 1", "read_file = 1"],
        ),
        st.tuples(st.sampled_from(["f", "json.dumps"]), expr).map(
            lambda t: f"z = {t[0]}(**{{'a': {t[1]}}})"
        ),
    )
    body = st.lists(simple, min_size=1, max_size=3).map(lambda ls: "\n".join(ls))

    def indent(text, n=4):
        return "\n".join(" " * n + line for line in text.splitlines())

    method = st.tuples(
        st.one_of(st.just(""), DECORATORS.map(lambda d: d + "\n")), METHOD_NAMES, body
    )
    return st.one_of(
        simple,
        MODULES.map(lambda m: f"import {m}"),
        FROM_IMPORTS,
        st.tuples(
            mostly(["", "@dataclass\n", "@deco\n"], ["@type\n"]),
            mostly(["", "(Base)", "(Exception)", "(Base, Exception)"], ["(metaclass=M)", "(x=1)"]),
            st.lists(method, min_size=1, max_size=3),
        ).map(
            lambda t: (
                f"{t[0]}class K{t[1]}:\n    n = 0\n"
                + "\n".join(
                    indent(f"{d}def {name}(self, *a, **k):\n{indent(b)}") for d, name, b in t[2]
                )
            )
        ),
        st.tuples(DECORATORS, body).map(lambda t: f"{t[0]}\ndef f(x=1):\n{indent(t[1])}"),
        st.tuples(expr, body).map(lambda t: f"with Ctx({t[0]}) as c:\n{indent(t[1])}"),
        body.map(
            lambda b: (
                "def outer():\n    x = 1\n    def inner():\n        nonlocal x\n"
                f"{indent(b, 8)}\n    return inner"
            )
        ),
    )


# Names the statements read, bound first.
PYTHON_PRELUDE = """\
import json
import functools
import typing
from dataclasses import dataclass
x = y = _ = words = a = obj = self = s = z = e = g = v = 1
class Base:
    pass
class Ctx:
    def __init__(self, v):
        self.v = v
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return False
def deco(fn):
    return fn
def f(**k):
    return k
"""
PYTHON_PROGRAMS = st.lists(_python_statements(_expressions()), min_size=1, max_size=4).map(
    lambda statements: PYTHON_PRELUDE + "\n".join(statements)
)


@FUZZ
@given(PYTHON_PROGRAMS)
def test_generated_python_level_programs(source):
    result = checked_python(source)
    assert checked_python(source + "\n# é ｅｖａｌ").valid == result.valid


@FUZZ
@given(EXTENDED_PROGRAMS)
def test_extended_programs_at_the_python_level(source):
    checked_python(source)


@SLOW_FUZZ
@given(hypothesmith.from_grammar())
def test_generated_python_at_the_python_level(source):
    checked_python(source)


@FUZZ
@given(st.text())
def test_arbitrary_text_at_the_python_level(source):
    checked_python(source)


def test_the_python_generator_reaches_accepted_programs():
    found = find(
        PYTHON_PROGRAMS,
        lambda s: (
            validate(s, tools=TOOLS, params=PARAMS, language="python").valid
            and "class K" in s
            and "def __" in s
            and ("\n@" in s)
        ),
        settings=settings(max_examples=5000, deadline=None, database=None),
    )
    assert_obeys_python(found)
