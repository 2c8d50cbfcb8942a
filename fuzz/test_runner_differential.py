"""Runner differential: a valid program gives the same answer in the jail as in plain CPython.

Programs come from a typed generator (arithmetic, strings, lists, dicts,
comprehensions, for, if, key= lambdas, f-strings, %-formatting, method
calls, builtins) and, for odd spellings, from hypothesmith; only programs the
validator accepts are kept. Each runs

- in the real jail through the library (`Jail.run`, reuse mode for speed,
  a share in fresh mode, and a share at the extended level, the typed programs
  reshaped into functions, try blocks, while loops and generator expressions), and
- in a reference CPython process of the same interpreter with the same
  restricted namespace, written here independently of the runner:
  `__builtins__` empty, only `lang.ALLOWED_BUILTINS`, the real `print`
  writing to a buffer, the last expression evaluated with `eval`.

They must agree on the status, the value (normalised the way the jail's
result documents it: tuples and sets become lists, other objects their
repr, lone surrogates escaped), the printed output, and for errors the
exception's class, message, line and column. Runs that hit a resource
bound on the reference side (time, memory, sizes near the jail's caps) are
skipped, not compared: the limits differ by design.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import textwrap

import msgpack
import pytest
from fuzz_support import same
from hypothesis import HealthCheck, assume, event, example, given, note, settings
from hypothesis import strategies as st

from lackjail import lang

BUDGET = settings.default.max_examples


def share(fraction: float, floor: int = 5) -> int:
    return max(floor, int(BUDGET * fraction))


# -- the reference: plain CPython, same interpreter, same namespace -----------

REFERENCE = textwrap.dedent(r'''
    import ast, builtins, io, json, resource, signal, struct, sys, time, traceback, types
    import msgpack

    NAMES = json.loads(sys.argv[1])
    FILENAME = "<lackpy>"
    HEAVY_BYTES = 200_000       # output or value near the jail's caps: not compared
    HEAVY_DEPTH = 60
    HEAVY_CPU_S = 0.5
    INT64_MIN, UINT64_MAX = -(1 << 63), (1 << 64) - 1
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    class OutOfTime(BaseException):
        pass

    def on_alarm(signum, frame):
        raise OutOfTime()

    signal.signal(signal.SIGALRM, on_alarm)

    class Heavy(Exception):
        pass

    def wire_str(s):
        try:
            s.encode("utf-8")
            return s
        except UnicodeEncodeError:
            return s.encode("utf-8", "backslashreplace").decode("utf-8")

    def plain(v, depth=0, size=None):
        """The documented shape of a result value: plain data, tuples/sets as lists,
        others as repr."""
        size = size if size is not None else [0]
        if depth > HEAVY_DEPTH:
            raise Heavy("deep")
        size[0] += 9
        if size[0] > HEAVY_BYTES:
            raise Heavy("big")
        if v is None or type(v) in (bool, float):
            return v
        if type(v) is int:
            if INT64_MIN <= v <= UINT64_MAX:
                return v
            try:
                v = str(v)
            except ValueError:
                raise Heavy("huge int")
        if type(v) is str:
            size[0] += len(v)
            return plain_str(v, size)
        if type(v) is bytes:
            size[0] += len(v)
            if size[0] > HEAVY_BYTES:
                raise Heavy("big")
            return v
        if type(v) in (list, tuple, set, frozenset):
            return [plain(x, depth + 1, size) for x in v]
        if type(v) is dict:
            out = {}
            for k, x in v.items():
                if not (k is None or type(k) in (str, int, float, bool)):
                    k = repr(k)
                out[plain(k, depth + 1, size)] = plain(x, depth + 1, size)
            return out
        return plain(repr(v), depth, size)

    def plain_str(s, size):
        if size[0] > HEAVY_BYTES:
            raise Heavy("big")
        return wire_str(s)

    class ToolError(Exception):
        pass

    EXCEPTIONS = {name: getattr(builtins, name, ToolError) for name in json.loads(sys.argv[2])}

    def run(src, params, language):
        buf = io.StringIO()

        def print(*args, **kwargs):
            builtins.print(*args, file=buf, **kwargs)

        if language == "python":  # plain CPython: a script's module, every builtin, print too
            module = types.ModuleType("__main__")
            sys.modules["__main__"] = module
            ns = module.__dict__
            ns["__builtins__"] = builtins
            sys.stdout = buf  # CPython's own print writes here (the frames go to rout)
        else:
            ns = {name: getattr(builtins, name) for name in NAMES if hasattr(builtins, name)}
            if language == "extended":
                ns.update(EXCEPTIONS)
            ns["__builtins__"] = {}
            ns["print"] = print
        ns.update(params)
        tree = ast.parse(src, FILENAME)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = tree.body.pop().value
        status, value, message, line, col = "ok", None, None, None, None
        cpu = time.process_time()
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        try:
            try:
                exec(compile(tree, FILENAME, "exec", dont_inherit=True), ns)
                if last is not None:
                    code = compile(ast.Expression(last), FILENAME, "eval", dont_inherit=True)
                    value = eval(code, ns)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            value = plain(value)
        except (OutOfTime, MemoryError, RecursionError, Heavy) as exc:
            return {"status": "heavy", "why": type(exc).__name__ + " " + str(exc)}
        except Exception as exc:
            status, value = "error", None
            message = f"{type(exc).__name__}: {exc}"[:2000]
            for fs in traceback.extract_tb(exc.__traceback__):
                if fs.filename == FILENAME:
                    line, col = fs.lineno, fs.colno
            if col is not None:  # lackjail's columns: 1-based, in characters
                text = src.encode("utf-8").splitlines()[line - 1][:col]
                col = len(text.decode("utf-8", "replace")) + 1
        output = wire_str(buf.getvalue())
        if len(output) > HEAVY_BYTES or time.process_time() - cpu > HEAVY_CPU_S:
            return {"status": "heavy", "why": "output or cpu"}
        return {
            "status": status,
            "value": value,
            "output": output,
            "message": message,
            "line": line,
            "col": col,
        }

    rin, rout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = rin.read(4)
        if len(head) < 4:
            break
        body = rin.read(struct.unpack(">I", head)[0])
        req = msgpack.unpackb(body, raw=False, strict_map_key=False)
        try:
            reply = run(req["src"], req["params"], req["language"])
        except BaseException as exc:  # the reference itself must answer, whatever happened
            reply = {"status": "heavy", "why": "reference: " + repr(exc)[:200]}
        body = msgpack.packb(reply, use_bin_type=True)
        rout.write(struct.pack(">I", len(body)) + body)
        rout.flush()
''')


class Reference:
    """A long-lived CPython process that runs programs the plain way; restarted if it dies."""

    def __init__(self):
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-c",
                REFERENCE,
                json.dumps(list(lang.ALLOWED_BUILTINS)),
                json.dumps(list(lang.EXCEPTION_NAMES)),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def run(self, src: str, params: dict, language: str = "lackpy") -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        body = msgpack.packb(
            {"src": src, "params": params, "language": language}, use_bin_type=True
        )
        try:
            self.proc.stdin.write(struct.pack(">I", len(body)) + body)
            self.proc.stdin.flush()
            head = self.proc.stdout.read(4)
            if len(head) < 4:
                raise BrokenPipeError
            return msgpack.unpackb(
                self.proc.stdout.read(struct.unpack(">I", head)[0]), raw=False, strict_map_key=False
            )
        except (BrokenPipeError, OSError):
            self.close()
            return {"status": "heavy", "why": "the reference process died"}

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture(scope="module")
def reference():
    ref = Reference()
    yield ref
    ref.close()


@pytest.fixture(scope="module")
def reuse_jail(require_nsjail):
    from lackjail.api import Jail

    with Jail(workers=2, mode="reuse") as jail:
        jail.pool.wait_full(30)
        yield jail


@pytest.fixture(scope="module")
def extended_jail(require_nsjail):
    from lackjail.api import Jail

    with Jail(workers=2, mode="reuse", language="extended") as jail:
        jail.pool.wait_full(30)
        yield jail


@pytest.fixture(scope="module")
def python_jail(require_nsjail):
    from lackjail.api import Jail

    with Jail(workers=2, language="python") as jail:
        jail.pool.wait_full(30)
        yield jail


@pytest.fixture(scope="module")
def fresh_jail(require_nsjail):
    from lackjail.api import Jail

    with Jail(workers=2, mode="fresh") as jail:
        jail.pool.wait_full(30)
        yield jail


# -- comparison ---------------------------------------------------------------

ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
PRINT = re.compile(
    r"<function [\w.<>]*\bprint at "
)  # each side's capturing print is its own function


def _norm(value):
    """Object addresses and the capturing print's qualified name differ; nothing else may."""
    if isinstance(value, str):
        return PRINT.sub("<function print at ", ADDRESS.sub(" at 0x?", value))
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {_norm(k): _norm(v) for k, v in value.items()}
    return value


