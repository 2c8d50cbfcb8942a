"""The python level in the real jail: every facade name imports in a confined child (no lazy
load killed by the filter), randomness differs between runs, what the modules do that needs
the kernel works (getrandom, sleep), and a child that ran such a program serves no other."""

import hashlib

import pytest

from lackjail import lang
from lackjail.api import Jail
from lackjail.lang.facades import FACADES
from lackjail.policy import PolicyError


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(workers=1, language="python") as j:
        yield j


def test_every_name_of_every_facade_imports_in_the_jail(jail):
    modules = sorted(FACADES, key=lambda module: module != "__future__")  # it comes first
    lines = [f"from {module} import {', '.join(FACADES[module])}" for module in modules]
    r = jail.run("\n".join(lines) + "\n1")
    assert (r.status, r.value) == ("ok", 1), r.errors


def test_what_the_modules_ask_of_the_kernel_works(jail):
    r = jail.run(
        "import uuid, secrets, time, datetime, hashlib\n"
        "t = time.monotonic()\ntime.sleep(0.02)\n"
        "[len(str(uuid.uuid4())), len(secrets.token_hex(8)), time.monotonic() - t >= 0.015,\n"
        " datetime.datetime.strptime('2024-02-29', '%Y-%m-%d').day, time.localtime(0).tm_year,\n"
        " hashlib.new('sha3_256', b'x').hexdigest()[:6], time.mktime(time.localtime(0))]"
    )
    assert (r.status, r.value) == (
        "ok",
        [
            36,
            16,
            True,
            29,
            1970,
            hashlib.new("sha3_256", b"x").hexdigest()[:6],
            0.0,
        ],
    ), r.errors


def test_random_is_seeded_afresh_in_every_run(jail):
    draws = {tuple(jail.run("import random\n[random.random(), random.random()]").value)}
    for _ in range(4):
        draws.add(tuple(jail.run("import random\n[random.random(), random.random()]").value))
    assert len(draws) == 5
    seeded = [jail.run("import random\nrandom.seed(7)\nrandom.random()").value for _ in (1, 2)]
    assert seeded[0] == seeded[1]


DRAWS = "import random\n[random.random() for _ in range(5)]"


def test_a_runs_seed_draws_the_same_numbers_again(jail):
    first, again, other = (jail.run(DRAWS, seed=s) for s in (42, 42, 43))
    assert first.status == again.status == other.status == "ok", (first, other)
    assert first.value == again.value and first.value != other.value
    import random  # the same stream as CPython's own random.seed(42)

    random.seed(42)
    assert first.value == [random.random() for _ in range(5)]
    unseeded = [jail.run(DRAWS).value for _ in (1, 2)]
    assert unseeded[0] != unseeded[1] and first.value not in unseeded


def test_a_seed_reaches_stream_and_session_runs(jail):
    streamed = list(jail.stream(DRAWS, seed=42))[-1]
    with jail.session() as session:
        in_session = session.run(DRAWS, seed=42)
        next_draws = session.run(DRAWS)  # the stream goes on: no seed, no reset
    assert streamed.value == in_session.value == jail.run(DRAWS, seed=42).value
    assert next_draws.status == "ok" and next_draws.value != in_session.value


def test_async_runs_take_a_seed_too(jail):
    import asyncio

    from lackjail.api import AsyncJail

    async def draws():
        async with AsyncJail(workers=1, language="python") as ajail:
            ran = await ajail.run(DRAWS, seed=42)
            streamed = [event async for event in ajail.stream(DRAWS, seed=42)][-1]
            async with ajail.session() as session:
                in_session = await session.run(DRAWS, seed=42)
            return [ran.value, streamed.value, in_session.value]

    assert asyncio.run(draws()) == [jail.run(DRAWS, seed=42).value] * 3


