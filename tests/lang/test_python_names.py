"""The python level judges names, imports and handlers as CPython runs them: a name nothing
binds, a module outside the standard library and a relative import are failures at run time
(NameError, ModuleNotFoundError, ImportError), not rejections; a bare except and an exit out
of a finally are allowed. The levels below stay exactly as they were."""

import builtins
import sys

import pytest

from lackjail import lang
from lackjail.checker import Checker
from lackjail.lang import validate
from lackjail.lang.grammar import FORBIDDEN_NAMES, LEVELS
from lackjail.worker import facades, runner

TOOLS = ("read_file",)
PARAMS = ("path",)


def rules(source, level="python", **kw):
    kw.setdefault("tools", TOOLS)
    kw.setdefault("params", PARAMS)
    return sorted({e.rule for e in validate(source, language=level, **kw).errors})


# (program, the rules lackpy and extended reject it by: what they said before these programs
# were the python level's, recorded from that validator); the python level accepts each
NOW_ACCEPTED = [
    ("x = y + 1", ["undefined-name"], ["undefined-name"]),
    ("print(undefined_thing)", ["undefined-name"], ["undefined-name"]),
    ("x = helper(1)", ["unknown-call"], ["undefined-name"]),
    ("del x", ["forbidden-node"], ["forbidden-node"]),
    ("def f():\n    return later\nf()", ["forbidden-node", "unknown-call"], ["undefined-name"]),
    ("import numpy", ["forbidden-node"], ["forbidden-node"]),
    (
        "import numpy as np\nx = np.array([1])",
        ["forbidden-node", "undefined-name"],
        ["forbidden-node", "undefined-name"],
    ),
    (
        "import numpy.linalg\nx = numpy.linalg",
        ["forbidden-node", "undefined-name"],
        ["forbidden-node", "undefined-name"],
    ),
    (
        "from numpy import array as a, zeros\nx = a",
        ["forbidden-node", "undefined-name"],
        ["forbidden-node", "undefined-name"],
    ),
    ("from requests import *", ["forbidden-node"], ["forbidden-node"]),
    ("from . import sibling", ["forbidden-node"], ["forbidden-node"]),
    (
        "from .pkg.mod import name\nx = name",
        ["forbidden-node", "undefined-name"],
        ["forbidden-node", "undefined-name"],
    ),
    (
        "try:\n    import numpy as np\nexcept ImportError:\n    np = None",
        ["forbidden-node"],
        ["except-class", "forbidden-node", "undefined-name"],
    ),
    ("try:\n    x = 1\nexcept:\n    x = 2", ["forbidden-node"], ["except-class"]),
    (
        "try:\n    x = 1\nexcept BaseException:\n    x = 2",
        ["forbidden-node"],
        ["except-class", "undefined-name"],
    ),
    (
        "try:\n    x = 1\nexcept ((ValueError,), (KeyError, TypeError)):\n    x = 2",
        ["forbidden-node"],
        ["except-class"],
    ),
    ("try:\n    x = 1\nexcept 123:\n    x = 2", ["forbidden-node"], ["except-class"]),
    (
        "def f():\n    try:\n        return 1\n    finally:\n        return 2",
        ["forbidden-node"],
        ["finally-exit"],
    ),
    (
        "for i in range(3):\n    try:\n        x = 1\n    finally:\n        break",
        ["forbidden-node"],
        ["finally-exit"],
    ),
    (
        "for i in range(3):\n    try:\n        x = 1\n    finally:\n        continue",
        ["forbidden-node"],
        ["finally-exit"],
    ),
    ("raise SystemExit(3)", ["forbidden-node"], ["undefined-name"]),
]


@pytest.mark.parametrize(("source", "lackpy", "extended"), NOW_ACCEPTED)
def test_the_python_level_accepts_what_cpython_runs(source, lackpy, extended):
    assert rules(source) == []
    # the levels below reject it as they always did, by the same rules
    assert rules(source, "lackpy") == lackpy
    assert rules(source, "extended") == extended


STILL_REJECTED = [
    ("x = eval('1')", "forbidden-name"),
    ("x = open('f')", "forbidden-name"),
    ("x = vars()", "forbidden-name"),
    ("x = globals()", "forbidden-name"),
    ("x = exec", "forbidden-name"),
    ("x = __import__('os')", "forbidden-name"),
    ("x = __builtins__", "forbidden-name"),
    ("x = __build_class__", "forbidden-name"),
    ("x = __loader__", "forbidden-name"),
    ("__debug__ = 1", "dunder-name"),  # read, __debug__ is CPython's constant True
    ("x = __spam__", "dunder-name"),
    # importable names that are forbidden unless the program imports them
    ("x = compile('a')", "forbidden-name"),
    ("x = reduce", "forbidden-name"),
    ("x = sys.argv", "forbidden-name"),
    ("def f():\n    return compile\nf()", "forbidden-name"),
    ("def f():\n    import sys\nx = sys", "forbidden-name"),
    # the standard library's refused modules stay refused, with what to use instead
    ("import os", "import-module"),
    ("import subprocess", "import-module"),
    ("import builtins", "import-module"),
    ("import importlib", "import-module"),
    ("import _thread", "import-module"),
    ("import xml.etree", "import-module"),
    ("from os import path", "import-module"),
    ("from __future__ import braces", "import-name"),
    ("from numpy import eval", "forbidden-name"),
    ("import numpy as __x__", "dunder-name"),
    ("from . import __spam__", "dunder-name"),
    ("def f():\n    from numpy import *", "misplaced-statement"),
]


@pytest.mark.parametrize(("source", "rule"), STILL_REJECTED)
def test_forbidden_names_and_modules_stay_rejected(source, rule):
    assert rule in rules(source), rules(source)


