"""Every rule, rejecting (with the reported line and 1-based column) and accepting."""

import ast
import warnings

import pytest

from lackjail.lang import ProgramLimits, ValidationError, ValidationResult, validate
from lackjail.lang import validator as validator_module
from lackjail.lang.grammar import ALLOWED_NODES
from lackjail.lang.rulebook import RULES

TOOLS = ("read_file", "fs.*")
PARAMS = ("path",)
READ_FILE = {"read_file": (("path", ("str",), True),)}  # read_file(path: str)


def found(source, **kw):
    kw.setdefault("tools", TOOLS)
    kw.setdefault("params", PARAMS)
    return [(e.rule, e.line, e.col) for e in validate(source, **kw).errors]


# (rule, program, line, col, extra validate() arguments)
PY = {"language": "python"}
REJECTED = [
    ("input-type", None, None, None, {}),
    ("input-type", 42, None, None, {}),
    ("encoding", b"x = 1\ny = '\xff'", 2, 6, {}),
    ("encoding", "x = '\ud800'", 1, 6, {}),
    ("nul-byte", "x = 1\ny = 2\x00", 2, 6, {}),
    ("nul-byte", b"\x00", 1, 1, {}),
    ("syntax", "x = 1 +", 1, 8, {}),
    ("syntax", "x = 1\nif x\n    y = 2", 2, 5, {}),
    ("limit-parse", "x = " + "-" * 20000 + "1", None, None, {}),
    (
        "limit-source-bytes",
        "x = 'abcdefgh'",
        None,
        None,
        {"limits": ProgramLimits(max_source_bytes=10)},
    ),
    (
        "limit-source-bytes",
        "x = 'é'",
        None,
        None,
        {"limits": ProgramLimits(max_source_bytes=7)},
    ),  # 7 chars, 8 bytes
    ("limit-nodes", "x = [1, 2, 3, 4, 5]", None, None, {"limits": ProgramLimits(max_nodes=5)}),
    ("limit-depth", "x = 1 + (2 + (3 + 4))", 1, 15, {"limits": ProgramLimits(max_depth=4)}),
    (
        "limit-comprehension-depth",
        "x = [[a for a in b] for b in c]",
        1,
        6,
        {"limits": ProgramLimits(max_comprehension_depth=1)},
    ),
    (
        "limit-comprehension-depth",
        "x = [sorted(b, key=lambda a: a) for b in c]",
        1,
        20,
        {"limits": ProgramLimits(max_comprehension_depth=1)},
    ),
    ("limit-literal-len", "x = 1\ny = 'abcd'", 2, 5, {"limits": ProgramLimits(max_literal_len=3)}),
    ("limit-literal-len", "x = b'abcd'", 1, 5, {"limits": ProgramLimits(max_literal_len=3)}),
    ("limit-literal-len", "x = [1, 2, 3, 4]", 1, 5, {"limits": ProgramLimits(max_literal_len=3)}),
    (
        "limit-literal-len",
        "x = {1: 1, 2: 2, 3: 3, 4: 4}",
        1,
        5,
        {"limits": ProgramLimits(max_literal_len=3)},
    ),
    ("limit-int-digits", "x = 1000", 1, 5, {"limits": ProgramLimits(max_int_digits=3)}),
    ("limit-int-digits", "x = 0x" + "f" * 400, 1, 5, {}),
    ("limit-int-digits", "x = " + "9" * 5000, 1, None, {}),
    ("forbidden-node", "import os", 1, 1, {}),
    ("forbidden-node", "x = 1\nfrom os import path", 2, 1, {}),
    ("forbidden-node", "def f():\n    return 1", 1, 1, {}),
    ("forbidden-node", "@d\ndef f():\n    return 1", 2, 1, {}),
    ("forbidden-node", "class A:\n    x = 1", 1, 1, {}),
    ("forbidden-node", "while x:\n    x = 0", 1, 1, {}),
    ("forbidden-node", "try:\n    x = 1\nexcept E:\n    x = 2", 1, 1, {}),
    ("forbidden-node", "with a as b:\n    x = 1", 1, 1, {}),
    ("forbidden-node", "global g", 1, 1, {}),
    ("forbidden-node", "yield 1", 1, 1, {}),
    ("forbidden-node", "await x", 1, 1, {}),
    ("forbidden-node", "match x:\n    case 1:\n        y = 1", 1, 1, {}),
    ("forbidden-node", "x = (y := 1)", 1, 6, {}),
    ("forbidden-node", "x = (a for a in b)", 1, 5, {}),
    ("forbidden-node", "x = [a async for a in b]", 1, 18, {}),
    ("forbidden-node", "del x", 1, 1, {}),
    ("forbidden-node", "x: int = 1", 1, 1, {}),
    ("forbidden-node", "type X = int", 1, 1, {}),
    ("forbidden-operator", "x = 2 ** 8", 1, 5, {}),
    ("forbidden-operator", "x = 2\nx **= 8", 2, 1, {}),
    ("forbidden-operator", "x = a | b", 1, 5, {}),
    ("forbidden-operator", "x = a & b", 1, 5, {}),
    ("forbidden-operator", "x = a ^ b", 1, 5, {}),
    ("forbidden-operator", "x = a << 1", 1, 5, {}),
    ("forbidden-operator", "x = a >> 1", 1, 5, {}),
    ("forbidden-operator", "x = a @ b", 1, 5, {}),
    ("forbidden-operator", "x = ~a", 1, 5, {}),
    ("forbidden-operator", "x = 1\nx |= 2", 2, 1, {}),
    ("forbidden-name", "x = eval", 1, 5, {}),
    ("forbidden-name", "getattr(x, 'y')", 1, 1, {}),
    ("forbidden-name", "type = 3", 1, 1, {}),
    ("forbidden-name", "for x in range(3):\n    y = vars", 2, 9, {}),
    ("forbidden-name", "sorted(a, key=lambda chr: chr)", 1, 22, {}),
    ("forbidden-name", "x = format", 1, 5, {"tools": ("format",)}),
    ("dunder-name", "x = __name__", 1, 5, {}),
    ("dunder-name", "dict(__class__=1)", 1, 6, {}),
    ("dunder-name", "sorted(a, key=lambda __x: 1)", 1, 22, {}),
    ("non-ascii-identifier", "café = 1", 1, 1, {}),
    ("non-ascii-identifier", "s = 'é'\nx = s.ｕpper()", 2, 7, {}),
    ("non-ascii-identifier", "len(ｐath)", 1, 5, {}),
    ("non-ascii-identifier", "sorted(a, ｋey=len)", 1, 11, {}),
    ("non-ascii-identifier", "sorted(a, key=lambda ｘ: 1)", 1, 22, {}),
    ("dunder-attribute", "x = a.__class__", 1, 7, {}),
    ("dunder-attribute", "x = a._private", 1, 7, {}),
    ("dunder-attribute", "x = (a\n  .__class__)", 2, 4, {}),
    ("internal-attribute", "x = g.gi_frame", 1, 7, {}),
    ("internal-attribute", "x = f.f_globals", 1, 7, {}),
    ("internal-attribute", "x = c.co_code", 1, 7, {}),
    ("attribute-name", "x = getattr(1, 'f_back')", 1, 16, PY),
    ("internal-attribute", "x = str.mro()", 1, 9, {}),
    ("format-attribute", "x = '{}'.format(1)", 1, 10, {}),
    ("format-attribute", "x = s.format_map(d)", 1, 7, {}),
    ("attribute-store", "a.b = 1", 1, 1, {}),
    ("dunder-string", "x = '__'", 1, 5, {}),
    ("dunder-string", "x = b'a__b'", 1, 5, {}),
    ("dunder-string", "x = f'a__b{y}'", 1, 7, {}),
    ("dunder-string", "x = f'{y:__}'", 1, 10, {}),
    ("unknown-call", "x = 1\nfoo(x)", 2, 1, {}),
    ("unknown-call", "fs.read(path)", 1, 1, {"tools": ("fs.write",)}),
    ("call-target", "x = [len][0](1)", 1, 5, {}),
    ("call-target", "x = read_file(path)(1)", 1, 5, {}),
    ("rebind-builtin", "len = read_file", 1, 1, {}),
    ("rebind-builtin", "len += 1", 1, 1, {}),
    ("rebind-builtin", "a, len = 1, 2", 1, 4, {}),
    ("rebind-builtin", "*len, = [1]", 1, 2, {}),
    ("rebind-builtin", "[a, [b, *len]] = x", 1, 10, {}),
    ("rebind-builtin", "for len in x:\n    y = 1", 1, 5, {}),
    ("rebind-builtin", "x = [1 for len in y]", 1, 12, {}),
    ("rebind-builtin", "x = {k: v for k, print in y}", 1, 18, {}),
    ("rebind-builtin", "sorted(a, key=lambda len: len)", 1, 22, {}),
    ("rebind-tool", "read_file = 1", 1, 1, {}),
    ("rebind-tool", "for fs in x:\n    y = 1", 1, 5, {}),
    ("rebind-tool", "fs = 1", 1, 1, {"tools": ("fs.read",)}),
    ("rebind-param", "path = 'x'", 1, 1, {}),
    ("rebind-param", "x = [path for path in y]", 1, 15, {}),
    ("lambda-position", "f = lambda: 1", 1, 5, {}),
    ("lambda-position", "sorted(x, reverse=lambda: 1)", 1, 19, {}),
    ("lambda-args", "sorted(x, key=lambda a, b=1: a)", 1, 15, {}),
    ("lambda-args", "sorted(x, key=lambda *a: a)", 1, 15, {}),
    ("lambda-args", "sorted(x, key=lambda a, *, b: a)", 1, 15, {}),
    ("key-argument", "sorted(x, key=str.lower)", 1, 15, {}),
    ("key-argument", "x = [1]\nx.sort(key=x[0])", 2, 12, {}),
    ("key-argument", "max(x, key=mine)", 1, 12, {}),
    ("kwargs-argument", "x = sorted(y, **{'key': read_file})", 1, 15, {}),
    ("kwargs-argument", "y = [1]\ny.sort(**d)", 2, 8, {}),
    ("for-iter", "for a in [1, 2]:\n    b = a", 1, 10, {}),
    ("encoding-declaration", "# -*- coding: latin-1 -*-\nx = 1", 1, 1, {}),
    ("encoding-declaration", "#!/bin/sh\n# vim: set fileencoding=utf-8 :\nx = 1", 2, 1, {}),
    ("undefined-name", "x = y + 1", 1, 5, {}),
    ("undefined-name", "for a in range(2):\n    b = a\nprint(c)", 3, 7, {}),
    ("undefined-name", "def f():\n    return g()", 2, 12, {"language": "extended"}),
    ("decorator", "@f\ndef f():\n    return 1", 1, 2, {"language": "extended"}),
    ("except-class", "try:\n    x = 1\nexcept:\n    x = 2", 3, 1, {"language": "extended"}),
    (
        "except-class",
        "try:\n    x = 1\nexcept (ValueError, BaseException):\n    x = 2",
        3,
        21,
        {"language": "extended"},
    ),
    ("misplaced-statement", "return 1", 1, 1, {"language": "extended"}),
    (
        "misplaced-statement",
        "for i in range(2):\n    def f():\n        break",
        3,
        9,
        {"language": "extended"},
    ),
    (
        "finally-exit",
        "for i in range(2):\n    try:\n        x = 1\n    finally:\n        continue",
        5,
        9,
        {"language": "extended"},
    ),
    ("for-iter", "for a in x.y:\n    b = a", 1, 10, {}),
    ("tool-attribute", "x = read_file.upper()", 1, 15, {}),
    ("tool-attribute", "x = read_file.name", 1, 15, {"language": "extended"}),
    ("call-only", "s = super\nx = 1", 1, 5, {"language": "python"}),
    ("dunder-method", "x = type('A', (), {'a': 1, '__del__': len})", 1, 28, PY),
    ("class-keyword", "x = 1\nclass M(type):\n    pass", 2, 9, PY),
    ("call-only", "class A:\n    def f(self):\n        return super(A)", 3, 16, PY),
    ("dunder-method", "class A:\n    def __getattr__(self, n):\n        return n", 2, 5, PY),
    ("dunder-method", "class A:\n    def __del__(self):\n        pass", 2, 5, PY),
    ("class-keyword", "class A(metaclass=abs):\n    pass", 1, 9, PY),
    ("import-module", "import os", 1, 8, PY),
    ("import-module", "from os import path", 1, 1, PY),
    ("import-module", "import json.decoder", 1, 8, PY),
    ("import-name", "from json import codecs", 1, 18, PY),
    ("import-name", "from typing import get_type_hints", 1, 20, PY),
    ("import-name", "from operator import attrgetter", 1, 22, PY),
    ("dunder-string", "x = 'a{0.__class__}'", 1, 5, PY),
    ("dunder-attribute", "x = 1\ny = x.__class__", 2, 7, PY),
    ("dunder-attribute", "class A:\n    def f(self):\n        return A.__init__", 3, 18, PY),
    ("tool-call", "x = read_file(path, 1)", 1, 5, {"signatures": READ_FILE}),
    ("tool-call", "x = read_file(42)", 1, 15, {"signatures": READ_FILE}),
    ("module-attribute", "import typing\nx = typing.sys", 2, 12, PY),
    ("module-attribute", "import json as j\nj.loads = len", 2, 3, PY),
    ("rule-error", "x = 1", None, None, {"rules": [lambda tree: 1 / 0]}),
    ("rule-error", "x = 1", None, None, {"rules": [lambda tree: [42]]}),
]