@pytest.mark.parametrize("seed", ["42", 1.5, True, -1, 1 << 63, 1 << 200])
def test_a_bad_seed_is_a_clear_error(jail, seed):
    with pytest.raises(PolicyError, match=r"seed= must be a whole number from 0 to 2\*\*63 - 1"):
        jail.run(DRAWS, seed=seed)


def test_a_seed_at_a_level_without_random_is_refused(require_nsjail):
    with Jail(workers=1, language="extended") as other:
        with pytest.raises(PolicyError, match="only language 'python' has"):
            other.run("1", seed=1)


def test_a_forbidden_module_is_invalid_and_names_the_tool(jail):
    r = jail.run("import os\nos.listdir('/')")
    assert r.status == "invalid" and "read_file" in r.errors[0]["message"]


def test_sleeping_past_the_wall_limit_is_a_timeout(require_nsjail):
    from lackjail.policy import load_policy

    policy = load_policy("default")
    policy = policy.replace(limits=policy.limits.__class__(wall_s=0.5, cpu_s=1))
    with Jail(policy=policy, workers=1, language="python") as jail:
        r = jail.run("import time\ntime.sleep(30)")
        assert r.status == "timeout", r


def test_a_reused_child_serves_one_python_program(require_nsjail):
    """In reuse mode a class of a facade changed by one run must not reach the next."""
    with Jail(workers=1, mode="reuse", language="python") as jail:
        first = jail.run("import json\njson.JSONEncoder.item_separator = '; '\njson.dumps([1, 2])")
        second = jail.run("import json\njson.dumps([1, 2])")
        assert first.value == "[1; 2]" and second.value == "[1, 2]", (first, second)
        assert first.mode == "reuse"


def test_a_stop_that_reaches_exit_stays_the_runs_verdict(require_nsjail):
    """`__exit__` receives whatever ends its block, the runner's stop verdict too: a program
    that suppresses it, rewrites it and clears the class's record must not end `ok`."""
    from lackjail.policy import load_policy

    policy = load_policy("default")
    policy = policy.replace(limits=policy.limits.__class__(output_bytes=1000))
    program = (
        "class Swallow:\n"
        "    def __enter__(self):\n"
        "        return self\n"
        "    def __exit__(self, kind, stop, tb):\n"
        "        stop.status, stop.message = 'ok', 'nothing happened'\n"
        "        try:\n"
        "            kind.raised.clear()\n"
        "        except AttributeError:\n"
        "            pass\n"
        "        return True\n"
        "with Swallow():\n"
        "    print('x' * 5000)\n"
        "'done'"
    )
    with Jail(policy=policy, workers=1, language="python") as jail:
        r = jail.run(program)
        assert r.status == "limit", r
        assert "output exceeds" in r.errors[0]["message"]


def test_a_str_whose_len_lies_is_held_to_the_jails_own_output_cap(require_nsjail):
    """print writes str(x), which may be a str subclass: its __len__ must not decide how much
    output the jail lets through (the controller's own cap would be the only one left)."""
    from lackjail.policy import load_policy

    policy = load_policy("default")
    policy = policy.replace(limits=policy.limits.__class__(output_bytes=1000))
    program = (
        "class S(str):\n"
        "    def __len__(self):\n"
        "        return 0\n"
        "    def __str__(self):\n"
        "        return self\n"
        "big = S('x' * 100000)\n"
        "for i in range(5):\n"
        "    print(big, end=S(''), sep=S(''))\n"
    )
    with Jail(policy=policy, workers=1, language="python") as jail:
        r = jail.run(program)
        assert r.status == "limit", r
        assert r.errors[0]["message"].startswith("output exceeds the 1000-byte limit"), r.errors
        assert len(r.output) <= 1000


def test_a_session_at_the_python_level_imports_and_keeps_its_modules(jail):
    """A session's jail is started apart from the pool's: it imports the modules too."""
    with jail.session() as session:
        first = session.run("import json\nfrom collections import Counter\nc = Counter('aab')")
        assert first.status == "ok", first.errors
        second = session.run("json.dumps(c.most_common(1))")
        assert (second.status, second.value) == ("ok", '[["a", 2]]'), second.errors