def compare(jail, reference, src: str, params: dict, language: str = "lackpy"):
    check = lang.validate(src, params=list(params), language=language)
    assume(check.valid)
    ref = reference.run(src, params, language)
    if ref["status"] == "heavy":
        event("skipped: reference hit a resource bound")
        note(f"reference: {ref['why']}")
        assume(False)
    got = jail.run(src, params=params)
    note(f"program:\n{src}\nparams: {params!r}")
    note(f"reference: {ref!r}")
    note(f"jail: {got.status} value={got.value!r} output={got.output!r} errors={got.errors!r}")
    event(
        f"{ref['status']}"
        + (f" {ref['message'].partition(':')[0]}" if ref["status"] == "error" else "")
    )
    assert got.status == ref["status"], (got.status, got.errors, ref)
    assert _norm(got.output) == _norm(ref["output"])
    if ref["status"] == "ok":
        assert same(_norm(got.value), _norm(ref["value"])), (got.value, ref["value"])
    else:
        err = got.errors[0]
        assert _norm(err["message"]) == _norm(ref["message"])
        assert (err.get("line"), err.get("col")) == (ref["line"], ref["col"]), (err, ref)


# -- the program generator -----------------------------------------------------

I, F, S, B, LI, LS, D, X = (  # noqa: E741 (type tags, read as a table)
    "int",
    "float",
    "str",
    "bool",
    "list[int]",
    "list[str]",
    "dict[str,int]",
    "misc",
)
TYPES = (I, F, S, B, LI, LS, D, X)
SMALL = st.integers(0, 4).map(str)
INT_LIT = st.integers(-9, 30).map(lambda n: f"({n})" if n < 0 else str(n))
FLOAT_LIT = st.floats(-50, 50, width=32).map(repr)
TEXT = st.text(
    st.characters(codec="utf-8") | st.sampled_from("ab %s-_.,:0123 \t\n\\'\"é€𝔘\ud800"), max_size=6
)
STR_LIT = TEXT.map(repr)
FORMAT_SPECS = [
    "",
    ":>5",
    ":^7",
    ":<3",
    ":.2f",
    ":08.3f",
    ":e",
    ":,",
    ":x",
    ":d",
    ":%",
    "!r",
    "!s",
    ":+",
]
CMP = ["==", "!=", "<", "<=", ">", ">="]
ARITH = ["+", "-", "*", "//", "%"]
TYPE_NAMES = ["int", "str", "float", "bool", "list", "dict", "tuple", "set"]