@pytest.mark.parametrize(
    "rule, source, line, col, kw", REJECTED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REJECTED)]
)
def test_rejected_with_place(rule, source, line, col, kw):
    result = validate(source, **{"tools": TOOLS, "params": PARAMS, **kw})
    assert not result.valid and not result
    assert (rule, line, col) in [(e.rule, e.line, e.col) for e in result.errors], result.errors


def test_every_rule_id_is_documented_and_exercised():
    # internal: test_validator_bug_fails_closed; param-*: the Checker's, in test_checker.py
    used = {case[0] for case in REJECTED} | {"internal", "param-name", "param-value"}
    assert used == set(RULES)


ACCEPTED = [
    "x = len([1, 2, 3])\nx",
    "x = read_file(path)\ny = x.split('\\n')\n[line.strip() for line in y if line]",
    "d = {}\nd['k'] = 1\nd['k'] += 2\nd",
    "a, *rest = [1, 2, 3]\nfor i, v in enumerate(rest):\n    print(i, v)\nelse:\n    print('done')",
    "x = sorted(['bb', 'a'], key=lambda s: (len(s), s))\nmax(x, key=len)",
    "sorted([3, 1], key=read_file)",
    "fs.read(path, key='name')",
    "d = dict(a=1)\ne = dict(d, **d)\nread_file(path, **e)\nfs.read(**e)",
    "x = fs.read(path)",
    "s = 'a' if 1 < 2 <= 3 else 'b'\nt = not s and s or None",
    "n = -5 // 2 % 3 * 4 / 2 - +1\nn",
    "f'{path!r:>{10}} {1.5:.2f} {path=}'",
    "x = {1, 2}\ny = {k: v for k, v in zip('ab', [1, 2])}\nz = {c for c in 'ab'}",
    "x = [1, 2, 3][::-1][0:2]\n(x, ...)",
    "s = '_' * 2\ns",  # runtime strings may hold '__': only constants and attributes are checked
    "x = '%(a)s' % {'a': 1}",
    "_ = 1\nfor _ in range(2):\n    _ = _",
    "x = 'ｅｖａｌ' + 'é'\n# ｅｖａｌ in a comment\nprint(x)",
    "x = 'é'\ny = x.upper()\nlen(y)",
    "x = isinstance(1, int)\ny = abs(round(-1.5))\nz = all([any([True])])\n"
    "str(x) + str(y) + str(z)",
    "x = 1e308\ny = 1j\nz = 0x" + "f" * 80,
    "x = path\nx",
    "b'bytes' + b'\\x00'",
]