# getattr, hasattr and setattr are the jail's own: what CPython gives for an ordinary name,
# a refusal for a name built at run time that the validator would have rejected as a literal.
BY_NAME = [
    (
        "class P:\n    pass\np = P()\nsetattr(p, 'x', 3)\n"
        "[getattr(p, 'x'), hasattr(p, 'y'), getattr(p, 'y', 5), getattr(p, 'x', 1)]",
        [3, False, 5, 3],
    ),
    ("s = slice(1, 10, 2)\nn = 'sta' + 'rt'\n[getattr(s, n), hasattr(s, 'step')]", [1, True]),
    ("list(map(getattr, [1, 2.5], ['real', 'imag']))", [1, 0.0]),
    (  # a dispatch table by method name, as agents write them
        "class H:\n    def on_add(self, a, b):\n        return a + b\n"
        "    def run(self, kind, *args):\n        m = getattr(self, 'on_' + kind, None)\n"
        "        return 'unknown' if m is None else m(*args)\n"
        "[H().run('add', 2, 3), H().run('div', 1, 2)]",
        [5, "unknown"],
    ),
    (  # a record filled from keywords
        "class R:\n    def __init__(self, **fields):\n        for k, v in fields.items():\n"
        "            setattr(self, k, v)\n"
        "r = R(name='a', size=3)\n"
        "{n: getattr(r, n) for n in ['name', 'size', 'x'] if hasattr(r, n)}",
        {"name": "a", "size": 3},
    ),
    (
        "try:\n    getattr(1, 'nope')\nexcept AttributeError as e:\n    r = str(e)\nr",
        "'int' object has no attribute 'nope'",
    ),
]


@pytest.mark.parametrize(("source", "value"), BY_NAME)
def test_getattr_hasattr_setattr_give_what_cpython_gives(jail, source, value):
    r = jail.run(source)
    assert (r.status, r.value) == ("ok", value), r.errors


@pytest.mark.parametrize(
    "source",
    [
        "n = '_' * 2 + 'class' + '_' * 2\ngetattr((), n)",
        "n = '_' * 2 + 'class' + '_' * 2\ngetattr((), n, None)",
        "def g():\n    yield 1\nn = 'gi_' + 'frame'\nhasattr(g(), n)",
        "class A:\n    pass\nn = '_' * 2 + 'class' + '_' * 2\nsetattr(A(), n, int)",
        "n = 'for' + 'mat'\ngetattr('{0}', n)",
        "n = 'f_' + 'back'\ngetattr(1, n)",
    ],
)
def test_a_name_built_at_run_time_that_is_off_limits_is_refused(jail, source):
    r = jail.run(source)
    assert r.status == "error", (r.status, r.value)
    assert r.errors[0]["message"].startswith("AttributeError: attribute "), r.errors
    assert "off limits in the jail" in r.errors[0]["message"]


def test_a_str_subclass_cannot_name_an_attribute(jail):
    r = jail.run("class S(str):\n    pass\ngetattr(1, S('real'))")
    assert r.status == "error" and r.errors[0]["message"].startswith("TypeError: "), r.errors


def test_print_is_cpythons_own_and_what_the_library_prints_is_output(jail):
    r = jail.run("print(1, 2, sep='-', end='!')\nprint('x', flush=True)\nrepr(print)")
    assert (r.status, r.value, r.output) == ("ok", "<built-in function print>", "1-2!x\n")
    r = jail.run("print('x', **{'foo': 1})")
    assert r.errors[0]["message"] == "TypeError: 'foo' is an invalid keyword argument for print()"
    r = jail.run("import re\nx = re.compile('ab', 128)\nprint('end')")  # re.DEBUG prints a dump
    assert r.status == "ok" and r.output.startswith("LITERAL 97\nLITERAL 98\n")
    assert r.output.endswith("SUCCESS\nend\n")