class Program:
    """Source lines under construction and the typed names in scope."""

    def __init__(self, draw, params):
        self.draw = draw
        self.lines: list[str] = []
        self.scope: dict[str, list[str]] = {t: [] for t in TYPES}
        self.fresh = 0
        for name, value in params.items():
            self.scope[_type_of(value)].append(name)
        self.params = set(params)

    def name(self, prefix="v"):
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def var(self, ty):
        names = self.scope[ty]
        return self.pick(names) if names else None

    # expressions ----------------------------------------------------------
    def expr(self, ty, depth=2):
        leaf = self.leaf(ty)
        if depth <= 0 or self.draw(st.integers(0, 3)) == 0:
            return leaf
        e = lambda t, d=depth - 1: self.expr(t, d)  # noqa: E731
        return self.pick(_BUILDERS[ty])(self, e)

    def leaf(self, ty):
        var = self.var(ty)
        lit = {
            I: lambda: self.draw(INT_LIT),
            F: lambda: self.draw(FLOAT_LIT),
            S: lambda: self.draw(STR_LIT),
            B: lambda: self.pick(["True", "False"]),
            LI: lambda: "[" + ", ".join(self.draw(st.lists(INT_LIT, max_size=5))) + "]",
            LS: lambda: "[" + ", ".join(self.draw(st.lists(STR_LIT, max_size=4))) + "]",
            D: lambda: (
                "{"
                + ", ".join(
                    f"{k}: {v}"
                    for k, v in self.draw(st.lists(st.tuples(STR_LIT, INT_LIT), max_size=4))
                )
                + "}"
            ),
            X: lambda: self.pick(["None", "(1, 'a')", "b'ab\\x00'", "range(3)", "{1, 2}", "()"]),
        }[ty]
        if var is not None and self.draw(st.booleans()):
            return var
        return lit()

    def bound(self, ty, name, build):
        """BUILD(e) with NAME bound to a value of type TY (comprehension/lambda variable)."""
        self.scope[ty].append(name)
        try:
            return build()
        finally:
            self.scope[ty].remove(name)

    def comp(self, e, elem_ty, source, out):
        v = self.name("c")
        body = self.bound(elem_ty, v, lambda: (e(out), e(B) if self.draw(st.booleans()) else None))
        cond = f" if {body[1]}" if body[1] else ""
        return body[0], v, source, cond

    # statements -----------------------------------------------------------
    def block(self, depth, count):
        for _ in range(count):
            self.statement(depth)

    def emit(self, depth, text):
        self.lines.append("    " * depth + text)

    def statement(self, depth):
        kind = self.pick(
            ["assign", "assign", "aug", "mutate", "print", "for", "if"]
            if depth < 2
            else ["assign", "aug", "mutate", "print"]
        )
        if kind == "assign":
            ty = self.pick(TYPES[:-1])
            own = [n for n in self.scope[ty] if n.startswith("v")]
            target = self.pick(own) if own and self.draw(st.booleans()) else self.name()
            self.emit(depth, f"{target} = {self.expr(ty)}")
            if target not in self.scope[ty]:
                self.scope[ty].append(target)
        elif kind == "aug":
            ty = self.pick([I, F, S, LI])
            own = [n for n in self.scope[ty] if n.startswith("v")]
            if not own:
                return self.statement(depth)
            op = self.pick(["+=", "-=", "*=", "//=", "%="] if ty in (I, F) else ["+="])
            self.emit(depth, f"{self.pick(own)} {op} {self.expr(ty, 1)}")
        elif kind == "mutate":
            lst, dct = self.var(LI), self.var(D)
            options = []
            if lst:
                options += [
                    f"{lst}.append({self.expr(I, 1)})",
                    f"{lst}.extend({self.expr(LI, 1)})",
                    f"{lst}.sort()",
                    f"{lst}.reverse()",
                    f"{lst}.pop()",
                    f"{lst}.insert(0, {self.expr(I, 1)})",
                    f"{lst}[{self.expr(I, 1)}] = {self.expr(I, 1)}",
                    f"{lst}.remove({self.expr(I, 0)})",
                    f"{lst}.sort(key=lambda k: -k)",
                ]
            if dct:
                options += [
                    f"{dct}[{self.expr(S, 1)}] = {self.expr(I, 1)}",
                    f"{dct}.pop({self.expr(S, 0)})",
                    f"{dct}.update({self.expr(D, 1)})",
                    f"{dct}.setdefault({self.expr(S, 0)}, 0)",
                ]
            if not options:
                return self.statement(depth)
            self.emit(depth, self.pick(options))
        elif kind == "print":
            args = [self.expr(self.pick(TYPES), 1) for _ in range(self.draw(st.integers(0, 3)))]
            extra = self.pick(["", ", sep='-'", ", end=''", ", sep='', end='!\\n'"])
            self.emit(depth, f"print({', '.join(args)}{extra if args else extra[2:]})")
        elif kind == "for":
            v = self.name("i")
            how = self.pick(["range", "sorted", "list", "enumerate", "items", "split"])
            if how == "range":
                head, binds = f"for {v} in range({self.draw(SMALL)}):", [(I, v)]
            elif how == "sorted":
                head, binds = f"for {v} in sorted({self.expr(LI, 1)}):", [(I, v)]
            elif how == "list":
                head, binds = f"for {v} in list({self.expr(LS, 1)}):", [(S, v)]
            elif how == "enumerate":
                w = self.name("i")
                head, binds = f"for {v}, {w} in enumerate({self.expr(LS, 1)}):", [(I, v), (S, w)]
            elif how == "items":
                w = self.name("i")
                head, binds = f"for {v}, {w} in {self.expr(D, 0)}.items():", [(S, v), (I, w)]
            else:
                head, binds = f"for {v} in {self.expr(S, 1)}.split():", [(S, v)]
            self.emit(depth, head)
            for ty, name in binds:
                self.scope[ty].append(name)
            self.block(depth + 1, self.draw(st.integers(1, 3)))
            for ty, name in binds:
                self.scope[ty].remove(name)
        else:
            self.emit(depth, f"if {self.expr(B)}:")
            self.block(depth + 1, self.draw(st.integers(1, 2)))
            if self.draw(st.booleans()):
                self.emit(depth, f"elif {self.expr(B)}:")
                self.block(depth + 1, 1)
            if self.draw(st.booleans()):
                self.emit(depth, "else:")
                self.block(depth + 1, self.draw(st.integers(1, 2)))


