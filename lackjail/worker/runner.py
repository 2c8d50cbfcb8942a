"""The restricted runner: one validated program, executed in a bare namespace.

The namespace holds only the allowed builtins (with a capturing `print`),
the parameters and the tool stubs; `__builtins__` is empty. The program is
validated again here (the worker trusts nothing it is sent), compiled here
(the controller never compiles), and its last expression becomes the value.
"""

import _ast as ast  # the node classes: ast.py would bring re and enum into every jail
import _signal as signal  # setitimer without signal.py's enums
import builtins
import os
import resource
import select
import sys
import time

from lackjail import lang, plain, protocol
from lackjail.worker import facades, streams

SimpleNamespace = type(sys.implementation)  # types.SimpleNamespace: types.py costs every start
CodeType = type(compile("", "", "exec"))  # types.CodeType, likewise
FunctionType = type(lambda: None)  # types.FunctionType, likewise
ModuleType = type(sys)
FILENAME = "<lackpy>"
VALUE_NAME = "<value>"  # not an identifier: no program can read or bind it
MAX_MESSAGE = 2000
MAX_FRAMES = protocol.MAX_FRAMES  # program frames a traceback carries: the innermost
# Programs (up to that size) a reused child keeps the verdict and code of (its own: see _known)
CODES, CODES_BYTES = 32, 8 << 10
_CODES: dict = {}  # (text, names, level, session names) -> (code, the names it binds)
READ_SIZE = 1 << 16  # a pipe's whole buffer; more would only cost a bigger allocation per read


_STOPS: list = []  # this run's verdicts, (status, message), first first (run_one empties it)


class Stop(BaseException):
    """Ends the run with a verdict (limit, denied, memory ...); no program outlives it.

    `except Exception` does not catch a BaseException, but a python-level program may
    write a bare `except:` or `except BaseException:`, a `finally` block may replace it
    with another exception or `return`/`break` out of it, and a context manager's
    `__exit__` receives it (and may suppress it). So the first verdict of a run is kept
    in _STOPS, a list of this module's that no program reaches, and stays the run's
    verdict; no tool runs after it; and from then on every line, jump and call of the
    program's code raises it again (`_again`): whatever catches it, the program ends.
    """

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message
        if not _STOPS:
            _STOPS.append((status, message))
            sys.monitoring.set_events(MONITOR, _HELD)


# sys.monitoring (PEP 669) keeps the verdicts: a tool id of our own (0-2 and 5 are named for
# debuggers, coverage tools, profilers and optimizers), RAISE events on for the process's life
# (set in the zygote, before the fork: code objects are not re-instrumented per run), the
# events that stop a program after a verdict only once there is one.
MONITOR = 4
_EVENTS = sys.monitoring.events
_WATCH = _EVENTS.RAISE
_HOLD_EVENTS = _EVENTS.LINE | _EVENTS.JUMP | _EVENTS.PY_START | _EVENTS.PY_RESUME
# What holds a verdict: set by a C call where it is found, never through a function of ours,
# as a program's recursion may leave no room for one more Python frame there
_HELD = _WATCH | _HOLD_EVENTS
_MEMORY: list = [None]  # the memory verdict while a program runs (run_one), else None
# The opcode of `raise X` (the last instruction of this code), without importing opcode: a
# MemoryError a program raises itself is its own exception, not the memory limit.
_RAISE = compile("raise X", "", "exec").co_code[-2]


class _Raised:
    """RAISE's callback: a MemoryError while a program runs is the run's verdict, caught or
    not (the program would go on near its limit, or loop catching it until its CPU time ends),
    unless a `raise` statement raised it (the program's own, or a library's).

    An object, called through its __call__, not a function: where a runaway recursion ends,
    the call of a callback fails too, and its RecursionError takes the place of the one being
    raised (where it is raised, so the program's handlers see it as they would the other).
    Called as an object it fails at the same check, with the same words, as the program's own
    call did: a function would say "maximum recursion depth exceeded" where a call through C
    says "... while calling a Python object"."""

    __slots__ = ()

    def __call__(self, code, offset, exc):
        if (
            _MEMORY[0] is not None
            and isinstance(exc, MemoryError)
            and not _STOPS
            and code.co_code[offset] != _RAISE
        ):
            _STOPS.append(_MEMORY[0])
            sys.monitoring.set_events(MONITOR, _HELD)