def test_sys_is_what_the_interpreter_is(jail):
    import sys

    r = jail.run(
        "import sys\n[sys.maxsize, list(sys.version_info[:2]), sys.platform, sys.float_info.dig]"
    )
    assert (r.status, r.value) == (
        "ok",
        [sys.maxsize, list(sys.version_info[:2]), sys.platform, sys.float_info.dig],
    )
    r = jail.run("import sys\ngetattr(sys, 'mod' + 'ules')")
    assert r.errors[0]["message"] == "AttributeError: module 'sys' has no attribute 'modules'"


def test_a_program_recurses_as_deep_as_a_script(jail, tmp_path):
    """The runner's frames below the program do not eat into its recursion limit."""
    import subprocess
    import sys

    source = (
        "def depth(n=0):\n    try:\n        return depth(n + 1)\n"
        "    except RecursionError:\n        return n\nprint(depth())"
    )
    script = tmp_path / "deep.py"
    script.write_text(source)
    want = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True)
    assert want.returncode == 0 and int(want.stdout) > 900
    assert jail.run(source).output == want.stdout


# Programs whose outcome hangs on the interpreter's own state (its stack, its streams, its
# context): each is run as a script of this interpreter too, and must print what it prints.
SCRIPTED = [
    (  # recursion through C: the depth and the message are a script's
        "depth = [0]\ndef f(x):\n    depth[0] += 1\n    return sorted([x], key=f)\n"
        "try:\n    f(1)\nexcept RecursionError as e:\n    print(depth[0], e)\n"
        "depth[0] = 0\ndef g(x):\n    depth[0] += 1\n    return list(map(g, [x]))\n"
        "try:\n    g(1)\nexcept RecursionError as e:\n    print(depth[0], e)\n"
        "class R:\n    def __repr__(self):\n        return repr(self)\n"
        "try:\n    repr(R())\nexcept RecursionError as e:\n    print(e)"
    ),
    (
        "import sys\nsys.setrecursionlimit(10)\nprint(sys.getrecursionlimit())\n"
        "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nprint(f(5))\n"
        "try:\n    f(100)\nexcept RecursionError as e:\n    print(e)\n"
        "def g(n):\n    if n == 0:\n        sys.setrecursionlimit(3)\n    return g(n - 1)\n"
        "try:\n    g(4)\nexcept RecursionError as e:\n    print(e)\n"
        "for bad in [0, 2**31, 1.5]:\n    try:\n        sys.setrecursionlimit(bad)\n"
        "    except (ValueError, OverflowError, TypeError) as e:\n"
        "        print(type(e).__name__, e)\n"
        "sys.setrecursionlimit(50)\nx = []\nfor _ in range(100):\n    x = [x]\n"
        "try:\n    repr(x)\nexcept RecursionError as e:\n    print(e)"
    ),
    (
        "import sys\nsys.stdout.write('a')\nprint('b', file=sys.stdout, flush=True)\n"
        "sys.stdout.writelines(['c', 'd\\n'])\nsys.stdout.flush()\n"
        "print(str(type(sys.stdout)), sys.stdout.encoding, sys.stdout.isatty())\n"
        "print(sys.stdout.write('xyz'))\n"
        "try:\n    sys.stdout.write(b'x')\nexcept TypeError as e:\n    print(e)"
    ),
    (
        "def init(self, v):\n    self.v = v\n"
        "A = type('A', (), {'__init__': init, 'double': lambda self: self.v * 2, 'k': 1})\n"
        "B = type('B', (A,), {'__doc__': 'b', '__repr__': lambda self: f'B({self.v})'})\n"
        "t = type\nC = t(*('C', (ValueError,), {}))\n"
        "print(A(2).double(), repr(B(3)), B.__doc__, B.__name__, A.__module__, A.k)\n"
        "print(type(A) is type, isinstance(A, type), isinstance(A(1), type), type(type) is type)\n"
        "print(issubclass(B, A), issubclass(C, Exception), str(type), type(1) is int)\n"
        "for args, kwargs in [((), {}), (('A', ()), {}), ((1, (), {}), {}), (('A', [], {}), {}),\n"
        "                     (('A', (), []), {}), ((1,), {'x': 1}), (('A', (), {}), {'x': 1})]:\n"
        "    try:\n        type(*args, **kwargs)\n    except TypeError as e:\n        print(e)\n"
        "try:\n    type(**1)\nexcept TypeError as e:\n    print(e)\n"
        "registry: dict[str, type[A]] = {}\n"
        "def register(cls: type[A] | None = None, base: type | None = None) -> type:\n"
        "    registry[cls.__name__] = cls\n    return cls\n"
        "print(register(B).__name__, list(registry), repr(type[A]).startswith('type['))"
    ),
    (
        "from contextvars import ContextVar, Token, Context, copy_context\n"
        "v = ContextVar('v', default=1)\nt = v.set(2)\nctx = copy_context()\n"
        "print(v.get(), t.var is v, t.old_value is Token.MISSING, len(ctx), ctx[v])\n"
        "v.reset(t)\nprint(v.get(), ctx.run(v.get), ctx.run(v.set, 5).old_value, ctx[v])\n"
        "print(len(Context()), [k.name for k in ctx])\n"
        "try:\n    v.reset(t)\nexcept RuntimeError as e:\n    print(type(e).__name__)"
    ),
]