def _type_of(value):
    if isinstance(value, bool):
        return B
    return {int: I, float: F, str: S}.get(type(value)) or (
        LS
        if isinstance(value, list) and value and isinstance(value[0], str)
        else LI
        if isinstance(value, list)
        else D
    )


def _fstring(p, e):
    ty = p.pick([I, F, S, B, LI])
    spec = p.pick(FORMAT_SPECS)
    inner = e(ty)
    text = p.draw(st.text(st.sampled_from("ab -:"), max_size=3))
    # the space keeps an inner dict display ("{}['']") from reading as an escaped "{{"
    return f"f'''{text}{{ {inner}{spec}}}'''"


_BUILDERS = {
    I: [
        lambda p, e: f"({e(I)} {p.pick(ARITH)} {e(I)})",
        lambda p, e: f"len({e(p.pick([S, LI, LS, D]))})",
        lambda p, e: f"sum({e(LI)})",
        lambda p, e: f"{p.pick(['min', 'max'])}({e(LI)})",
        lambda p, e: f"{p.pick(['min', 'max'])}({e(I)}, {e(I)})",
        lambda p, e: f"max({e(LI)}, default={e(I)})",
        lambda p, e: f"abs({e(I)})",
        lambda p, e: f"int({e(p.pick([F, S, B]))})",
        lambda p, e: f"round({e(F)})",
        lambda p, e: f"{e(LI)}[{e(I)}]",
        lambda p, e: f"{e(D)}.get({e(S)}, {e(I)})",
        lambda p, e: f"{e(D)}[{e(S)}]",
        lambda p, e: f"{e(S)}.{p.pick(['count', 'find', 'index'])}({e(S)})",
        lambda p, e: f"{e(LI)}.{p.pick(['count', 'index'])}({e(I)})",
        lambda p, e: f"({e(I)} if {e(B)} else {e(I)})",
        lambda p, e: f"(-{e(I)})",
        lambda p, e: (lambda c: f"len([{c[0]} for {c[1]} in {c[2]}{c[3]}])")(
            p.comp(e, I, e(LI), I)
        ),
    ],
    F: [
        lambda p, e: f"({e(I)} / {e(I)})",
        lambda p, e: f"({e(F)} {p.pick(ARITH + ['/'])} {e(p.pick([F, I]))})",
        lambda p, e: f"float({e(p.pick([I, S]))})",
        lambda p, e: p.pick(
            ["float('inf')", "float('-inf')", "float('nan')", "float('1e308') * 10"]
        ),
        lambda p, e: f"round({e(F)}, {p.draw(SMALL)})",
        lambda p, e: f"abs({e(F)})",
        lambda p, e: f"(sum({e(LI)}) / len({e(LI)}))",
    ],
    S: [
        lambda p, e: f"({e(S)} + {e(S)})",
        lambda p, e: f"({e(S)} * {p.draw(SMALL)})",
        lambda p, e: f"str({e(p.pick(TYPES))})",
        lambda p, e: (
            f"{e(S)}.{p.pick(['upper', 'lower', 'strip', 'title', 'casefold', 'swapcase'])}()"
        ),
        lambda p, e: f"{e(S)}.replace({e(S)}, {e(S)})",
        lambda p, e: f"{e(S)}.join({e(LS)})",
        lambda p, e: f"{e(S)}[{e(I)}]",
        lambda p, e: f"{e(S)}[{e(I)}:{e(I)}]",
        lambda p, e: f"{e(S)}[::-1]",
        lambda p, e: f"({e(S)} if {e(B)} else {e(S)})",
        _fstring,
        lambda p, e: f"('%s|%d|%r' % ({e(S)}, {e(I)}, {e(p.pick(TYPES))}))",
        lambda p, e: f"({e(S)} % ({e(p.pick(TYPES))},))",
        lambda p, e: f"{e(S)}.split({e(S)})[{e(I)}]",
        lambda p, e: f"{e(S)}.encode().decode()",
        lambda p, e: f"{e(S)}.center({e(I)}, '*')",
    ],
    B: [
        lambda p, e: (lambda t: f"({e(t)} {p.pick(CMP)} {e(t)})")(p.pick([I, S, F, LI])),
        lambda p, e: f"({e(I)} {p.pick(['in', 'not in'])} {e(LI)})",
        lambda p, e: f"({e(S)} in {e(p.pick([S, D, LS]))})",
        lambda p, e: f"(not {e(B)})",
        lambda p, e: f"({e(B)} {p.pick(['and', 'or'])} {e(B)})",
        lambda p, e: f"isinstance({e(p.pick(TYPES))}, {p.pick(TYPE_NAMES)})",
        lambda p, e: f"{p.pick(['any', 'all'])}({e(LI)})",
        lambda p, e: f"bool({e(p.pick(TYPES))})",
        lambda p, e: f"{e(S)}.{p.pick(['startswith', 'endswith'])}({e(S)})",
        lambda p, e: f"{e(S)}.{p.pick(['isdigit', 'isalpha', 'isspace', 'isupper'])}()",
        lambda p, e: f"({e(p.pick(TYPES))} is None)",
        lambda p, e: f"(1 < {e(I)} <= {e(I)})",
    ],
    LI: [
        lambda p, e: f"list(range({p.draw(SMALL)}, {p.draw(INT_LIT)}))",
        lambda p, e: f"list(range({p.draw(INT_LIT)}, {p.draw(INT_LIT)}, {p.draw(INT_LIT)}))",
        lambda p, e: f"sorted({e(LI)}, reverse={e(B)})",
        lambda p, e: (lambda k: f"sorted({e(LI)}, key=lambda {k}: {p.bound(I, k, lambda: e(I))})")(
            p.name("k")
        ),
        lambda p, e: f"list(reversed({e(LI)}))",
        lambda p, e: (lambda c: f"[{c[0]} for {c[1]} in {c[2]}{c[3]}]")(p.comp(e, I, e(LI), I)),
        lambda p, e: (lambda c: f"[{c[0]} for {c[1]} in {c[2]}{c[3]}]")(p.comp(e, S, e(LS), I)),
        lambda p, e: f"({e(LI)} + {e(LI)})",
        lambda p, e: f"({e(LI)} * {p.draw(SMALL)})",
        lambda p, e: f"{e(LI)}[{e(I)}:{e(I)}]",
        lambda p, e: f"sorted(set({e(LI)}))",
        lambda p, e: f"list(set({e(LI)}))",
        lambda p, e: f"list({e(D)}.values())",
        lambda p, e: f"[len({e(S)}), {e(I)}]",
        lambda p, e: f"list({e(S)}.encode())",
    ],
    LS: [
        lambda p, e: f"{e(S)}.split()",
        lambda p, e: f"{e(S)}.split({e(S)})",
        lambda p, e: f"sorted({e(LS)})",
        lambda p, e: (lambda c: f"[{c[0]} for {c[1]} in {c[2]}{c[3]}]")(p.comp(e, I, e(LI), S)),
        lambda p, e: (lambda c: f"[{c[0]} for {c[1]} in {c[2]}{c[3]}]")(p.comp(e, S, e(LS), S)),
        lambda p, e: f"list({e(D)})",
        lambda p, e: f"list({e(S)})",
        lambda p, e: f"({e(LS)} + {e(LS)})",
        lambda p, e: f"sorted({e(LS)}, key={p.pick(['len', 'str', 'abs'])})",
        lambda p, e: (
            lambda k: f"sorted({e(LS)}, key=lambda {k}: {p.bound(S, k, lambda: e(p.pick([S, I])))})"
        )(p.name("k")),
    ],
    D: [
        lambda p, e: (lambda c: f"{{{c[1]}: {c[0]} for {c[1]} in {c[2]}{c[3]}}}")(
            p.comp(e, S, e(LS), I)
        ),
        lambda p, e: f"dict(zip({e(LS)}, {e(LI)}))",
        lambda p, e: f"dict({e(D)})",
        lambda p, e: f"{{**{e(D)}, {e(S)}: {e(I)}}}",
        lambda p, e: f"dict({e(D)}, extra={e(I)})",
    ],
    X: [
        lambda p, e: f"tuple({e(LI)})",
        lambda p, e: f"set({e(LI)})",
        lambda p, e: (lambda c: f"{{{c[0]} for {c[1]} in {c[2]}{c[3]}}}")(p.comp(e, I, e(LI), I)),
        lambda p, e: f"list(enumerate({e(LS)}))",
        lambda p, e: f"list(zip({e(LI)}, {e(LS)}))",
        lambda p, e: f"list({e(D)}.items())",
        lambda p, e: f"({e(I)}, {e(S)}, {e(F)})",
        lambda p, e: f"[[{e(I)}], {e(LS)}, {{{e(S)}: [{e(B)}]}}]",
        lambda p, e: f"{e(S)}.encode()",
        lambda p, e: f"{{({e(I)}, {e(I)}): {e(S)}}}",
        lambda p, e: f"range({e(I)})",
        lambda p, e: f"enumerate({e(LS)})",
        lambda p, e: p.pick(["len", "sorted", "print"]),
        lambda p, e: f"{{{e(I)}: {e(S)}, None: {e(B)}, {e(F)}: 0}}",
    ],
}

