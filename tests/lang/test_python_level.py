"""The python level: what it accepts beyond extended, what stays out, its facade table, and
the validator bugs fixed on the way (at every level)."""

import sys
import timeit

import pytest

from lackjail.lang import LANGUAGES, render, spec, stdlib_names, validate
from lackjail.lang.facades import FACADES, INSTEAD
from lackjail.lang.grammar import DEFINABLE_DUNDERS

TOOLS = ("read_file",)
PARAMS = ("path",)


def rules(source, level="python", **kw):
    kw.setdefault("tools", TOOLS)
    kw.setdefault("params", PARAMS)
    return sorted({e.rule for e in validate(source, language=level, **kw).errors})


ACCEPTED = [
    "import json\nx = json.loads('[1]')",
    "import json as j, re\nx = j.dumps(re.findall('a', 'aa'))",
    "from collections import Counter, defaultdict as dd\nc = Counter('ab')\nd = dd(list)",
    "from __future__ import annotations\ndef f(x: Later) -> Later:\n    return x\n"
    "class Later:\n    pass",
    "class A:\n    n = 0\n    def __init__(self, x):\n        self.x = x\n        A.n += 1\n"
    "    def __repr__(self):\n        return f'A({self.x})'\n    def __eq__(self, o):\n"
    "        return isinstance(o, A) and o.x == self.x\n    __hash__ = None\na = A(1)",
    "class E(ValueError):\n    def __init__(self, m):\n        super().__init__(m)\n        "
    "self.m = m\ntry:\n    raise E('x')\nexcept E as e:\n    y = e.m",
    "from dataclasses import dataclass, field\n@dataclass(frozen=True)\nclass P:\n    x: int\n"
    "    y: list = field(default_factory=list)\np = P(1)",
    "class C:\n    @property\n    def v(self):\n        return self._v\n    @v.setter\n"
    "    def v(self, x):\n        self._v = x\n    @staticmethod\n    def s():\n        return 1\n"
    "    @classmethod\n    def c(cls):\n        return cls()",
    "def deco(f):\n    def inner(*a, **k):\n        return f(*a, **k)\n    return inner\n"
    "@deco\ndef g(x):\n    return x\ng(1)",
    "def counter():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n"
    "        return n\n    return inc",
    "total = 0\ndef add(x):\n    global total\n    total += x\nadd(1)",
    "class M:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n"
    "        return False\nwith M() as m:\n    pass",
    "d = {'a': 1}\ndel d['a']\nx = 1\ndel x",
    "if (n := len([1])) > 0:\n    y = n",
    "def f(**kw):\n    return kw\nx = f(**{'a': 1})",
    "x = (id(1), hash('a'), bytes(2), slice(1, 2), callable(len), issubclass(bool, int))",
    "x = type(1) is int\ny = format(3.14159, '.2f')\nz = object()",
    "t = type\nA = t('A', (), {'x': 1})\nok = isinstance(A, type) and type(A) is type",
    "def init(self):\n    self.v = 1\nB = type('B', (), {'__init__': init, '__doc__': 'd', "
    "'_p': 2})\ny = B()._p + B().v\nC = type(*('C', (B,), {}))",
    "x = 'hi____'\ny = 'a__b'\nz = b'__'",
    "if __name__ == '__main__':\n    print('main')",
    "list = [1]\nid = 3",
    "import json\ntry:\n    json.loads('{')\nexcept (json.JSONDecodeError, KeyError):\n    pass",
    "from typing import Optional, List\ndef f(x: Optional[int] = None) -> List[int]:\n"
    "    return [x]",
    "from enum import Enum, auto\nclass Color(Enum):\n    RED = auto()\nc = Color.RED.name",
    "x: int = 1\ny: list",
    "class P:\n    __slots__ = ('x',)\n    def __init__(self):\n        self.x = 1",
    "import collections\nP = collections.namedtuple('P', 'x y')\np = P(1, 2)._asdict()",
    "import collections\nP = collections.namedtuple('P', 'x')\nq = P._make([1])._replace(x=2)",
    "match [1]:\n    case list(v) if v:\n        n = len(v)\n    case str(s) | bytes(s):\n"
    "        n = 0",
    "from dataclasses import dataclass\n@dataclass\nclass D:\n    _n: int = 0\n"
    "    def _bump(self):\n        return self._n + 1\nx = D()._bump()",
    "def same(a, b):\n    return a._key == b._key\nclass K:\n    def __init__(self):\n"
    "        self._key = 1",
    "x = '{}-{}'.format(1, 2)",
    "import json\njson = {'a': 1}\nx = json.get('a')",
    "class A:\n    def __init__(self):\n        self.__n = 1\n    def __bump(self):\n"
    "        self.__n += 1\n    def __repr__(self):\n"
    "        return f'{self.__class__.__name__}({self.__n})'",
    "def deco(f):\n    name = f.__name__\n    return f\nx = type(1).__name__",
    "class A:\n    pass\nclass B(A):\n    def __init__(self):\n        super(B, self).__init__()",
    "from collections.abc import Iterable, Mapping\nx = isinstance([], Iterable)",
    "print('x', end='', flush=True)",
    "from math import *\nx = sqrt(pi)",
    "__all__ = ['f']\n__version__ = '1.0'\nv = __version__",
    "def f(p):\n    match p:\n        case {'k': v, **rest}:\n            return v\n"
    "        case [a, *others] if a:\n            return others\n"
    "        case int(real=r) | float(real=r):\n            return r\n"
    "        case None:\n            return 0\n        case _:\n            return p",
    "def count(n):\n    i = 0\n    while i < n:\n        got = yield i\n        i += 1\n"
    "    return i\ndef both():\n    yield from count(2)\nx = list(both())",
    'class A:\n    """Implements __eq__ and __hash__ for __main__."""\n    pass',
    "from urllib.parse import urlparse, quote\nx = urlparse('http://a/b').path",
    "import struct, zlib, secrets, html, shlex, calendar, numbers, queue, contextlib\n"
    "with contextlib.suppress(KeyError):\n    x = {}['a']",
    "class P:\n    pass\np = P()\nsetattr(p, 'x', 1)\ny = [getattr(p, 'x'), hasattr(p, 'y')]",
    "v = getattr(1, path, None)",
    "v = list(map(getattr, [1, 2], ['real', 'imag']))",
    "import sys\nv = [sys.maxsize, sys.version_info >= (3, 8), sys.platform, sys.float_info.max]",
    # a text with whitespace is no attribute name or path: an error message, an assert's
    "class E:\n    def __exit__(self, *a):\n        raise RuntimeError('from __exit__')",
    "assert 1 == 1, '__eq__ should hold'",
    "x = ... is Ellipsis",
]
# Accepted at extended too.
BOTH = {"x = '{}-{}'.format(1, 2)", "print('x', end='', flush=True)"}