@pytest.mark.parametrize("source", SCRIPTED, ids=["recursion", "limit", "stdout", "type", "cv"])
def test_the_jail_prints_what_a_script_prints(jail, tmp_path, source):
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(source)
    want = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True)
    assert want.returncode == 0 and want.stdout.count("\n") >= 3, want.stderr
    assert lang.validate(source, language="python").valid
    r = jail.run(source)
    assert (r.status, r.output) == ("ok", want.stdout), r.errors


def test_stderr_writes_into_the_programs_output(jail):
    r = jail.run(
        "import sys\nprint('a')\nprint('b', file=sys.stderr)\nsys.stderr.write('c\\n')\n"
        "[sys.stderr.name, sys.stdout.name, sys.stderr is sys.stdout]"
    )
    assert (r.status, r.output, r.value) == ("ok", "a\nb\nc\n", ["<stderr>", "<stdout>", False])


def test_a_recursion_limit_above_the_jails_is_lowered_to_it(jail):
    from lackjail.worker.facades import MAX_RECURSION_LIMIT

    r = jail.run(
        "import sys\nsys.setrecursionlimit(10 ** 9)\n"
        "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
        f"[sys.getrecursionlimit(), f({MAX_RECURSION_LIMIT - 100})]"
    )
    assert (r.status, r.value) == ("ok", [MAX_RECURSION_LIMIT, MAX_RECURSION_LIMIT - 100])
    r = jail.run("import sys\nsys.setrecursionlimit(10 ** 9)\ndef f(n):\n    return f(n + 1)\nf(0)")
    assert r.status == "error" and r.errors[0]["message"].startswith("RecursionError: maximum")


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        ("type('A', (), {'_' * 2 + 'getattr' + '_' * 2: len})", "'__getattr__'"),
        ("type('A', (), {'_' * 2 + 'slots' + '_' * 2: ['_' * 2 + 'dict' + '_' * 2]})", "slots"),
        ("import enum\ntype('E', (enum.Enum,), {'A': 1})", "metaclass"),
        ("class D(dict):\n    pass\ntype('A', (), D())", "subclass"),
    ],
)
def test_type_refuses_at_run_time_what_a_class_statement_cannot_make(jail, source, refused):
    assert lang.validate(source, language="python").valid
    r = jail.run(source)
    assert r.status == "error" and r.errors[0]["message"].startswith("TypeError: "), r.errors
    assert refused in r.errors[0]["message"] and "jail" in r.errors[0]["message"]