PARAM_VALUES = st.one_of(
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6),
    st.text(max_size=8),
    st.lists(st.integers(-50, 50), max_size=5),
    st.lists(st.text(max_size=4), min_size=1, max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(-9, 9), max_size=4),
)


@st.composite
def programs(draw):
    params = draw(
        st.dictionaries(st.sampled_from(["p0", "p1", "p2", "p3"]), PARAM_VALUES, max_size=3)
    )
    prog = Program(draw, params)
    prog.block(0, draw(st.integers(1, 7)))
    if draw(st.integers(0, 4)):
        prog.lines.append(prog.expr(draw(st.sampled_from(TYPES))))
    return "\n".join(prog.lines) + "\n", params


# -- the suites -------------------------------------------------------------------

SLOW_OK = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]


@settings(max_examples=share(1.0), suppress_health_check=SLOW_OK)
@given(programs())
@example(("x = [3, 1, 2]\nx.sort()\nprint(x, sep='-')\n{'a': tuple(x), 1.5: {2, 1}}\n", {}))
@example(("s = 'a\\ud800b'\nprint(s)\ns\n", {}))
@example(("v1 = [1, 2]\nv1[p0]\n", {"p0": 7}))
@example(("x = 10\nfor i in range(3):\n    x = x // (2 - i)\nx\n", {}))
@example(("f'{3.14159:08.3f}|{\"ab\"!r:>6}|{255:x}'\n", {}))
@example(("sorted(['bb', 'a', 'ccc'], key=len)[0] + str(1 / 3)\n", {}))
@example(("d = {}\nd[(1, 2)] = 'x'\n[d, range(2), len]\n", {}))
def test_jail_agrees_with_plain_cpython_reuse_mode(reuse_jail, reference, case):
    src, params = case
    compare(reuse_jail, reference, src, params)