@pytest.mark.parametrize("source", ACCEPTED)
def test_accepted(source):
    result = validate(source, tools=TOOLS, params=PARAMS, language="python")
    assert result.valid, result.errors


REJECTED = [
    ("import os", "import-module"),
    ("import sys\nx = sys.modules", "module-attribute"),
    ("from sys import argv", "import-name"),
    ("x = 1\nnonlocal x", "syntax"),  # the compiler's error, said before the jail compiles
    ("from pathlib import Path", "import-module"),
    ("import subprocess", "import-module"),
    ("import importlib", "import-module"),
    ("import collections.abc", "import-module"),
    ("def f():\n    from json import *", "misplaced-statement"),
    ("import urllib.parse", "import-module"),
    ("from urllib.request import urlopen", "import-module"),
    ("from contextlib import contextmanager", "import-name"),
    ("from calendar import prmonth", "import-name"),
    ("x = '__init__' + 'x'", "dunder-string"),
    ("from json import codecs", "import-name"),
    ("from typing import get_type_hints", "import-name"),
    ("from functools import singledispatch", "import-name"),
    ("from string import Formatter", "import-name"),
    ("from operator import methodcaller", "import-name"),
    ("from dataclasses import make_dataclass", "import-name"),
    ("from __future__ import braces", "import-name"),
    ("import json\nx = json.__dict__", "dunder-attribute"),
    ("x = 1\ny = x.__class__", "dunder-attribute"),
    ("x = 1\ny = x.__class__.__bases__", "dunder-attribute"),
    ("class A:\n    def f(self):\n        return super().__class__", "dunder-attribute"),
    ("def f():\n    pass\nf.__name__ = 'g'", "dunder-attribute"),
    ("import collections.abc", "import-module"),
    ("x = super(1)", "call-only"),
    ("import json\nx = json.codecs", "module-attribute"),
    ("import typing\nx = typing.sys", "module-attribute"),
    ("import dataclasses\nx = dataclasses.sys", "module-attribute"),
    ("import collections\nx = collections.abc", "module-attribute"),
    ("import operator\nf = operator.attrgetter('x')", "module-attribute"),
    ("import json\ndef f():\n    return json.decoder", "module-attribute"),
    ("import json\njson.loads = len", "module-attribute"),
    ("x = (1).__class__", "dunder-attribute"),
    ("class A:\n    def f(self):\n        return self.__dict__", "dunder-attribute"),
    ("class A:\n    pass\nA.__init__", "dunder-attribute"),
    ("class A:\n    def __getattribute__(self, n):\n        return 1", "dunder-method"),
    ("class A:\n    def __init_subclass__(cls):\n        pass", "dunder-method"),
    ("class A:\n    def __set_name__(self, o, n):\n        pass", "dunder-method"),
    ("class A:\n    def __class_getitem__(cls, i):\n        pass", "dunder-method"),
    ("class A:\n    def __reduce__(self):\n        pass", "dunder-method"),
    ("class A:\n    def __new__(cls):\n        pass", "dunder-method"),
    ("class A:\n    def __get__(self, o, t):\n        pass", "dunder-method"),
    ("class A:\n    __getattr__ = len", "dunder-name"),
    ("def __init__(self):\n    pass", "dunder-name"),
    ("class A(metaclass=abs):\n    pass", "class-keyword"),
    ("class A(object, total=False):\n    pass", "class-keyword"),
    ("x = type('A', (), {'__getattr__': len})", "dunder-method"),
    ("x = type('A', (), {'a': 1, '__init_subclass__': len})", "dunder-method"),
    ("x = type('A', (), {'__module__': 'os'})", "dunder-method"),
    ("x = {'__init__': len}", "dunder-string"),  # a namespace only as type()'s argument
    ("x = type('A', (), {'_.__class__': 1})", "dunder-string"),  # a key, but no name
    ("x = type('A', (), dict(__init__=len))", "dunder-name"),
    ("type = dict\nx = type('a', (), {'__init__': 1})", "dunder-string"),
    ("class M(type):\n    pass", "class-keyword"),
    ("x = [super]", "call-only"),
    ("x = vars()", "forbidden-name"),
    ("x = eval('1')", "forbidden-name"),
    ("x = open('f')", "forbidden-name"),
    ("x = '__class__'", "dunder-string"),
    ("x = '{0.__class__}'", "dunder-string"),
    ("x = 'a.__class__.__base__'", "dunder-string"),
    ("x = b'__import__'", "dunder-string"),
    ("s = 'a'\nx = s.format(1)", "format-attribute"),
    ("x = '{0.real}'.format(1)", "format-attribute"),
    ("x = 'a'.format_map({})", "format-attribute"),
    ("x = (yield 1)", "misplaced-statement"),
    ("f = lambda: (yield)", "misplaced-statement"),
    ("def f():\n    return [(yield x) for x in [1]]", "misplaced-statement"),
    ("class A:\n    yield 1", "misplaced-statement"),
    ("def g():\n    x = yield\n    g.gi_frame", "internal-attribute"),
    ("async def f():\n    pass", "forbidden-node"),
    ("x = 1\nmatch x:\n    case object(__class__=c):\n        pass", "dunder-attribute"),
    ("x = 1\nmatch x:\n    case int(gi_frame=f):\n        pass", "dunder-attribute"),
    ("x = 1\nmatch x:\n    case [read_file]:\n        pass", "rebind-tool"),
    ("__name__ = 'x'", "dunder-name"),
    ("read_file = 1", "rebind-tool"),
    ("path = 1", "rebind-param"),
    ("x = read_file.upper()", "tool-attribute"),
    (
        "try:\n    x = 1\nexcept ValueError as e:\n    y = e.with_traceback(None)",
        "internal-attribute",
    ),
    ("def f():\n    return 1\nx = f.func_globals", "internal-attribute"),
    # getattr, hasattr and setattr: a literal name is checked as the jail checks any name
    ("x = getattr(1, 'f_back', None)", "attribute-name"),
    ("def g():\n    yield 1\nx = hasattr(g(), 'gi_frame')", "attribute-name"),
    ("x = getattr(1, '_private')", "attribute-name"),
    ("x = getattr('{}', 'format')", "attribute-name"),
    ("x = getattr(str, 'mro')", "attribute-name"),
    ("class A:\n    pass\nsetattr(A(), 'with_traceback', 1)", "attribute-name"),
    ("x = getattr((), '__class__')", "dunder-string"),
    ("x = delattr", "forbidden-name"),
    # positional class sub-patterns read __match_args__' names: the self-matching builtins only
    (
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nmatch P(1):\n"
        "    case P(v):\n        pass",
        "dunder-attribute",
    ),
    ("def f(int):\n    match 1:\n        case int(v):\n            pass", "dunder-attribute"),
    (
        "import random\nmatch random.Random():\n    case object(_randbelow=r):\n        pass",
        "dunder-attribute",
    ),
    # a library object's '_x' (never defined by the program), an enum's '_x_' (even if it is)
    ("import random\nx = random.Random()._randbelow(3)", "dunder-attribute"),
    ("from enum import Enum\nX = Enum._convert_('X', 'os', len)", "dunder-attribute"),
    (
        "class A:\n    def _create_(self):\n        pass\nfrom enum import Enum\n"
        "Enum._create_('X')",
        "dunder-attribute",
    ),
]


