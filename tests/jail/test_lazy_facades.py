"""The python level's zygote loads a module of its standard library the first time a program
imports it (a child cannot import): a program that imports nothing forks from a zygote that
holds none, the first import of a module in a jail has the zygote load it before a child is
lent, and the spares forked after have it. What a jail's zygote maps is read from /proc."""

import ast
import hashlib
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import psutil
import pytest

from lackjail import protocol
from lackjail.api import Jail
from lackjail.policy import load_policy
from lackjail.pool import isolation
from lackjail.pool.jail_process import JailDied, JailProcess, wait_fd

ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def jail(require_nsjail):
    with Jail(workers=1, language="python") as j:
        yield j


def _idle(jail) -> JailProcess:
    """The pool's one jail, idle (what the next run borrows)."""
    assert jail.pool.wait_full()
    (process,) = jail.pool._idle
    return process


def _maps(process: JailProcess) -> set:
    """The file names the jail's zygote maps (nsjail's first child, the zygote)."""
    proc = psutil.Process(process.pid)
    zygote = proc if "python" in proc.name() else proc.children()[0]
    return {os.path.basename(m.path) for m in zygote.memory_maps(grouped=True)}


def _has(maps: set, stem: str) -> bool:
    return any(name.startswith(stem + ".") for name in maps)


def _wait_spares(process: JailProcess, modules, count=2, timeout=20.0, pump=False) -> None:
    """Until COUNT ready children that have MODULES are adopted: read by the pool's
    supervisor while the jail is idle, or here (PUMP) for a jail of the test's own."""
    deadline = time.monotonic() + timeout
    while process.ready_count(modules) < count:
        assert time.monotonic() < deadline, "no spares ready in time"
        if pump:
            process.pump(set(process.watch_fds()))
        time.sleep(0.01)


def test_a_module_is_loaded_the_first_time_a_program_imports_it(jail):
    assert jail.run("x = 1\nx").value == 1
    process = _idle(jail)
    assert process.modules == frozenset() and process.loads == 0
    assert not _has(_maps(process), "_decimal")  # the zygote imported no facade's module
    r = jail.run("import decimal\nstr(decimal.Decimal('1.1') + 1)")
    assert (r.status, r.value) == ("ok", "2.1"), r.errors
    process = _idle(jail)
    assert "decimal" in process.modules and process.loads == 1
    assert _has(_maps(process), "_decimal")
    _wait_spares(process, ["decimal"])  # the spares forked after the load have it ...
    again = jail.run("from decimal import Decimal\nstr(Decimal(2) / 4)")
    assert (again.status, again.value) == ("ok", "0.5"), again.errors
    assert _idle(jail).loads == 1  # ... and a module is loaded once per jail
    plain = jail.run("len('abc')")  # a program that imports nothing runs there too
    assert (plain.status, plain.value) == ("ok", 3), plain.errors


def test_a_run_importing_several_modules_gets_a_child_that_has_them_all(jail):
    r = jail.run(
        "import json, hashlib\nfrom collections import Counter\n"
        "[json.dumps(Counter('abca').most_common(1)), hashlib.sha256(b'x').hexdigest()[:6]]"
    )
    digest = hashlib.sha256(b"x").hexdigest()[:6]
    assert (r.status, r.value) == ("ok", ['[["a", 2]]', digest]), r.errors
    assert {"json", "hashlib", "collections"} <= _idle(jail).modules
    # type | None builds a typing.Union of the jail's type: a program naming type gets typing
    r = jail.run("def f(cls: type | None = None):\n    return cls\nf(int) is int")
    assert (r.status, r.value) == ("ok", True), r.errors
    assert "typing" in _idle(jail).modules


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("from collections import Counter\nCounter('abca').most_common(1)", [["a", 2]]),
        (  # HtmlDiff's helper imports re inside it
            "import difflib\n'<table' in difflib.HtmlDiff().make_table(['a'], ['b'])",
            True,
        ),
        (  # a runtime-checkable protocol reads attributes with inspect.getattr_static
            "from typing import Protocol, runtime_checkable\n@runtime_checkable\n"
            "class HasSize(Protocol):\n    def size(self) -> int: ...\n"
            "class A:\n    def size(self):\n        return 1\n"
            "[isinstance(A(), HasSize), isinstance(1, HasSize)]",
            [True, False],
        ),
        (
            "from fractions import Fraction\nfrom decimal import Decimal\n"
            "str(Fraction(Decimal('0.5')))",
            "1/2",
        ),
    ],
)
def test_what_a_modules_functions_import_inside_them_is_loaded_with_it(jail, source, value):
    """A child cannot import: what a loaded module's functions import when first called (a
    module of the table, or typing's inspect) is loaded with it, as it was in a zygote
    that loaded every module."""
    r = jail.run(source)
    assert (r.status, r.value) == ("ok", value), r.errors


def _zygote(python_level=True) -> tuple:
    launcher = isolation.nsjail_launcher(
        isolation.zygote_config(
            load_policy("default").limits, "fresh", 1, python_level=python_level
        )
    )
    process = JailProcess(launcher, 1, protocol.MAX_FRAME)
    process.wait_ready_child(time.monotonic() + 30)
    return launcher, process