@pytest.mark.parametrize("source", ACCEPTED)
def test_accepted(source):
    result = validate(source, tools=TOOLS, params=PARAMS)
    assert result.valid and result, result.errors
    assert result.errors == []


def test_calls_and_variables():
    result = validate(
        "x = read_file(path)\nfor i in range(len(x)):\n    y = fs.stat(x)\nprint([z for z in x])\n"
        "w = sorted(x, key=len)\nw.append(1)",
        tools=TOOLS,
        params=PARAMS,
    )
    assert result.valid
    assert result.calls == ["fs.stat", "len", "print", "range", "read_file", "sorted"]
    assert result.variables == ["i", "w", "x", "y"]  # comprehension variables are local


def test_dotted_tools_allow_only_their_members():
    assert validate("fs.read(path)", tools=["fs.read"], params=PARAMS).calls == ["fs.read"]
    assert validate("fs.read(path)", tools=["fs.*"], params=PARAMS).valid
    assert found("fs.read(path)", tools=["fs"]) == [("tool-attribute", 1, 4)]
    assert found("read_file.upper(path)", tools=["read_file"]) == [("tool-attribute", 1, 11)]
    assert found("fs.write(1)", tools=["fs.read"]) == [("unknown-call", 1, 1)]


def test_tools_and_params_accept_a_comma_separated_string():
    assert validate("a(b)\nc(1)", tools="a, c", params="b").valid