@pytest.mark.parametrize(("source", "rule"), REJECTED)
def test_rejected(source, rule):
    assert rule in rules(source), rules(source)


def test_a_verdict_names_the_modules_a_run_needs_loaded():
    """What the controller has the zygote load before it lends a child: each facade module
    imported (however spelt), and typing where the program names `type` (`type | None` is
    a typing.Union of the jail's type) unless it bound that name itself."""
    for source, modules in [
        ("x = 1", ()),
        (
            "import json as j, re\nfrom collections.abc import Mapping\nx = j",
            ("collections.abc", "json", "re"),
        ),
        ("from __future__ import annotations\nfrom math import pi", ("__future__", "math")),
        ("def f():\n    import decimal\n    return decimal", ("decimal",)),
        ("x = type(1)", ("typing",)),
        ("def f(c: type | None = None):\n    return c", ("typing",)),
        ("type = len\ntype('ab')", ()),
    ]:
        verdict = validate(source, language="python")
        assert verdict.valid and verdict.modules == modules, (source, verdict)
    assert validate("import os", language="python").modules == ()  # rejected: nothing to load
    assert validate("x = 1", language="extended").modules == ()


def test_a_forbidden_module_names_the_tool_to_use_instead():
    (error,) = validate("import os", language="python").errors
    assert "read_file" in error.message and (error.line, error.col) == (1, 8)
    (error,) = validate("import socket", language="python").errors
    assert "network" in error.message
    (error,) = validate("import xml", language="python").errors
    assert "json" in error.message  # the modules there are


