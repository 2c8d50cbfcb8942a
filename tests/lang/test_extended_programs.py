"""Programs as models write them, at the extended level: the jail gives what plain Python gives.

Each program runs twice: in the jail (kit `readonly` over a small workspace)
and in plain CPython with the same tools written as plain functions. The
values, the printed output and the statuses must agree.
"""

import ast
import contextlib
import io
import os

import pytest

from lackjail.api import Jail
from lackjail.policy import load_policy

FILES = {
    "notes.txt": "alpha 3\nbeta 5\n\ngamma x\ndelta 7\n",
    "data/a.csv": "name,qty\napple,3\npear,\nplum,4\n",
    "data/b.csv": "name,qty\nfig,10\n",
    "README.md": "# demo\nsome words here\n",
}

PROGRAMS = {
    "helpers_and_try_around_tools": """
def parse_qty(text):
    try:
        return int(text)
    except ValueError:
        return 0

def load(path):
    try:
        rows = read_file(path).splitlines()[1:]
    except ToolError as e:
        print("skip", path)
        return []
    return [row.split(",") for row in rows if row]

totals = {}
for path in ["data/a.csv", "data/missing.csv", "data/b.csv"]:
    for name, qty in load(path):
        totals[name] = totals.get(name, 0) + parse_qty(qty)
totals
""",
    "while_with_break_and_continue": """
lines = read_file("notes.txt").splitlines()
i = 0
found = []
while i < len(lines):
    line = lines[i]
    i += 1
    if not line:
        continue
    word, _, value = line.partition(" ")
    if not value.isdigit():
        continue
    found.append((word, int(value)))
    if len(found) == 3:
        break
found
""",
    "generator_expressions": """
text = read_file("notes.txt")
words = [line.split()[0] for line in text.splitlines() if line.strip()]
longest = max((len(w), w) for w in words)
total = sum(int(p) for p in text.split() if p.isdigit())
any_x = any(w.startswith("g") for w in words)
{"longest": longest, "total": total, "any_g": any_x, "n": len(words)}
""",
    "recursion_and_nested_helpers": """
def flatten(items):
    out = []
    for item in items:
        if isinstance(item, list):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

[flatten([1, [2, [3, [4]], 5]]), fib(15)]
""",
    "lambda_anywhere_and_sort_keys": """
counts = {"a": 3, "b": 1, "c": 2}
by_count = sorted(counts, key=counts.get)
score = lambda k: counts[k] * 10
ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
[by_count, [score(k) for k in counts], ranked]
""",
    "raise_and_handle_own_errors": """
def check(n):
    if n < 0:
        raise ValueError(f"negative: {n}")
    assert n != 13, "unlucky"
    return n * 2

results = []
for n in [1, -1, 13, 4]:
    try:
        results.append(check(n))
    except ValueError as e:
        results.append(str(e))
    except AssertionError as e:
        results.append("assert: " + str(e))
    else:
        results.append("ok")
    finally:
        results.append("|")
results
""",
    "find_files_and_defaults": """
def summarize(path, limit=2, *, prefix="-"):
    text = read_file(path)
    head = [line for line in text.splitlines() if line][:limit]
    return [prefix + line for line in head]

paths = sorted(find_files("**/*.csv"))
report = {p: summarize(p, prefix="* ") for p in paths}
report["count"] = len(paths)
report
""",
    "else_clauses_and_pass": """
def first_even(xs):
    for x in xs:
        if x % 2 == 0:
            break
    else:
        return None
    return x

def noop():
    pass

[first_even([1, 3, 4, 5]), first_even([1, 3]), noop()]
""",
    "dict_dispatch_and_closures": """
def make_adder(n):
    return lambda x: x + n

ops = {"double": lambda x: x * 2, "inc": make_adder(1), "neg": lambda x: -x}
value = 5
trace = []
for name in ["double", "inc", "neg", "inc"]:
    value = ops[name](value)
    trace.append(value)
trace
""",
    "catching_builtin_errors": """
data = {"a": [1, 2]}
out = []
for key, index in [("a", 0), ("a", 5), ("b", 0)]:
    try:
        out.append(data[key][index])
    except (KeyError, IndexError) as err:
        out.append(str(err))
try:
    x = 1 / 0
except ZeroDivisionError:
    x = "div"
except Exception:
    x = "other"
out + [x]
""",
    "counting_words_with_while_true": """
text = read_file("README.md")
words = text.split()
counts = {}
i = 0
while True:
    if i >= len(words):
        break
    w = words[i].strip("#").lower()
    i += 1
    if not w:
        continue
    counts[w] = counts.get(w, 0) + 1
print(len(counts), "distinct")
counts
""",
    "powers_bits_format_and_iterators": """
def describe(name, qty):
    return "{:<6}|{:>4}".format(name, qty)

rows = [line.split(",") for line in read_file("data/a.csv").splitlines()[1:]]
qtys = list(map(lambda r: int(r[1]) if r[1] else 0, rows))
squares = [q ** 2 for q in qtys]
flags = 0
for i, q in enumerate(qtys):
    if q:
        flags |= 1 << i
first_big = next((r[0] for r in rows if r[1] and int(r[1]) > 3), None)
quotient, rest = divmod(sum(qtys), 3)
names = frozenset(r[0] for r in rows) & {"apple", "plum", "kiwi"}
for r in rows:
    print(describe(r[0], r[1] or "-"))
print(repr(first_big), bin(flags), hex(255), chr(ord("a") + 1))
[squares, flags, first_big, quotient, rest, sorted(names), pow(2, 10, 1000), ~flags]
""",
}


def plain_python(workspace, source):
    """Run SOURCE as plain CPython would, with the kit's tools as plain functions."""

    class ToolError(Exception):
        pass

    def read_file(path):
        full = os.path.join(workspace, path)
        if not os.path.isfile(full):
            raise ToolError(f"read_file: no file {path}")
        with open(full, encoding="utf-8") as fh:
            return fh.read()

    def find_files(pattern):
        import glob

        return sorted(glob.glob(pattern, root_dir=workspace, recursive=True))

    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    namespace = {"read_file": read_file, "find_files": find_files, "ToolError": ToolError}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(tree, "<plain>", "exec"), namespace)
        value = None
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<plain>", "eval"), namespace)
    return _jsonish(value), out.getvalue()


def _jsonish(value):
    if isinstance(value, (list, tuple)):
        return [_jsonish(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonish(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("extended-ws")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)


@pytest.fixture(scope="module")
def jail(require_nsjail, workspace):
    policy = load_policy("default").replace(language="extended")
    with Jail(policy=policy, kit="readonly", workers=2, workspace=workspace) as j:
        yield j


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_gives_what_plain_python_gives(jail, workspace, name):
    source = PROGRAMS[name].strip() + "\n"
    expected, printed = plain_python(workspace, source)
    result = jail.run(source)
    assert result.status == "ok", result.errors
    assert result.value == expected
    assert result.output == printed
    assert result.isolation == "nsjail"


def test_each_program_is_rejected_at_the_lackpy_level(workspace, require_nsjail):
    from lackjail.checker import Checker

    checker = Checker(kit="readonly")
    for name, source in PROGRAMS.items():
        assert not checker.check(source).valid, name