def test_errors_are_sorted_by_place():
    result = validate("x = read_file.__x\ny = eval\nz = 2 ** 3", tools=TOOLS)
    assert [(e.line, e.rule) for e in result.errors] == [
        (1, "dunder-attribute"),
        (2, "forbidden-name"),
        (3, "forbidden-operator"),
    ]


def test_forbidden_name_is_not_also_an_unknown_call():
    assert found("eval('1')") == [("forbidden-name", 1, 1)]


def test_columns_count_characters_not_bytes():
    # 'é' is two UTF-8 bytes; the parser's column for `eval` is 13, the character column 12.
    assert found("s = 'éé'; x = eval") == [("forbidden-name", 1, 15)]
    assert found("s = 'é'; x = eval") == [("forbidden-name", 1, 14)]


def test_result_and_error_shapes():
    result = validate("x = eval")
    assert isinstance(result, ValidationResult)
    error = result.errors[0]
    assert isinstance(error, ValidationError)
    assert (
        error.format("p.lackpy")
        == "p.lackpy:1:5: 'eval' is a forbidden name in lackpy [forbidden-name]"
    )
    assert error.to_dict() == {
        "message": "'eval' is a forbidden name in lackpy",
        "rule": "forbidden-name",
        "line": 1,
        "col": 5,
    }
    assert result.to_dict()["valid"] is False
    nowhere = ValidationError("too big", None, None, "limit-source-bytes")
    assert nowhere.format("p") == "p: too big [limit-source-bytes]"
    assert nowhere.to_dict() == {"message": "too big", "rule": "limit-source-bytes"}
    assert ValidationError("m", 3, None, "x").format("p") == "p:3: m [x]"