def test_the_levels_below_stay_as_they_were():
    """What python accepts, extended and lackpy still reject (a sample of the new surface)."""
    for source in set(ACCEPTED) - BOTH:
        assert not validate(source, tools=TOOLS, params=PARAMS, language="extended").valid, source
    assert rules("x = 'hi____'", "extended") == ["dunder-string"]
    assert rules("class A:\n    pass", "extended") == ["forbidden-node"]
    assert rules("d = {}\nd.x = 1", "extended") == ["attribute-store"]
    assert rules("x = id(1)", "extended") == ["forbidden-name"]


# What the python level's type(), sys streams and contextvars opened: below it, each is refused
# by the rules that refused it before.
BELOW = [
    ("t = type", {"forbidden-name"}),
    ("A = type('A', (), {'__init__': len})", {"forbidden-name", "dunder-string"}),
    ("x = isinstance(1, type)", {"forbidden-name"}),
    ("import sys\nsys.stdout.write('x')", {"forbidden-name", "forbidden-node"}),
    ("import contextvars", {"forbidden-node"}),
    ("class M(type):\n    pass", {"forbidden-node"}),
]


@pytest.mark.parametrize("level", ["lackpy", "extended"])
@pytest.mark.parametrize(("source", "refused_by"), BELOW)
def test_the_new_surface_stays_out_below_python(level, source, refused_by):
    assert set(rules(source, level)) == refused_by
    assert validate(source, language="python").valid or source.startswith("class M")


# -- the bugs, each at every level -------------------------------------------------