@settings(max_examples=share(0.15), suppress_health_check=SLOW_OK)
@given(programs())
def test_jail_agrees_with_plain_cpython_fresh_mode(fresh_jail, reference, case):
    src, params = case
    compare(fresh_jail, reference, src, params)


def _hypothesmith_programs():
    import hypothesmith

    return hypothesmith.from_grammar().filter(lambda src: lang.validate(src).valid)


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles candidates itself
@settings(max_examples=share(0.25), suppress_health_check=SLOW_OK)
@given(_hypothesmith_programs())
def test_grammar_generated_programs_agree(reuse_jail, reference, src):
    """Odd spellings the typed generator never writes: \\r\\n, form feeds, `;`, comments,
    continuation."""
    compare(reuse_jail, reference, src, {})


# -- the extended level: the typed programs, reshaped the way models write them ----


def _split_last(src: str):
    """(body lines, last expression or None) of a generated program."""
    import ast

    lines = src.rstrip("\n").split("\n")
    tree = ast.parse(src)
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr) and last.lineno == last.end_lineno == len(lines):
        return lines[:-1], lines[-1]
    return lines, None


def _indent(lines, n=4):
    return [" " * n + line for line in lines] or [" " * n + "pass"]


CAUGHT = "(ValueError, TypeError, ZeroDivisionError, KeyError, IndexError, AttributeError)"


