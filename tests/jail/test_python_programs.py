"""The python level against plain CPython: sixty programs of the kind agents write (classes,
dataclasses, json, re, collections, closures, with, comprehensions, exceptions), each run in
the real jail and in this interpreter; the outcome, value, output and exception must agree."""

import ast
import contextlib
import io
import sys
import types
from pathlib import Path

import pytest

from lackjail import lang, plain
from lackjail.api import Jail

PROGRAMS = sorted((Path(__file__).parent / "python_programs").glob("*.lackpy"))


def reference(source: str) -> dict:
    """SOURCE run by plain CPython as a script (`__main__`), its last expression kept."""
    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        tree.body[-1] = ast.Assign([ast.Name("_value_", ast.Store())], last.value)
        ast.copy_location(tree.body[-1], last)
        ast.fix_missing_locations(tree)
    module = types.ModuleType("__main__")
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = module
    out = io.StringIO()
    status, value, error = "ok", None, None
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(tree, "<program>", "exec"), module.__dict__)
        value = plain.copy(module.__dict__.get("_value_"), "v", 1 << 24, lenient=True)
    except Exception as exc:
        status, error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        sys.modules["__main__"] = saved
    return {"status": status, "value": value, "output": out.getvalue(), "error": error}


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(workers=1, language="python") as j:
        yield j


def test_the_corpus_is_sixty_programs():
    assert len(PROGRAMS) == 60


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_the_jail_gives_what_cpython_gives(jail, path):
    source = path.read_text()
    check = lang.validate(source, language="python")
    assert check.valid, [e.to_dict() for e in check.errors]
    want = reference(source)
    got = jail.run(source)
    assert got.isolation == "nsjail"
    assert got.status == want["status"], (got.status, got.errors, want)
    assert got.output == want["output"]
    if want["status"] == "ok":
        assert got.value == want["value"]
    else:
        assert got.errors[0]["message"] == want["error"], (got.errors, want["error"])