def _loaded(process: JailProcess, token: int, modules: list) -> dict:
    """Send a `load` frame of MODULES, as is, and read the zygote's answer."""
    process.send_ctrl(protocol.make_load(token, modules))
    deadline = time.monotonic() + 30
    while True:
        assert wait_fd(process.ctrl.fileno(), select.POLLIN, deadline), "no answer to the load"
        for frame in process.pump_ctrl():
            if frame["t"] == "loaded" and frame["id"] == token:
                return frame


@pytest.mark.nsjail
def test_a_load_of_a_module_outside_the_table_is_refused_and_the_zygote_lives(require_nsjail):
    launcher, process = _zygote()
    try:
        for token, names in enumerate((["os"], ["json", "importlib"], [5], ["json.decoder"])):
            answer = _loaded(process, token + 1, names)
            assert answer["loads"] == 0, answer
            assert answer["error"].startswith("not a module of the python level"), answer
        assert process.answers_ping(time.monotonic() + 10)
        with pytest.raises(JailDied, match="not a module of the python level: 'os'"):
            process.load(["os"], time.monotonic() + 10)
        process.load(["json"], time.monotonic() + 30)  # nothing of the refused ones was loaded
        assert process.loads == 1 and process.modules == {"json"}
        assert not _has(_maps(process), "_hashlib")
        _wait_spares(process, ["json"], pump=True)
    finally:
        process.kill()
        launcher.close()


@pytest.mark.nsjail
def test_a_zygote_below_the_python_level_loads_nothing(require_nsjail):
    launcher, process = _zygote(python_level=False)
    try:
        answer = _loaded(process, 1, ["json"])
        assert answer == {
            "t": "loaded",
            "id": 1,
            "loads": 0,
            "error": "this jail does not serve the python level",
        }
        assert process.answers_ping(time.monotonic() + 10)
    finally:
        process.kill()
        launcher.close()


def test_in_reuse_mode_a_run_that_needs_a_module_goes_to_a_child_that_has_it(require_nsjail):
    with Jail(workers=1, language="python", mode="reuse") as jail:
        first = jail.run("x = 2\nx")
        second = jail.run("import json\njson.loads('[1, 2]')")
        third = jail.run("import textwrap\ntextwrap.fill('a b c', 3)")
        fourth = jail.run("x = 4\nx")
        outcomes = [(r.status, r.value) for r in (first, second, third, fourth)]
        assert outcomes == [("ok", 2), ("ok", [1, 2]), ("ok", "a b\nc"), ("ok", 4)]
        assert {"json", "textwrap"} <= _idle(jail).modules


def test_a_sessions_jail_loads_every_module_at_its_start(jail):
    with jail.session() as session:
        process = session._jail_of_its_own.jail
        assert _has(_maps(process), "_decimal") and _has(_maps(process), "_json")
        first = session.run("import json\nd = json.loads('[1]')")
        second = session.run("import decimal, csv, io\nstr(decimal.Decimal(d[0]) + 1)")
        assert first.status == "ok" and (second.status, second.value) == ("ok", "2")
        assert process.loads == 0  # nothing was asked of its zygote: it had them all


# zygote.main() at the python level in a plain process, its process work left out: what it
# holds when it starts serving.
START = """
import os, sys
sys.path[:0] = PATH
from lackjail.worker import facades, zygote
class Zygote:
    def __init__(self, cfg, flt):
        self.children = {}
    def fork(self):
        pass
    def answer(self, timeout):
        return True
    def serve(self):  # a python-level warm-up leaves sys.stdout the runner's: descriptor 1
        os.write(1, f"{sorted(facades.MODULES)!r}\\n".encode())
        os.write(1, f"{[m for m in WATCHED if m in sys.modules]!r}\\n".encode())
zygote.Zygote = Zygote
zygote.FIRST_RUN_S = 0.01
sys.argv[1:] = [repr({"memory_mb": 512, "cpu_s": 5, "output_bytes": 1 << 20,
    "value_bytes": 1 << 20, "runs_per_child": 1, "spares": 2, "seccomp": False, "bpf": b"",
    "python": True, "load_all": LOAD_ALL})]
zygote.main()
"""
WATCHED = ("json", "re", "decimal", "typing", "hashlib", "random", "dataclasses", "enum")


@pytest.mark.parametrize("load_all", [False, True])
def test_a_python_level_zygote_starts_with_no_facade_module_unless_it_loads_all(load_all):
    path = [ROOT, str(Path(msgpack.__file__).parents[1])]
    code = (
        START.replace("PATH", repr(path))
        .replace("WATCHED", repr(WATCHED))
        .replace("LOAD_ALL", repr(load_all))
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    modules, imported = (ast.literal_eval(line) for line in proc.stdout.splitlines())
    if load_all:
        assert len(modules) > 40 and imported == list(WATCHED)
    else:
        assert modules == [] and imported == []