def test_a_queue_works_in_a_confined_child(jail):
    """queue's classes hold threading's locks: the zygote imported threading, never ran a
    thread, and the child (its one thread) uses the locks as they were."""
    r = jail.run(
        "import queue\nq = queue.Queue()\nq.put(1)\nlifo = queue.LifoQueue()\n"
        "lifo.put(1)\nlifo.put(2)\n[q.get(), q.qsize(), lifo.get(), q.empty()]"
    )
    assert (r.status, r.value) == ("ok", [1, 0, 2, True]), r.errors


def test_a_program_that_leaves_a_tight_recursion_limit_still_gets_its_result(jail):
    """The runner's own calls after the program (its value, its traceback) are not held to
    the limit the program set; the tightest limit CPython takes is taken too."""
    r = jail.run("import sys\nsys.setrecursionlimit(2)\n[[[[1]]], {'a': [2, [3]]}]")
    assert (r.status, r.value) == ("ok", [[[[1]]], {"a": [2, [3]]}]), r.errors
    r = jail.run("import sys\ndef f():\n    sys.setrecursionlimit(3)\n    return 1 / 0\nf()")
    assert r.status == "error" and r.errors[0]["message"] == "ZeroDivisionError: division by zero"
    assert [frame["function"] for frame in r.errors[0]["traceback"]] == ["<module>", "f"]


def test_what_a_deep_recursion_prints_is_all_there_in_order(jail):
    """Printing as deep as the limit allows loses and garbles nothing, even when the output
    is due to be sent from where no frame is left to send it (it goes with the next batch)."""
    r = jail.run(
        "import time\ndef f(n):\n    if n > 985:\n        time.sleep(0.06)\n    print(n)\n"
        "    f(n + 1)\ntry:\n    f(0)\nexcept RecursionError as e:\n    print('done', e)"
    )
    lines = r.output.splitlines()
    assert r.status == "ok" and lines[-1] == "done maximum recursion depth exceeded", lines[-3:]
    assert lines[:-1] == [str(n) for n in range(len(lines) - 1)] and len(lines) > 990


# Names CPython 3.12 lacks too, the python level leaves to run time: the jail's error is the
# script's, word for word. __debug__ is CPython's True; a 4,300-digit literal is a script's.
LACKED = [
    "import re\ntry:\n    re.compile('(')\nexcept re.PatternError:\n    pass",
    "import re as r\nr.PatternError",
    "import math\nmath.nothing",
    "from sys import nonexistent",
    "from time import nonexistent as n",
    "from itertools import nonexistent",
    "def f():\n    from sys import nothing\n    return nothing\nf()",
]


@pytest.mark.parametrize("source", LACKED)
def test_a_name_cpython_lacks_too_fails_as_in_a_script(jail, tmp_path, source):
    import subprocess
    import sys

    script = tmp_path / "script.py"
    script.write_text(source)
    want = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True)
    assert want.returncode == 1 and "Error: " in want.stderr, want.stderr
    assert lang.validate(source, language="python").valid
    r = jail.run(source)
    assert r.status == "error", r
    assert r.errors[0]["message"] == want.stderr.splitlines()[-1], (r.errors, want.stderr)


def test_debug_and_a_long_literal_are_what_a_script_has(jail, tmp_path):
    import subprocess
    import sys

    source = (
        f"x = {'7' * 4300}\nprint(__debug__, __debug__ is True, len(str(x)))\n"
        "def f():\n    return __debug__\nprint(f(), x % 1000003)\n"
        "try:\n    import re\n    re.PatternError\nexcept AttributeError as e:\n    print(e)\n"
        "try:\n    from sys import nothing\nexcept ImportError as e:\n    print(e)"
    )
    script = tmp_path / "script.py"
    script.write_text(source)
    want = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True)
    assert want.returncode == 0 and want.stdout.count("\n") == 4, want.stderr
    r = jail.run(source)
    assert (r.status, r.output) == ("ok", want.stdout), r.errors