def _again(code, *where):
    """After a verdict: the program's code raises it at its next line, jump or call, in a
    handler, a `finally` or an `__exit__` too; other code runs on (this place is not
    watched again until the run ends)."""
    if code.co_filename != FILENAME:
        return sys.monitoring.DISABLE
    raise Stop(*_STOPS[0])


def _release():
    """The run is over: back to RAISE events alone, every place watched again."""
    if sys.monitoring.get_events(MONITOR) != _WATCH:
        sys.monitoring.set_events(MONITOR, _WATCH)
        sys.monitoring.restart_events()


def _monitor() -> None:
    """Take MONITOR's tool id, from whatever holds it (in the jail nothing does): the
    python level's handlers are safe only with the hold in place."""
    if sys.monitoring.get_tool(MONITOR) != "lackjail":
        if sys.monitoring.get_tool(MONITOR) is not None:
            sys.monitoring.free_tool_id(MONITOR)
        sys.monitoring.use_tool_id(MONITOR, "lackjail")
    sys.monitoring.register_callback(MONITOR, _WATCH, _Raised())
    for event in (_EVENTS.LINE, _EVENTS.JUMP, _EVENTS.PY_START, _EVENTS.PY_RESUME):
        sys.monitoring.register_callback(MONITOR, event, _again)
    sys.monitoring.set_events(MONITOR, _WATCH)


_monitor()


class _Invalid(Exception):
    """The compiler refused a program the validator passed: (message, line, col)."""


class ToolError(Exception):
    """A tool call that the controller answered with an error."""


class Channel:
    """The run channel: frames in on one descriptor, frames out on another.

    The input descriptor is non-blocking: waiting for a tool's answer polls
    for a moment before it sleeps, because the answer usually comes within that
    moment and waking a sleeping process costs more than the answer took. A run
    frame is not due that soon: waiting for one sleeps in poll at once, with no
    failed read (its exception cost a spare ~20 us and two page faults).
    """

    def __init__(self, fd_in, fd_out):
        self.fd_in, self.fd_out = fd_in, fd_out
        self._poller = select.poll()
        self._poller.register(fd_in, select.POLLIN)
        self._buf = protocol.FrameBuffer(trusted=True)  # what the controller writes
        self._spin = protocol.Spin()

    def send(self, msg):
        data = memoryview(protocol.encode(msg))
        while data:
            data = data[os.write(self.fd_out, data) :]

    def _read(self, spin):
        """What the channel holds now (a whole frame, usually: the controller writes each
        in one go), after waiting for it (SPIN: an answer is due: protocol.Spin); b'' at end
        of file. No read is tried before the poll says there is something: a failed read
        raises, and every raise costs the run's monitor a call."""
        if spin:
            self._spin.poll(self._poller.poll)
        else:
            self._poller.poll()
        while True:
            try:
                return os.read(self.fd_in, READ_SIZE)
            except BlockingIOError:
                self._poller.poll()

    def recv(self, expect, spin=False):
        """The next frame, one of EXPECT; EOFError when the controller closed the channel."""
        while True:
            frame = next(self._buf.frames(expect), None)
            if frame is not None:
                return frame
            data = self._read(spin)
            if not data:
                raise EOFError(
                    "channel closed mid-frame" if self._buf.pending() else "channel closed"
                )
            self._buf.feed(data)