def test_custom_rule_messages_pairs_and_errors():
    tree_rule_calls = []

    def my_rule(tree):
        tree_rule_calls.append(type(tree))
        return [
            "plain message",
            ("placed message", tree.body[1]),
            ValidationError("own", 9, 9, "own-id"),
        ]

    result = validate("x = 1\ny = 2", rules=[my_rule])
    assert tree_rule_calls == [ast.Module]
    assert [(e.rule, e.message, e.line, e.col) for e in result.errors] == [
        ("my-rule", "plain message", None, None),
        ("my-rule", "placed message", 2, 1),
        ("own-id", "own", 9, 9),
    ]


def test_custom_rules_do_not_run_on_a_tree_over_the_caps():
    ran = []
    validate(
        "x = [1, 2, 3, 4, 5]",
        rules=[lambda tree: ran.append(1) or []],
        limits=ProgramLimits(max_nodes=3),
    )
    assert ran == []


def test_validator_bug_fails_closed(monkeypatch):
    def broken(walker, node, depth):
        raise KeyError("oops")

    monkeypatch.setitem(validator_module._HANDLERS, ast.Assign, broken)
    result = validate("x = 1")
    assert not result.valid
    assert [e.rule for e in result.errors] == ["internal"]


def test_handlers_cover_exactly_the_allowed_nodes():
    walked_by_their_parent = {ast.keyword, ast.comprehension, ast.arguments, ast.arg}
    assert set(validator_module._HANDLERS) | walked_by_their_parent == set(ALLOWED_NODES)


