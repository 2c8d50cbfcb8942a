"""Regression tests: known sandbox-escape classes, each rejected by the rule that closes it."""

import ast
import time

import pytest

from lackjail.lang import ProgramLimits, decode_source, validate
from lackjail.lang import validator as validator_module

TOOLS = ("read_file", "fs.*")
PARAMS = ("path",)


def rules_of(source, **kw):
    result = validate(source, **{"tools": TOOLS, "params": PARAMS, **kw})
    assert not result.valid, f"accepted: {source[:200]!r}"
    return {e.rule for e in result.errors}


def assert_rejected(source, rule, **kw):
    assert rule in rules_of(source, **kw)


DUNDER_CHAINS = [
    "().__class__.__bases__[0].__subclasses__()",
    "x = [].__class__.__mro__[-1]",
    "read_file.__globals__",
    "len.__self__",
    "print.__self__.eval",
    "x = path.__class__.__init__.__globals__",
    "x = (1).__class__.__base__",
    "sorted(x, key=lambda a: a.__class__)",
    "f'{path.__class__}'",
    "x = path._private",
]


@pytest.mark.parametrize("source", DUNDER_CHAINS)
def test_dunder_chains(source):
    assert_rejected(source, "dunder-attribute")


NAMESPACE_GRABS = [
    ("getattr(path, 'upper')", "forbidden-name"),
    ("type(path)", "forbidden-name"),
    ("vars()", "forbidden-name"),
    ("globals()", "forbidden-name"),
    ("locals()", "forbidden-name"),
    ("dir(path)", "forbidden-name"),
    ("hasattr(path, 'x')", "forbidden-name"),
    ("eval('1')", "forbidden-name"),
    ("exec('x = 1')", "forbidden-name"),
    ("compile('1', 'f', 'eval')", "forbidden-name"),
    ("open('/etc/passwd')", "forbidden-name"),
    ("__import__('os')", "forbidden-name"),
    ("x = __builtins__", "forbidden-name"),
    ("breakpoint()", "forbidden-name"),
    ("x = object", "forbidden-name"),
    ("f'{__import__}'", "forbidden-name"),
    ("[eval][0]('1')", "call-target"),
    ("x = str.mro()[-1]", "internal-attribute"),
    ("x = int.mro", "internal-attribute"),
]


@pytest.mark.parametrize("source, rule", NAMESPACE_GRABS)
def test_getattr_type_vars_and_friends(source, rule):
    assert_rejected(source, rule)


def test_format_string_built_at_run_time():
    # The reported exploit: every piece passes the AST rules except the `.format` attribute.
    assert rules_of("u = '_' * 2\n('{0.' + u + 'globals' + u + '}').format(read_file)") == {
        "format-attribute"
    }
    assert rules_of("t = '{0.x}'\nf = t.format_map") == {"format-attribute"}
    assert rules_of("str.format('{0.x}', path)") == {"format-attribute"}
    assert_rejected("b'{0.__self__}'.decode().format(len)", "dunder-string")
    assert_rejected("b'{0.__self__}'.decode().format(len)", "format-attribute")


RUNTIME_UNDERSCORES = [
    "u = '%c' % 95",
    "u = f'{95:c}'",
    "u = '--'.translate({45: 95})",
    "u = (24415).to_bytes(2, 'big').decode()",
    "u = '_' * 2",
    "u = list(dict(a=1))[0].upper()",
]


@pytest.mark.parametrize("builder", RUNTIME_UNDERSCORES)
def test_underscores_built_at_run_time_reach_no_attribute(builder):
    # Building '__' at run time is possible and harmless on its own...
    assert validate(builder).valid
    # ...because no path turns a run-time string into an attribute lookup.
    for use in [
        "x = ('{0.' + u + 'class' + u + '}').format(1)",
        "x = ('{0.' + u + '}').format_map({})",
        "x = getattr(1, u)",
        "x = vars(1)[u]",
    ]:
        assert not validate(builder + "\n" + use).valid, use


ESCAPED_DUNDER_CONSTANTS = [
    "x = '__'",
    "x = '_' '_'",
    "x = '\\x5f\\x5f'",
    "x = '\\N{LOW LINE}_'",
    "x = '_\\u005f'",
    "x = b'\\x5f_'",
    "x = rb'__'",
    "x = f'__{path}'",
    "x = f'{path:__>5}'",
]


@pytest.mark.parametrize("source", ESCAPED_DUNDER_CONSTANTS)
def test_dunder_constants_however_spelt(source):
    assert_rejected(source, "dunder-string")