class Output:
    """Captured print output: capped, and sent as `output` frames promptly but in batches.

    Text written when nothing was sent for FLUSH_S goes out at once (so a long
    run shows its progress live); text written sooner waits, up to FLUSH_S or
    FLUSH_BYTES, for the next write, tool call or the end of the run. Text is
    dropped from the batch only once it was sent: a program deep in a recursion
    may have no room left for the calls that send it (RecursionError), and its
    text then goes with the next batch.
    """

    FLUSH_S = 0.05
    FLUSH_BYTES = 8192

    def __init__(self, channel, cap):
        self.channel, self.cap = channel, cap
        self.parts, self.pending, self.total = [], 0, 0
        self.sent_at = 0.0

    def write(self, text):
        """Add TEXT (what `file.write` takes: a str) to the output; its length."""
        if type(text) is not str:  # a str subclass's __len__ could say 0 and pass the cap
            if not isinstance(text, str):
                raise TypeError(f"write() argument must be str, not {type(text).__name__}")
            text = str.__str__(text)
        size = len(text)
        if self.total + size > self.cap:  # keep what fits, then stop the run
            self.parts.append(text[: self.cap - self.total])
            self.total = self.cap
            verdict = (
                "limit",
                f"output exceeds the {self.cap}-byte limit: the output is cut at that limit",
            )
            if not _STOPS:  # kept before Stop is made: a deep print may leave its __init__
                _STOPS.append(verdict)  # no room (a RecursionError the program may catch)
                sys.monitoring.set_events(MONITOR, _HELD)
            raise Stop(*verdict)
        self.total += size
        self.parts.append(text)
        self.pending += size
        if self.pending >= self.FLUSH_BYTES or time.monotonic() - self.sent_at >= self.FLUSH_S:
            try:
                self.flush()
            except RecursionError:
                pass  # the program's recursion left no room to send it: the next batch will
        return size

    def flush(self):
        if self.parts:
            text = "".join(self.parts)
            self.parts = [text]
            sent = 0
            try:
                while sent < len(text):
                    chunk = text[sent : sent + protocol.OUTPUT_CHUNK]
                    self.channel.send(protocol.make_output(plain.utf8(chunk)))
                    sent += len(chunk)
            finally:
                rest = text[sent:]
                self.parts, self.pending = ([rest] if rest else []), len(rest)
            self.sent_at = time.monotonic()


class LibraryOutput:
    """sys.stdout while a python-level program runs, what its print (CPython's own) and the
    standard library (re's DEBUG dump) write to: the run's Output, whose bound methods it
    holds, so that print's write costs one Python frame near the recursion limit, as few as
    can be. No program reaches it: the sys facade's stdout is streams.STDOUT."""

    __slots__ = ("write", "flush")

    def __init__(self, out):
        self.write, self.flush = out.write, out.flush


def make_print(out, language="lackpy"):
    def print(*args, sep=" ", end="\n"):  # noqa: A001 - the program's print
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("print(): sep and end must be strings")
        out.write(sep.join([str(a) for a in args]) + end)

    if language == "python":  # CPython's own, writing to sys.stdout: LibraryOutput
        return builtins.print
    return print


def wire_value(value, max_size):
    """The program's value as plain data: what plain data cannot hold becomes its text."""
    try:
        return plain.copy(value, "the value", max_size, lenient=True)
    except plain.PlainError as exc:
        raise Stop("limit", str(exc)) from None


def wire_args(args, kwargs, max_size):
    """A tool call's arguments as plain data; TypeError (the program's error) otherwise."""
    try:
        return plain.copy_call(args, kwargs, "the arguments", max_size)
    except plain.PlainError as exc:
        if exc.kind == "limit":
            raise Stop("limit", str(exc)) from None
        raise TypeError(str(exc)) from None


def make_stub(channel, out, name, counter, budget):
    def stub(*args, **kwargs):
        if _STOPS:  # the run has its verdict: nothing more reaches the controller
            raise Stop(*_STOPS[0])
        out.flush()
        counter[0] += 1
        seq = counter[0]
        wire, wire_kw = wire_args(args, kwargs, budget)
        channel.send(protocol.make_call(seq, name, wire, wire_kw))
        reply = channel.recv(("return",), spin=True)
        if reply["seq"] != seq:
            raise Stop("error", f"tool reply out of order (seq {reply['seq']}, expected {seq})")
        if reply["stop"]:
            raise Stop(reply["stop"], reply["error"] or f"{name} stopped the run")
        if not reply["ok"]:
            raise ToolError(f"{name}: {reply['error']}")
        return reply["value"]

    stub.__name__ = stub.__qualname__ = name.rpartition(".")[2]
    return stub


def _bind(namespace, name, fn):
    """Bind a tool; `pack.tool` names go into a namespace object `pack`."""
    pack, _, member = name.rpartition(".")
    if not pack:
        namespace[name] = fn
        return
    holder = namespace.get(pack)
    if not isinstance(holder, SimpleNamespace):
        holder = namespace[pack] = SimpleNamespace()
    setattr(holder, member, fn)