@st.composite
def extended_programs(draw):
    """A typed program inside a function, a try, a bounded while, or with generator
    expressions and lambdas added: what the extended level adds, on programs whose
    plain-Python answer is known to be computable."""
    src, params = draw(programs())
    body, last = _split_last(src)
    shape = draw(st.sampled_from(["function", "try", "while", "generators"]))
    if shape == "function":
        lines = ["def main(k=1, *rest):", *_indent(body)]
        lines += [f"    return {last}" if last else "    return None", "main()"]
    elif shape == "try":
        lines = ["try:", *_indent(body), f"except {CAUGHT} as err:", "    print('caught', err)"]
        lines += ["else:", "    print('no error')", "finally:", "    print('done')"]
        lines += [last] if last else []
    elif shape == "while":
        lines = ["rounds = 0", "while rounds < 3:", "    rounds += 1", "    if rounds == 2:"]
        lines += ["        continue", *_indent(body), "    if rounds > 2:", "        break"]
        lines += ["else:", "    pass"] + ([last] if last else [])
    else:
        lines = [*body, "g = sum(n * 2 for n in range(5) if n % 2)", "h = lambda a, b=2: a * b"]
        lines += ["pairs = list((a, h(a)) for a in range(3))"]
        lines += [f"[{last}, g, pairs]" if last else "[g, pairs]"]
    return "\n".join(lines) + "\n", params