def test_an_unbound_importable_forbidden_name_says_which_import_binds_it():
    for source, fix in (
        ("x = compile('a')", "from re import compile"),
        ("x = sys.maxsize", "import sys"),
        ("x = reduce", "from functools import reduce"),
    ):
        (error,) = validate(source, language="python").errors
        assert error.rule == "forbidden-name" and error.message.endswith(fix), error
    assert validate("import sys\nx = sys.maxsize", language="python").valid
    assert validate("def f():\n    return compile\nfrom re import compile", language="python")


def test_a_refused_module_names_what_to_use_instead():
    (error,) = validate("import subprocess", language="python").errors
    assert "no other process" in error.message and (error.line, error.col) == (1, 8)
    (error,) = validate("import pathlib", language="python").errors
    assert "read_file" in error.message


def test_only_the_modules_outside_the_standard_library_are_accepted():
    for module in sorted(sys.stdlib_module_names):
        if module in lang.LEVELS["python"].builtins:
            continue
        source = f"import {module}"
        assert validate(source, language="python").valid == (
            module in facades.FACADES and module != "__future__"
        ), module


def test_the_jails_builtins_hold_no_name_the_validator_refuses():
    """A name nothing binds is looked up in the run's builtins when the program reaches it:
    they must hold nothing the forbidden-name rule refuses (only the level's builtins and
    exception classes, and the two dunder hooks no program can spell)."""
    level = LEVELS["python"]
    names = set(runner.PYTHON_BUILTINS)
    assert names - set(level.builtins) - set(level.exceptions) == {
        "__build_class__",
        "__import__",
    }
    # of the names the forbidden-name rule knows, only those the level allows and the hooks
    assert names & FORBIDDEN_NAMES - set(level.builtins) == {"__build_class__", "__import__"}
    assert names & level.forbidden_names == {"__build_class__", "__import__"}
    # the run's own module starts with its dunders only
    assert all(n[:2] == "__" for n in runner._namespace("python"))
    # every builtin of CPython is the level's, a forbidden name, or spelt with '__'
    for name in dir(builtins):
        if name in ("True", "False", "None"):
            continue
        assert (
            name in level.builtins
            or name in level.exceptions
            or name in FORBIDDEN_NAMES
            or name[:2] == "__"
        ), name


def test_calls_stay_within_the_callables_when_names_are_unbound():
    result = validate(
        "x = helper(1)\ny = read_file(path)\nz = len(x)",
        tools=TOOLS,
        params=PARAMS,
        language="python",
    )
    assert result.valid and result.calls == ["len", "read_file"]


def test_a_session_reads_what_an_earlier_run_bound():
    assert not validate("x = compile", language="python").valid
    assert validate("x = compile", language="python", defined=("compile",)).valid
    # nothing forbidden is let in as defined, at any level
    assert not validate("x = eval", language="python", defined=("eval",)).valid


def test_a_tool_of_another_kit_is_named_before_the_run():
    """The Checker hints at a bundled kit's tool the program reads unbound: at the python level
    that is rejected before anything runs (a half-run program may have called tools)."""
    (error,) = Checker(language="python").check("x = read_file('a')").errors
    assert error.rule == "undefined-name"
    assert error.message.endswith("the bundled kit 'readonly' has it"), error.message
    assert Checker(language="python").check("x = nothing_like_a_tool(1)").valid
    assert Checker(language="python", kit=["read_file"]).check("x = read_file('a')").valid


def test_no_higher_level_is_named_for_a_name_nothing_binds():
    checker = Checker(language="extended")
    (error,) = checker.check("x = y + 1").errors
    assert error.rule == "undefined-name" and "language=" not in error.message
    (error,) = checker.check("try:\n    x = 1\nexcept:\n    x = 2").errors
    assert error.message.endswith("accepted with language='python'"), error.message


def test_the_importer_answers_as_cpython_where_a_module_is_not_installed():
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'numpy'$") as caught:
        facades.importer("numpy", {}, {}, ("array",), 0)
    assert caught.value.name == "numpy"
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'a'$"):
        facades.importer("a.b.c", {}, {}, None, 0)
    # the jail's own packages are loaded in the process, and never handed out
    for name in ("msgpack", "lackjail", "lackjail.worker.runner"):
        assert name in sys.modules
        with pytest.raises(ModuleNotFoundError):
            facades.importer(name, {}, {}, None, 0)
    message = "^attempted relative import with no known parent package$"
    with pytest.raises(ImportError, match=message):
        facades.importer("", {}, {}, ("x",), 1)
    with pytest.raises(ImportError, match=message):
        facades.importer("json", {}, {}, ("loads",), 2)


def test_every_forbidden_name_says_what_to_write_instead_at_the_python_level():
    for name in sorted(LEVELS["python"].forbidden_names):
        if name[:2] == "__":
            continue  # nothing replaces a dunder hook
        (error,) = validate(f"x = {name}", language="python").errors
        head = f"{name!r} is a forbidden name in the python level: "
        assert error.message.startswith(head) and len(error.message) > len(head) + 8, error
    # the levels below keep their words
    (error,) = validate("x = eval", language="extended").errors
    assert error.message == "'eval' is a forbidden name in the extended level"


def test_an_imported_name_is_spelt_in_ascii_where_it_stands():
    for source in (
        "import json as x",
        "import numpy as np",
        "from json import loads as l",
        "from json import (loads as\n  l)",
        "from numpy import array as a, zeros",
    ):
        assert validate(source + "\n# é", language="python").valid, source
    for source in (
        "import json as ｊ",
        "from json import loads as ｌ",
        "import ｊson",
        "import numpy as ｎp",
    ):
        (error,) = validate(source, language="python").errors
        assert error.rule == "non-ascii-identifier", source