def test_parser_warnings_neither_leak_nor_reject():
    programs = ["x = '\\d'", "x = 1\ny = [0x1for x in [1]]"]
    with warnings.catch_warnings(record=True) as caught:
        assert all(validate(p).valid for p in programs)
    assert not [w for w in caught if issubclass(w.category, SyntaxWarning)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as under `python -W error`, set after import
        assert all(validate(p).valid for p in programs)
        assert found("x = 1abc") == [("syntax", 1, 5)]


def test_limits_reject_bad_values():
    with pytest.raises(ValueError, match="max_depth"):
        ProgramLimits(max_depth=0)
    with pytest.raises(ValueError, match="max_nodes"):
        ProgramLimits(max_nodes="10")


@pytest.mark.parametrize("level", ["lackpy", "extended"])
@pytest.mark.parametrize(
    "program",
    [
        "*0",  # a bare starred expression: the jail's compile failed, seen as `denied`
        "x = [1]\n*x",
        "*a = [1]",
        "y = *[1]",
        "a, *b, *c = [1, 2, 3]",
        "y = sorted([1], key=lambda a, a: a)",
        # accepted, and compile
        "print(*[1], *[2])",
        "a, *b = [1, 2]",
        "*a, = [1]",
        "x = *[1], 2",
        "z = {*[1]}",
        "w = [[1, 2]]\nv = [(a, *b) for a, *b in w]",
        "x = [1, 2]\ny = x[*[0]]",
    ],
)
def test_what_the_validator_passes_compiles(program, level):
    """Starred expressions and parameters the parser takes but Python's compiler refuses
    are syntax errors here, with their place; everything else still compiles."""
    result = validate(program, language=level)
    try:
        compile(program, "<test>", "exec")
    except SyntaxError as exc:
        assert not result.valid
        (error,) = [e for e in result.errors if e.rule == "syntax"]
        assert error.line == exc.lineno
    else:
        assert result.valid or level == "lackpy", result.errors


@pytest.mark.parametrize("program", ["def f(a, a):\n    return a\nf(1, 2)", "f = lambda a, a: a"])
def test_duplicate_parameters_are_a_syntax_error(program):
    result = validate(program, language="extended")
    assert [e.message for e in result.errors] == ["duplicate argument 'a' in function definition"]