@settings(max_examples=share(0.5), suppress_health_check=SLOW_OK)
@given(extended_programs())
@example(("def f(n):\n    return 1 if n < 2 else n * f(n - 1)\nf(10)\n", {}))
@example(("try:\n    x = [1][3]\nexcept IndexError as e:\n    x = str(e)\nx\n", {}))
@example(("def f():\n    raise ValueError('no')\nf()\n", {}))
@example(("n = 0\nwhile True:\n    n += 1\n    if n > 4:\n        break\nn\n", {}))
@example(("assert 1 > 2, 'math'\n", {}))
def test_extended_programs_agree(extended_jail, reference, case):
    src, params = case
    compare(extended_jail, reference, src, params, "extended")


PYTHON_SHAPES = {
    "class": (
        "class Runner:\n    factor = 2\n    def __init__(self, k=1):\n        self.k = k\n"
        "    def run(self):\n{body8}\n        return {last}\n    def __repr__(self):\n"
        "        return f'Runner({{self.k}})'\nr = Runner()\n[r.run(), repr(r), r.factor]"
    ),
    "decorated": (
        "import functools\ndef twice(fn):\n    @functools.wraps(fn)\n"
        "    def inner(*a, **k):\n        fn(*a, **k)\n        return fn(*a, **k)\n"
        "    return inner\n@twice\ndef main():\n{body4}\n    return {last}\n"
        "[main(), main.__name__]"
    ),
    "dataclass": (
        "from dataclasses import dataclass, field\n@dataclass\nclass Result:\n"
        "    value: object = None\n    notes: list = field(default_factory=list)\n"
        "{body0}\nres = Result({last})\nres.notes.append(1)\n[repr(res), res == Result(res.value)]"
    ),
    "with": (
        "class Ctx:\n    def __init__(self):\n        self.log = []\n"
        "    def __enter__(self):\n        self.log.append('in')\n        return self\n"
        "    def __exit__(self, kind, exc, tb):\n"
        "        self.log.append('out' if kind is None else 'err')\n"
        "        return kind is not None and issubclass(kind, (ValueError, ZeroDivisionError))\n"
        "c = Ctx()\nwith c as handle:\n{body4}\n    out = {last}\nhandle.log"
    ),
    "generator": (
        "def produce():\n{body4}\n    yield {last}\n    yield from [1, 2]\n"
        "    return 'done'\ng = produce()\n[next(g), list(g)]"
    ),
    "match": (
        "{body0}\nmatch {last}:\n    case bool(b):\n        res = ('bool', b)\n"
        "    case int(real=r) if r > 2:\n        res = ('int', r)\n"
        "    case [first, *rest]:\n        res = ('seq', first, len(rest))\n"
        "    case {{'a': v, **others}}:\n        res = ('map', v, len(others))\n"
        "    case str() as text:\n        res = ('str', len(text))\n"
        "    case None | 0:\n        res = ('nothing',)\n    case _:\n        res = ('other',)\nres"
    ),
    "globals": (
        "import json\ntotal = 0\ndef bump(n):\n    global total\n    total += n\n"
        "    return total\n{body0}\nbump(1)\nbump(2)\n"
        "[json.dumps({last}, default=repr), total]"
    ),
}


@st.composite
def python_programs(draw):
    """A typed program inside a class's method, a decorated function, a generator, a match,
    next to a dataclass, inside a `with` over the program's context manager, or with an import and
    `global`: what the python level adds, on programs whose plain-Python answer is known."""
    src, params = draw(programs())
    body, last = _split_last(src)
    shape = draw(st.sampled_from(sorted(PYTHON_SHAPES)))
    text = PYTHON_SHAPES[shape].format(
        body0="\n".join(body) or "pass",
        body4="\n".join(_indent(body)),
        body8="\n".join(_indent(body, 8)),
        last=last or "None",
    )
    return text + "\n", params


@settings(max_examples=share(0.5), suppress_health_check=SLOW_OK)
@given(python_programs())
@example(("class A:\n    def __init__(self):\n        self.x = 1\nA().x\n", {}))
@example(("import json\njson.loads('{')\n", {}))
@example(
    (
        "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass P:\n"
        "    x: int\nP(1).x = 2\n",
        {},
    )
)
@example(
    (
        "class E(ValueError):\n    pass\ntry:\n    raise E('x')\nexcept E as e:\n"
        "    m = str(e)\nm\n",
        {},
    )
)
def test_python_programs_agree(python_jail, reference, case):
    src, params = case
    compare(python_jail, reference, src, params, "python")