@pytest.mark.parametrize("level", LANGUAGES)
def test_a_set_of_two_starred_items_is_no_internal_error(level):
    """`{*a, *b}` failed with an internal validator error (a set display has no ctx)."""
    assert rules("a = [1]\nb = [2]\nx = {*a, *b}", level) == []
    assert rules("a = [1]\n*x, *y = a", level) == ["syntax"]


@pytest.mark.parametrize("level", LANGUAGES)
def test_a_tools_attribute_is_rejected(level):
    """`read_file.upper(...)` was accepted, and recorded a call of `read_file.upper`."""
    assert rules("x = read_file.upper(path)", level) == ["tool-attribute"]
    assert rules("x = read_file.name", level) == ["tool-attribute"]
    assert rules("x = read_file(path).upper()", level) == []
    result = validate("x = fs.read(1)", tools=["fs.read"], language=level)
    assert result.valid and result.calls == ["fs.read"]
    assert validate("x = fs.anything(1)", tools=["fs.*"], language=level).valid


@pytest.mark.parametrize("level", ["extended", "python"])
def test_with_traceback_is_out_of_reach(level):
    source = "try:\n    x = 1 / 0\nexcept ZeroDivisionError as e:\n    t = e.with_traceback(None)"
    assert rules(source, level) == ["internal-attribute"]


# -- the facade table ---------------------------------------------------------------


def test_the_facade_table_names_public_non_module_names_that_exist():
    """Every name of the table exists in this Python, is public, and is no module; the
    helpers that look attributes up by a runtime string are not in it."""
    import importlib
    import types

    for module, names in FACADES.items():
        real = importlib.import_module(module)
        assert names and len(set(names)) == len(names), module
        for name in names:
            assert not name.startswith("_"), (module, name)
            assert not isinstance(getattr(real, name), types.ModuleType), (module, name)
    assert "attrgetter" not in FACADES["operator"] and "methodcaller" not in FACADES["operator"]
    assert "Formatter" not in FACADES["string"]
    assert (
        "get_type_hints" not in FACADES["typing"] and "singledispatch" not in FACADES["functools"]
    )
    assert FACADES["io"] == ("BytesIO", "StringIO")
    for forbidden in ("os", "subprocess", "socket", "importlib", "pickle", "builtins"):
        assert forbidden not in FACADES and forbidden in INSTEAD
    # sys: what the interpreter is, nothing the process holds; the streams and the recursion
    # limit are the jail's own (the worker's facades wrap them: tests/security/test_facades.py)
    assert set(FACADES["sys"]) <= {
        "byteorder",
        "float_info",
        "hexversion",
        "int_info",
        "maxsize",
        "maxunicode",
        "platform",
        "version",
        "version_info",
        "stdout",
        "stderr",
        "setrecursionlimit",
        "getrecursionlimit",
    }


def test_the_definable_dunders_hold_no_hook_of_lookup_creation_or_finalisation():
    for hook in (
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
        "__dict__",
        "__class__",
    ):
        assert hook not in DEFINABLE_DUNDERS
    assert {"__init__", "__repr__", "__eq__", "__enter__", "__exit__", "__add__"} <= (
        DEFINABLE_DUNDERS
    )


def test_spec_documents_the_python_level():
    data = spec("python")
    assert data["language"] == "python" and "ClassDef" in data["nodes"]
    assert data["modules"]["json"] == list(FACADES["json"])
    assert "__init__" in data["dunder_methods"] and "__getattr__" not in data["dunder_methods"]
    assert "type" in data["builtins"] and "delattr" in data["forbidden_names"]
    assert "getattr" in data["builtins"] and "getattr" in data["summary"]
    text = render(data)
    assert "json: JSONDecodeError" in text and "Dunder methods a class may define" in text
    assert "yield" in data["summary"] and "match" in data["summary"]
    assert spec("extended")["modules"] == {}


# -- cost ---------------------------------------------------------------------------

TWENTY_LINES = """\
words = read_file(path).split()
counts = {}
for w in words:
    counts[w] = counts.get(w, 0) + 1
def top(n):
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:n]
total = 0
i = 0
while i < len(words):
    total += len(words[i])
    i += 1
try:
    ratio = total / len(words)
except ZeroDivisionError:
    ratio = 0.0
best = top(3)
label = f"{len(words)} words, {ratio:.2f} avg"
print(label)
[best, label]
"""