REBINDINGS = [
    ("len = read_file\nlen(path)", "rebind-builtin"),
    ("len = str.mro()[-1]\nlen()", "rebind-builtin"),
    ("len, = [read_file]\nlen(path)", "rebind-builtin"),
    ("a, *len = [1, read_file]\nlen[0](path)", "rebind-builtin"),
    ("for len in [read_file]:\n    len(path)", "rebind-builtin"),
    ("x = [len(path) for len in [read_file]]", "rebind-builtin"),
    ("x = {len: len(path) for len in [read_file]}", "rebind-builtin"),
    ("x = sorted([path], key=lambda len: len(path))", "rebind-builtin"),
    ("print += 1", "rebind-builtin"),
    ("read_file = print\nread_file(path)", "rebind-tool"),
    ("fs = 1", "rebind-tool"),
    ("path = '/etc/shadow'", "rebind-param"),
    ("for path in ['/etc/shadow']:\n    read_file(path)", "rebind-param"),
    ("x = sorted([path], key=[read_file][0])", "key-argument"),
    ("x = max([1], key=str.mro()[-1])", "key-argument"),
    ("x = sorted([1], key=lambda a, f=read_file: f(a))", "lambda-args"),
    ("x = max([1], **{'key': [read_file][0]})", "kwargs-argument"),
    ("f = read_file\nf(path)", "unknown-call"),
    ("x = (len := read_file)", "forbidden-node"),
]


@pytest.mark.parametrize("source, rule", REBINDINGS)
def test_rebinding(source, rule):
    assert_rejected(source, rule)


def test_rebinding_cannot_hide_a_tool_call_from_the_call_list():
    result = validate("len = read_file\nlen(path)", tools=TOOLS, params=PARAMS)
    assert not result.valid
    # A key= tool is called by the builtin: it shows in the call list.
    assert (
        "read_file" in validate("sorted([path], key=read_file)", tools=TOOLS, params=PARAMS).calls
    )


FRAME_ATTRIBUTES = [
    "gi_frame",
    "gi_code",
    "gi_yieldfrom",
    "f_globals",
    "f_back",
    "f_builtins",
    "f_locals",
    "f_code",
    "tb_frame",
    "tb_next",
    "co_code",
    "co_consts",
    "cr_frame",
    "cr_code",
    "cr_await",
    "ag_frame",
    "ag_code",
    "func_globals",
    "mro",
]


@pytest.mark.parametrize("attr", FRAME_ATTRIBUTES)
def test_frame_generator_code_traceback_attributes(attr):
    assert rules_of(f"x = path.{attr}") == {"internal-attribute"}


@pytest.mark.parametrize(
    "attr",
    [
        "__self__",
        "__traceback__",
        "__code__",
        "__closure__",
        "__globals__",
        "__dict__",
        "__getattribute__",
        "__reduce_ex__",
    ],
)
def test_dunder_internals(attr):
    assert rules_of(f"x = path.{attr}") == {"dunder-attribute"}


def test_generator_frames_are_unreachable():
    assert rules_of("x = (a for a in [1]).gi_frame.f_back.f_globals") == {
        "forbidden-node",
        "internal-attribute",
    }


LOOKALIKE_IDENTIFIERS = [
    ("ｅｖａｌ('1')", "forbidden-name"),  # fullwidth
    ("𝐞𝐯𝐚𝐥('1')", "forbidden-name"),  # mathematical bold
    ("𝓰𝓮𝓽𝓪𝓽𝓽𝓻(path, 'x')", "forbidden-name"),  # mathematical script
    ("x = ﬁlter", "forbidden-name"),  # ligature
    ("x = path.__ｃlass__", "dunder-attribute"),
    ("x = path.ｆｏｒｍａｔ", "format-attribute"),
    ("ｌｅｎ = read_file", "rebind-builtin"),
    ("x = ᵖath", None),
]


@pytest.mark.parametrize("source, also", LOOKALIKE_IDENTIFIERS)
def test_non_ascii_identifiers(source, also):
    found = rules_of(source)
    assert "non-ascii-identifier" in found
    if also:
        assert also in found  # what Python would have seen after NFKC normalisation


def test_non_ascii_text_outside_identifiers_is_fine():
    assert validate("x = 'ｅｖａｌ 𝐞𝐯𝐚𝐥'  # ｅｖａｌ\nprint(x)").valid


DECLARATIONS = [
    b"# coding: utf-7\nx = '+ACcAOw-eval(1)+ADsAJw-'\n",  # under utf-7: x = '';eval(1);''
    b"# -*- coding: latin-1 -*-\nx = 1\n",  # emacs
    b"# vim: set fileencoding=utf-7 :\nx = 1\n",  # vim
    b"#!/usr/bin/env python3\n# -*- coding: utf-7 -*-\nx = 1\n",  # line 2
    b"\xef\xbb\xbf# coding: utf-7\nx = '+AF8AXw-'\n",  # after a BOM
    b"\xef\xbb\xbf\n# coding=utf-8\nx = 1\n",  # after a BOM, line 2, even utf-8
    b" \t\x0c#coding:utf-7\r\nx = 1\r\n",  # blanks and form feed before '#', CRLF
    b"\r# coding: utf-7\rx = 1\r",  # old Mac line ends: line 2
    b"#!python\n#This Python file uses the following encoding: latin-1\nx = 1",  # PEP 263's own
]


@pytest.mark.parametrize("raw", DECLARATIONS)
def test_every_encoding_declaration_form_is_rejected(raw):
    assert rules_of(raw) == {"encoding-declaration"}
    assert rules_of(raw.decode("utf-8")) == {"encoding-declaration"}
    with pytest.raises(ValueError, match="encoding declaration"):
        decode_source(raw)