def _jail_tool(module, function):
    """A pure tool preloaded by the zygote from the worker package (no import here)."""
    mod = sys.modules.get(module)
    if not module.startswith("lackjail.worker.") or mod is None or function.startswith("_"):
        raise ValueError(f"{module}.{function} is not a tool of the worker image")
    return getattr(mod, function)


def _program_frames(exc, source, code):
    """The program's call chain in EXC's traceback, outermost first, as plain data:
    {function, line, col} for each frame of a program's own code (never one of lackjail's).
    COL is 1-based and counts characters of SOURCE (the compiler's offsets count UTF-8
    bytes). A frame of code an earlier run of the session compiled (not within CODE, this
    run's) is marked `earlier`, with its line in that run's program and no column. Of a chain
    deeper than MAX_FRAMES (a runaway recursion), the innermost MAX_FRAMES, and how many outer
    ones were left out."""
    ours = _code_tree(code) if code is not None else None
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frame_code = tb.tb_frame.f_code
        if frame_code.co_filename == FILENAME and tb.tb_lineno is not None:
            earlier = ours is not None and frame_code not in ours
            col = None
            for index, pos in enumerate(frame_code.co_positions()):
                if index == tb.tb_lasti // 2:
                    col = pos[2]
                    break
            name = frame_code.co_name[: protocol.MAX_FUNCTION]  # the host refuses longer
            frames.append([name, tb.tb_lineno, None if earlier else col, earlier])
        tb = tb.tb_next
    omitted = max(0, len(frames) - MAX_FRAMES)
    frames = frames[omitted:]
    lines = None
    for frame in frames:
        line, col = frame[1], frame[2]
        if col is not None:
            if lines is None:  # \n, \r, \r\n only, as the compiler counts lines
                lines = lang.decode_source(source).encode("utf-8").splitlines()
            if 0 < line <= len(lines):
                col = len(lines[line - 1][:col].decode("utf-8", "replace"))
            frame[2] = col + 1
    return [
        {
            "function": name,
            "line": line,
            **({"col": col} if col is not None else {}),
            **({"earlier": True} if earlier else {}),
        }
        for name, line, col, earlier in frames
    ], omitted


def _code_tree(code):
    """CODE and every code object compiled inside it (functions, classes, lambdas ...)."""
    found, todo = set(), [code]
    while todo:
        item = todo.pop()
        found.add(item)
        todo.extend(c for c in item.co_consts if type(c) is CodeType and c not in found)
    return found


def _describe(exc):
    """`Type: message` of EXC; a program's exception class may define a `__str__` that fails
    (or, after a stop verdict, raises it again: the verdict is the run's, this text is not)."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:
        return f"{type(exc).__name__}: (its message could not be made into text)"


def _runtime_error(message, exc, source, code):
    """The error of a run the program's code ended: MESSAGE at the innermost frame of this
    run's program, with the traceback (outermost first)."""
    frames, omitted = _program_frames(exc, source, code)
    error = {"message": message[:MAX_MESSAGE]}
    here = [f for f in frames if not f.get("earlier")]
    if here:
        error["line"], error["col"] = here[-1]["line"], here[-1].get("col")
    if frames:
        error["traceback"] = frames
        if omitted:
            error["traceback_omitted"] = omitted
    return error