def test_validating_a_twenty_line_program_at_python_costs_about_what_extended_does():
    """The goal is <= 1.2x (measured ~0.95-1.0x). The two levels are timed in turns and the
    best of many turns kept, so a loaded machine slows both alike; the bound leaves room."""
    assert validate(TWENTY_LINES, tools=TOOLS, params=PARAMS, language="python").valid
    best = {"python": float("inf"), "extended": float("inf")}
    for _ in range(15):
        for level in best:
            took = timeit.timeit(
                lambda level=level: validate(
                    TWENTY_LINES, tools=TOOLS, params=PARAMS, language=level
                ),
                number=100,
            )
            best[level] = min(best[level], took)
    ratio = best["python"] / best["extended"]
    print(f"python/extended validation cost: {ratio:.3f}", file=sys.stderr)
    assert ratio < 2.0, ratio


# -- what CPython itself lacks -------------------------------------------------------


def _left_out_now() -> tuple[dict, frozenset]:
    """stdlib_names' LEFT_OUT and NO_FILE as this interpreter's real modules give them."""
    import importlib

    left_out, no_file = {}, set()
    for module, held in FACADES.items():
        real = importlib.import_module(module)
        if module == "__future__" or "__getattr__" in vars(real):
            continue  # `from __future__ import x` is a SyntaxError; __getattr__ makes names up
        if getattr(real, "__file__", None) is None:
            no_file.add(module)
        left_out[module] = frozenset(n for n in dir(real) if n[:1] != "_" and n not in held)
    return left_out, frozenset(no_file)


def test_the_table_of_left_out_names_is_this_interpreters():
    """What the validator knows of the real modules (it cannot import them in the jail) is
    what they hold here; on a difference, the table to paste is printed."""
    left_out, no_file = _left_out_now()
    table = "\n".join(f'    "{m}": "{" ".join(sorted(n))}",' for m, n in left_out.items())
    assert (stdlib_names.LEFT_OUT, stdlib_names.NO_FILE) == (left_out, no_file), (
        f"{table}\nNO_FILE = {sorted(no_file)}"
    )


# At python, a public name the real module lacks too fails at run time as in CPython.
LACKED = [
    "import re\ntry:\n    re.compile('(')\nexcept re.PatternError:\n    pass",
    "import re as r\nx = r.PatternError",
    "import math\nx = math.nothing",
    "from sys import nonexistent",
    "from time import nonexistent as n\nx = n",
    "from itertools import nonexistent",
    "x = __debug__\nassert __debug__ is True",
    "def f():\n    return __debug__",
]
# What CPython would find (the facade leaves it out on purpose), what it names with a file
# path the facade has not, and what binds __debug__, stay rejected.
STILL_REFUSED = [
    ("import random\nx = random._os", "module-attribute"),
    ("import operator\nx = operator.attrgetter", "module-attribute"),
    ("import sys\nx = sys.modules", "module-attribute"),
    ("import calendar\nx = calendar.January", "module-attribute"),  # a module __getattr__
    ("import re\nre.PatternError = 1", "module-attribute"),
    ("from sys import modules", "import-name"),
    ("from re import PatternError", "import-name"),  # CPython's message names re's file
    ("from json import nonexistent", "import-name"),
    ("from __future__ import nonexistent", "import-name"),
    ("__debug__ = 1", "dunder-name"),
    ("def f(__debug__):\n    pass", "dunder-name"),
    ("for __debug__ in []:\n    pass", "dunder-name"),
    ("def f():\n    global __debug__", "dunder-name"),
    ("print(__debug__=1)", "dunder-name"),
]


@pytest.mark.parametrize("source", LACKED)
def test_a_name_cpython_lacks_too_is_left_to_run_time(source):
    assert rules(source) == []


@pytest.mark.parametrize(("source", "rule"), STILL_REFUSED)
def test_a_name_cpython_has_or_a_bound_debug_stays_refused(source, rule):
    assert rule in rules(source), rules(source)


@pytest.mark.parametrize("level", ["lackpy", "extended"])
@pytest.mark.parametrize("source", LACKED + [s for s, _ in STILL_REFUSED])
def test_below_python_what_cpython_lacks_is_refused_as_before(level, source):
    refused = set(rules(source, level))
    assert refused & {"forbidden-node", "dunder-name", "forbidden-name"}, refused
    if source in (LACKED[6], "__debug__ = 1"):  # __debug__ read, or bound
        assert "dunder-name" in refused