def test_every_declaration_python_honours_is_rejected():
    import io
    import tokenize

    honoured = 0
    for raw in DECLARATIONS:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError:  # a BOM with another declared encoding: Python refuses it too
            continue
        if encoding not in ("utf-8", "utf-8-sig"):
            honoured += 1
            assert not validate(raw).valid, raw
    assert honoured >= 5


@pytest.mark.parametrize(
    "source",
    [
        "x = 1  # coding: utf-7\n",  # not a comment line: no declaration
        "x = 1\ny = 2\n# coding: utf-7\n",  # line 3: never a declaration
        "# encoding is UTF-8, always\nx = 1\n",
        "x = 'coding: utf-7'\n",
    ],
)
def test_coding_words_elsewhere_are_fine(source):
    assert validate(source).valid


def test_bytes_are_utf8_whatever_a_comment_says():
    assert rules_of(b"# a comment\nx = '\xe9'") == {"encoding"}
    assert validate(b"\xef\xbb\xbfx = 1").valid
    assert decode_source(b"\xef\xbb\xbfx = 1") == "x = 1"


def test_nul_and_undecodable_bytes():
    assert rules_of(b"x = 1\x00") == {"nul-byte"}
    assert rules_of("x = '\x00'") == {"nul-byte"}
    assert rules_of(b"x = '\xc3'") == {"encoding"}
    with pytest.raises(ValueError, match="NUL"):
        decode_source(b"\x00")


BIG = ProgramLimits(max_source_bytes=10**7)


def timed(source, **kw):
    """Validate SOURCE; the CPU seconds it took (not wall time: a loaded machine must not
    fail a bound meant for runaway work)."""
    started = time.process_time()
    result = validate(source, **kw)
    return result, time.process_time() - started


@pytest.mark.parametrize(
    "source",
    [
        "x = " + "-" * 200000 + "1",
        "x = " + " + ".join(["1"] * 100000),
        "x = " + "not " * 100000 + "1",
        "x = " + "(" * 100000 + ")" * 100000,
        "x = a" + ".b" * 100000,
        "x = f" + "()" * 100000,
    ],
)
def test_pathological_inputs_never_raise(source):
    for limits in (None, BIG):  # rejected by size by default; by the parser or the walk without it
        result, seconds = timed(source, limits=limits)
        assert not result.valid
        assert seconds < 5
    assert {e.rule for e in validate(source).errors} == {"limit-source-bytes"}
    assert validate(source, limits=BIG).errors[0].rule in {"limit-parse", "limit-depth", "syntax"}


def test_deep_nesting_under_the_size_cap():
    for source in [
        "x = a" + ".b" * 2000,
        "x = " + "-" * 2000 + "1",
        "x = " + "+".join(["1"] * 2000),
    ]:
        assert rules_of(source) & {"limit-depth", "limit-parse"}
    blocks = "x = 1\n" + "".join(" " * i + "if x:\n" for i in range(60)) + " " * 60 + "y = 1\n"
    assert validate(blocks).valid
    assert rules_of(blocks, limits=ProgramLimits(max_depth=50)) == {"limit-depth"}


def test_huge_literals():
    assert rules_of("x = '" + "a" * 40000 + "'") == {"limit-literal-len"}
    assert rules_of("x = '" + "é" * 33000 + "'") == {
        "limit-source-bytes"
    }  # 33000 chars, 66000 bytes
    assert rules_of("x = [" + "0," * 25000 + "]") == {"limit-nodes"}
    assert rules_of(
        "x = [" + "0," * 20000 + "]", limits=ProgramLimits(max_literal_len=10_000, max_nodes=50_000)
    ) == {"limit-literal-len"}
    assert rules_of("x = " + "9" * 5000) == {"limit-int-digits"}
    assert rules_of("x = " + "9" * 101) == {"limit-int-digits"}
    assert validate("x = " + "9" * 100).valid
    assert rules_of("x = 'a'\n" * 20000) == {"limit-source-bytes"}


def test_thirty_nested_comprehensions_rejected_quickly_without_compiling(monkeypatch):
    flags_seen = []
    real_compile = compile

    def spy(source, filename, mode, flags=0, *args, **kw):
        flags_seen.append(flags)
        return real_compile(source, filename, mode, flags, *args, **kw)

    monkeypatch.setattr(validator_module, "compile", spy, raising=False)
    source = (
        "b = [1]\nx = " + "[" * 30 + "1" + " for a in b]" * 30
    )  # compile() of this dies with SIGSEGV on 3.12.1
    result, seconds = timed(source)
    assert {e.rule for e in result.errors} == {"limit-comprehension-depth"}
    assert seconds < 0.5
    assert flags_seen and all(f & ast.PyCF_ONLY_AST for f in flags_seen)  # parsed, never compiled


def test_nested_lambdas_count_as_comprehension_nesting():
    source = "a = [1]\nx = " + "sorted(a, key=lambda a: " * 10 + "a" + ")" * 10
    assert rules_of(source) == {"limit-comprehension-depth"}