def _compiled(tree):
    """The code of the validated TREE, its last expression assigned to VALUE_NAME; _Invalid
    for what only the compiler refuses (a validator gap)."""
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tree.body[-1] = _assign_value(tree.body[-1])
    try:
        return compile(tree, FILENAME, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise _Invalid(exc.msg, exc.lineno, exc.offset) from None


def _known(key, code, variables):
    """Keep the CODE of a program this child's own validator accepted, and the names it
    binds, under KEY: its text, the tool and parameter names, the level and the session's
    names, everything the verdict depends on. The same KEY always gets the same verdict, so
    a reused child running it again neither validates nor compiles it again; anything else
    (the same text without a name it uses, at a lower level, ...) is validated here again.
    Nothing the controller says is taken on trust: only this child's own verdicts are kept.
    A code object is immutable and each run execs it in a namespace of its own."""
    if len(_CODES) >= CODES:
        del _CODES[next(iter(_CODES))]  # the oldest
    _CODES[key] = code, tuple(variables)


def _assign_value(last):
    """`<value> = EXPR` for the program's last expression statement LAST, every node
    placed where LAST is (cheaper than `ast.fix_missing_locations` over the whole tree)."""
    place = {
        "lineno": last.lineno,
        "col_offset": last.col_offset,
        "end_lineno": last.end_lineno,
        "end_col_offset": last.end_col_offset,
    }
    return ast.Assign(
        targets=[ast.Name(VALUE_NAME, ast.Store(), **place)], value=last.value, **place
    )


# A program's recursion limit is a script's: the runner's frames below it do not count.
RECURSION_LIMIT = sys.getrecursionlimit()


def _depth():
    """How many frames are below the program's module frame (the runner's own)."""
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _cpu_ms(usage):
    return (usage.ru_utime + usage.ru_stime) * 1000


def run_one(channel, msg, limits):
    """Run the program in MSG; returns the result frame, whatever the program did.

    The run gets the CPU limit for itself: a profiling timer (CPU time, SIGPROF,
    whose default action ends the process) armed now and disarmed at the end.
    A run may ask for less CPU than the child's limit, never more (the zygote
    lowers its address space, which a confined child cannot). A session's run
    starts from the globals its child's earlier runs left.
    """
    cpu_start = _cpu_ms(resource.getrusage(resource.RUSAGE_SELF))
    cpu_s = _tighter(limits["cpu_s"], msg["cpu_s"])
    if cpu_s:
        signal.setitimer(signal.ITIMER_PROF, cpu_s)
    memory_mb = _tighter(limits["memory_mb"], msg["memory_mb"])  # the zygote set it (prlimit)
    kept = _SESSION.get("globals") if msg["session"] else None
    code = None  # this run's, once compiled
    if kept is None:
        out, counter = Output(channel, limits["output_bytes"]), [0]
    else:  # the same ones, so a print or tool an earlier run stored writes to this run's
        out, counter = _SESSION["out"], _SESSION["counter"]
        out.__init__(channel, limits["output_bytes"])
        counter[0] = 0
    status, value, errors = "ok", None, []
    _STOPS.clear()
    try:
        params, jail_tools = msg["params"], msg["jail_tools"]
        host_tools = [n for n in msg["tools"] if isinstance(n, str) and n not in jail_tools]
        language = msg["language"]
        defined = _SESSION["names"] if kept is not None else ()
        key = (msg["src"], (*host_tools, *jail_tools), (*params,), language, frozenset(defined))
        code, variables = _CODES.get(key, (None, ()))
        if code is None:
            check, tree = lang.validate_tree(
                msg["src"],
                tools=key[1],
                params=key[2],
                language=language,
                defined=defined,
            )
            if check.valid:
                code, variables = _compiled(tree), check.variables
                if limits["runs_per_child"] > 1 and len(msg["src"]) <= CODES_BYTES:
                    _known(key, code, variables)
        if code is None:
            status = "invalid"
            errors = [{"message": e.message, "line": e.line, "col": e.col} for e in check.errors]
        else:
            if kept is not None:
                namespace = kept
            else:
                namespace = _namespace(language)
                if msg["session"]:
                    _SESSION.update(globals=namespace, names=set(), out=out, counter=counter)
            if msg["session"]:  # what the next run may use: this one's bindings and params
                _SESSION["names"].update(variables, params)
            if language == "python":
                # what it writes to the sys facade's streams, and what its print and the
                # standard library write to sys.stdout, is its output
                streams.TARGET[0] = out
                sys.stdout = LibraryOutput(out)
                if msg["seed"] is not None:
                    facades.reseed(msg["seed"])
            namespace["print"] = facades.OUTPUT[0] = make_print(out, language)
            namespace.update(params)
            for name in host_tools:
                _bind(
                    namespace, name, make_stub(channel, out, name, counter, limits["value_bytes"])
                )
            for name, target in jail_tools.items():
                _bind(namespace, name, _jail_tool(*target))
            namespace["__builtins__"] = _builtins(language)
            facades.BELOW[0] = below = _depth()
            try:
                sys.setrecursionlimit(RECURSION_LIMIT + below)
                _MEMORY[0] = ("memory", f"memory limit of {memory_mb} MB exceeded")
                # called as a function, not exec()'d: the program's frame is pushed in this
                # one's evaluation loop, as a script's is in the interpreter's first, so its C
                # recursion allowance is a script's too (what a deep recursion through C ends
                # with, and the message it gives, are CPython's)
                FunctionType(code, namespace)()
            finally:
                _MEMORY[0] = None  # what the runner does next is not the program's
                # the program may have set a limit that leaves no room for the runner's calls
                sys.setrecursionlimit(RECURSION_LIMIT + below)
            try:
                value = wire_value(namespace.get(VALUE_NAME), limits["value_bytes"])
            finally:
                namespace.pop(VALUE_NAME, None)
            out.flush()
    except _Invalid as exc:
        message, line, col = exc.args
        status, errors = (
            "invalid",
            [{"message": str(message)[:MAX_MESSAGE], "line": line, "col": col}],
        )
    except Stop:
        pass  # its verdict is in _STOPS (below)
    except MemoryError:
        status, value = "memory", None
        errors = [{"message": f"memory limit of {memory_mb} MB exceeded"}]
    except ToolError as exc:
        status, value = "error", None
        errors = [_runtime_error(str(exc), exc, msg["src"], code)]
    except BaseException as exc:  # a python-level program may raise SystemExit and the like
        status, value = "error", None
        errors = [_runtime_error(_describe(exc), exc, msg["src"], code)]
    _release()
    if _STOPS:  # whatever the program did after it (finally, __exit__), the stop holds
        held, message = _STOPS[0]
        status, value, errors = held, None, [{"message": str(message)[:MAX_MESSAGE]}]
    if status != "ok":
        try:
            out.flush()
        except Stop:
            pass
    signal.setitimer(signal.ITIMER_PROF, 0)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_ms = round(_cpu_ms(usage) - cpu_start, 3)
    errors = [{k: v for k, v in e.items() if v is not None} for e in errors]
    return protocol.make_result(msg["id"], status, value, errors, cpu_ms, usage.ru_maxrss)


# A session child's globals, kept from one run to the next, the names its runs bound (as their
# validation found them: the next run's validator may let the program use them), and the
# output and tool-call counter that every run's print and tool stubs share.
_SESSION: dict = {}


def _tighter(own, asked):
    """The run's limit: ASKED when it is set and below the child's OWN (0: none)."""
    if asked and (not own or asked < own):
        return asked
    return own


def _namespace(language):
    """A run's fresh namespace: its level's names. A python-level program runs in a module
    of its own, `__main__` while it runs, as a script does: the standard library finds a
    class's module there (dataclasses' string annotations, namedtuple, enum); its level's
    names are its builtins (PYTHON_BUILTINS), not copied into it."""
    if language != "python":
        return dict(NAMESPACES[language])
    module = ModuleType("__main__")
    sys.modules["__main__"] = module
    return module.__dict__


def _builtins(language):
    """The run's `__builtins__`: empty, but at the python level its names and what `class`
    and `import` statements look up there (no program can name either: '__')."""
    return PYTHON_BUILTINS if language == "python" else {}


def _load_builtins():
    return {  # every level's: a run's namespace takes its own level's names from these
        name: facades.GUARDED.get(name) or getattr(builtins, name)
        for name in lang.LEVELS["python"].builtins
        if hasattr(builtins, name)
    }


BUILTINS = _load_builtins()


def _load_exceptions():
    """The exception classes a program above the lackpy level may name; ToolError is ours."""
    return {
        name: ToolError if name == "ToolError" else getattr(builtins, name)
        for name in lang.LEVELS["python"].exceptions
    }


EXCEPTIONS = _load_exceptions()


def _load_namespaces():
    """Each level's starting namespace (its builtins and exception classes), built once: a
    run copies its level's and adds print, parameters and tools."""
    namespaces = {}
    for name, level in lang.LEVELS.items():
        namespace = {n: BUILTINS[n] for n in level.builtins if n in BUILTINS}
        namespace.update({n: EXCEPTIONS[n] for n in level.exceptions})
        namespaces[name] = namespace
    return namespaces


NAMESPACES = _load_namespaces()
# Shared by every python-level run of a child (which serves no other program): a program
# never names `__builtins__`, so it reads these names and never changes them.
PYTHON_BUILTINS = {
    **NAMESPACES["python"],
    "__build_class__": builtins.__build_class__,
    "__import__": facades.importer,
}


WARM_UP = """\
words = ["a", "bb", "ccc"]
sizes = {w: len(w) for w in words if w}
total = 0
for w in sorted(words, key=lambda w: -len(w)):
    total += sizes[w] * 2 if w else 0
print(f"{total} {str(total)}")
[total, len(sizes), max(sizes.values())]
"""


# A child's own warm-up: the smallest program that takes every run's path (validate, compile,
# exec, encode the value), so those pages are copied before the child says `ready`. The
# zygote ran WARM_UP (above) before its first fork, so the caches are filled; a child that
# repeated it spent ~650 us more CPU and copied ~60 more pages, to save a 20-line program
# ~140 us of its run and a trivial one nothing (measured in the jail).
CHILD_WARM_UP = "v = [1]\nv"


class _Sink:
    """A channel that encodes and drops, for the warm-up run."""

    @staticmethod
    def send(msg):
        protocol.encode(msg)


# The python level's warm-up, run by a zygote that serves that level: its own paths
# (class creation, `with`) specialised once. It imports nothing: a zygote loads a facade
# module when a program first needs it.
PYTHON_WARM_UP = """\
class Item:
    def __init__(self, name):
        self._n = len(name)
        self.name = name
class Box(Item):
    def __init__(self, name):
        super().__init__(name)
    def __repr__(self):
        return f"Box({self.name!r})"
class Ctx:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
with Ctx() as c:
    pass
[repr(Box("x")), Item("y").name]
"""
# And the imports and the facades' common calls, where a zygote loaded all its modules
# at its start (a session's).
PYTHON_MODULES_WARM_UP_NEEDS = ("json", "dataclasses", "collections")
PYTHON_MODULES_WARM_UP = """\
import json
from dataclasses import dataclass, field
from collections import Counter
@dataclass
class Item:
    name: str
    tags: list = field(default_factory=list)
    def __post_init__(self):
        self._n = len(self.name)
data = json.loads(json.dumps({"a": [1, 2]}))
[repr(Item("y")), data, Counter("abca").most_common(1)]
"""


def warm_up(limits, program=WARM_UP, language="lackpy"):
    """Run a fixed program of our own before any untrusted one: the pages the run
    path touches are copied now, off the critical path, not during the first run. Each
    time it takes the whole path: from the run frame's bytes, as the channel decodes them
    (a child's first receive otherwise copied ~11 pages while its run waited), and as a
    one-run child's, whose verdicts are not kept."""
    main = sys.modules.get("__main__")
    once = {**limits, "runs_per_child": 1}
    received = protocol.FrameBuffer(trusted=True)  # the run frame as the channel takes it in
    received.feed(protocol.encode(protocol.make_run("warm", program, {}, [], {}, language)))
    run_one(_Sink, next(received.frames(("run",))), once)
    if main is not None:
        sys.modules["__main__"] = main  # a python-level run made its own


def serve(fd_in, fd_out, limits, gen):
    """Say `ready`, then answer up to runs_per_child run frames (1 in fresh mode)."""
    channel = Channel(fd_in, fd_out)
    channel.send(protocol.make_ready(gen))
    for _ in range(limits["runs_per_child"]):
        try:
            msg = channel.recv(("run",))
        except (EOFError, protocol.ProtocolError, OSError):
            return
        result = run_one(channel, msg, limits)
        try:
            channel.send(result)
        except protocol.ProtocolError as exc:
            error = {"message": f"the value cannot be returned: {exc}"[:MAX_MESSAGE]}
            channel.send(
                protocol.make_result(
                    result["id"], "limit", None, [error], result["cpu_ms"], result["max_rss_kb"]
                )
            )
        if not protocol.keeps_child(result["status"]) or _leaves_state(msg):
            # the process may be in a bad state, or hold what a python-level program left
            # in its classes and modules: a fresh child takes over
            return


def _leaves_state(msg) -> bool:
    """A python-level program may change the classes of the modules it imported: its
    child serves no other program (a session's own runs share its state by choice)."""
    return msg["language"] == "python" and not msg["session"]
