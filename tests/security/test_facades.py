"""The python level's facades, in this process: each holds exactly its table's names, the
importer hands out nothing else, and the objects they reach, read without '__' names (as a
validated program reads them), lead to no module, frame, code, traceback, file object or
builtins namespace."""

import abc
import builtins
import copy
import enum
import io
import os
import sys
import time
import types

import pytest

from lackjail.lang.facades import FACADES
from lackjail.lang.grammar import NAMESPACE_DUNDERS
from lackjail.worker import facades, runner, streams

MODULE_ATTRIBUTES = {"__name__", "__doc__", "__package__", "__loader__", "__spec__"}


@pytest.fixture(scope="module")
def modules():
    with pytest.MonkeyPatch.context() as patch:  # load() names the zone, as in the jail
        patch.setenv("TZ", os.environ.get("TZ", ""))
        yield facades.load()
    time.tzset()


def test_each_facade_holds_exactly_its_names(modules):
    assert set(modules) == set(FACADES)
    for name, facade in modules.items():
        assert isinstance(facade, types.ModuleType)
        assert set(vars(facade)) - MODULE_ATTRIBUTES == set(FACADES[name]), name
        assert facade is not sys.modules[name]
    for module, leak in [
        ("typing", "sys"),
        ("json", "codecs"),
        ("dataclasses", "sys"),
        ("collections", "abc"),
        ("re", "_compiler"),
        ("functools", "singledispatch"),
    ]:
        assert not hasattr(modules[module], leak), (module, leak)


def test_the_importer_hands_out_facades_only(modules):
    assert facades.importer("json") is modules["json"]
    assert facades.importer("json", None, None, ("loads",), 0) is modules["json"]
    for name in ("os", "builtins", "_strptime", "importlib"):
        assert facades.importer(name) is None  # loaded: a C caller reads sys.modules itself
    assert facades.importer("sys") is modules["sys"]
    for leak in ("modules", "argv", "stdin", "__stdout__", "path", "_getframe", "settrace"):
        assert not hasattr(modules["sys"], leak), leak
    assert not hasattr(modules["sys"], "exit") and not hasattr(modules["sys"], "displayhook")
    assert modules["sys"].stdout is streams.STDOUT and modules["sys"].stderr is streams.STDERR
    with pytest.raises(ImportError):
        facades.importer("no_such_module_here")
    with pytest.raises(ImportError):
        facades.importer("json", None, None, (), 1)  # relative


def test_the_importer_fails_closed_for_a_facade_not_loaded_in_the_child(modules, monkeypatch):
    """The controller lends a run a child that has its modules loaded; were it not so, an
    import statement gets a clear ImportError, never the real module and never an import.
    C code importing for a side effect (a list for a fromlist) gets None, as from a loaded
    module: it reads sys.modules itself."""
    loaded = {k: v for k, v in modules.items() if k not in ("json", "csv")}
    monkeypatch.setattr(facades, "MODULES", loaded)
    for fromlist in (None, ("loads",)):
        with pytest.raises(ImportError, match="'json' was not loaded in this jail's child"):
            facades.importer("json", None, None, fromlist, 0)
    assert facades.importer("json", None, None, [], 0) is None
    assert facades.importer("re") is modules["re"]
    monkeypatch.delitem(sys.modules, "csv")  # a facade's module the zygote never imported
    for fromlist in (None, []):
        with pytest.raises(ImportError):
            facades.importer("csv", None, None, fromlist, 0)
    assert "csv" not in sys.modules


def test_type_hands_out_no_metaclass():
    jail_type = facades.TYPE
    assert jail_type(1) is int and jail_type("a") is str
    for cls in (int, type, facades.ModuleType, jail_type):  # type(int) is type, as in CPython
        assert jail_type(cls) is jail_type
    for cls in (abc.ABC, enum.Enum):  # made by a metaclass: type() would hand it out
        with pytest.raises(TypeError, match="isinstance"):
            jail_type(cls)
    assert isinstance(int, jail_type) and isinstance(jail_type, jail_type)
    assert not isinstance(1, jail_type) and issubclass(abc.ABCMeta, jail_type)
    assert repr(jail_type) == "<class 'type'>" and jail_type.__name__ == "type"
    assert copy.deepcopy(jail_type) is jail_type and copy.copy([jail_type])[0] is jail_type
    assert not hasattr(jail_type, "__dict__") and not hasattr(jail_type, "mro")
    alias = jail_type[int]  # an annotation's type[int]: calling it calls the jail's type
    assert repr(alias) == "type[int]" and alias(1) is int
    with pytest.raises(TypeError, match="jail"):
        alias("A", (), {"__getattr__": len})
    assert isinstance(int, jail_type | None) and not isinstance(1, None | jail_type)


def _init(self, v):
    self.v = v


@pytest.mark.parametrize(
    "args",
    [
        ("A", (), {"__getattr__": lambda s, n: n}),
        ("A", (), {"__getattribute__": object.__getattribute__}),
        ("A", (), {"__init_subclass__": classmethod(lambda c: None)}),
        ("A", (), {"__set_name__": lambda *a: None}),
        ("A", (), {"__class_getitem__": lambda *a: None}),
        ("A", (), {"__del__": lambda s: None}),
        ("A", (), {"__reduce_ex__": lambda s, p: None}),
        ("A", (), {"__new__": lambda c: None}),
        ("A", (), {"__get__": lambda *a: None}),
        ("A", (), {"__module__": "os"}),
        ("A", (), {"__classcell__": None}),
        ("A", (), {"__private": 1}),
        ("A", (), {1: 2}),
        ("A", (), {"__slots__": ("__dict__",)}),
        ("A", (), {"__slots__": "__weakref__"}),
        ("A", (), {"__slots__": [1]}),
        ("A", (type,), {}),  # a metaclass
        ("A", (abc.ABC,), {}),  # a class made by a metaclass other than type
        ("A", (enum.Enum,), {}),
        ("A", (facades.TYPE,), {}),
        ("A", (len,), {}),
        ("A", (), type("D", (dict,), {})()),  # a subclass could show the checks other items
        (type("S", (str,), {})("A"), (), {}),
        ("A", type("T", (tuple,), {})(), {}),
    ],
)
def test_type_refuses_what_a_class_statement_cannot_make(args):
    with pytest.raises(TypeError) as info:
        facades.TYPE(*args)
    assert "jail" in str(info.value), info.value


def test_type_makes_what_a_class_statement_makes():
    jail_type = facades.TYPE
    namespace = {"__init__": _init, "__doc__": "d", "__slots__": ["v"], "k": 1}
    made = jail_type("M", (Exception,), namespace)
    namespace["k"] = 2  # the class took a copy
    assert made.__name__ == "M" and made.__doc__ == "d" and made.k == 1 and made(3).v == 3
    assert made.__module__ == __name__ and made.__slots__ == ("v",)  # its caller's module
    assert type(made) is type and issubclass(made, Exception)
    assert set(NAMESPACE_DUNDERS) >= {"__init__", "__repr__", "__eq__", "__doc__"}
    with pytest.raises(TypeError, match=r"^type\(\) takes 1 or 3 arguments$"):
        jail_type("A", ())
    with pytest.raises(TypeError, match=r"argument 2 must be tuple, not list"):
        jail_type("A", [], {})  # CPython's own error where nothing is made
    with pytest.raises(TypeError, match=r"^A.__init_subclass__\(\) takes no keyword arguments"):
        jail_type("A", (), {}, x=1)

    class Hooked:
        def __init_subclass__(cls, **kwargs):
            cls.got = kwargs

    with pytest.raises(TypeError, match="jail"):  # no class hook receives keywords
        jail_type("A", (Hooked,), {}, x=1)


class _Channel:
    """A run channel that keeps what is sent."""

    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg["text"])


def test_the_streams_write_into_the_programs_output_and_hold_nothing():
    channel = _Channel()
    streams.TARGET[0] = out = runner.Output(channel, 1000)
    try:
        print("a", 1, file=streams.STDOUT)
        print("b", file=streams.STDERR, flush=True)
        assert streams.STDOUT.write("c") == 1
        streams.STDERR.writelines(["d", "e"])
        with pytest.raises(TypeError, match=r"^write\(\) argument must be str, not bytes$"):
            streams.STDOUT.write(b"x")
        out.flush()
    finally:
        streams.TARGET[0] = None
    assert "".join(channel.sent) == "a 1\nb\ncde"
    assert str(type(streams.STDOUT)) == "<class '_io.TextIOWrapper'>"  # as a script's says
    assert repr(streams.STDERR) == "<_io.TextIOWrapper name='<stderr>' mode='w' encoding='utf-8'>"
    public = {name for name in dir(streams.STDOUT) if not name.startswith("_")}
    assert public == {
        *("closed encoding errors line_buffering mode name".split()),
        *("flush isatty readable seekable writable write writelines".split()),
    }
    assert not hasattr(streams.STDOUT, "__dict__") and not hasattr(streams.STDOUT, "buffer")
    with pytest.raises(AttributeError):
        streams.STDOUT.encoding = "latin-1"
    with pytest.raises(AttributeError):
        streams.STDOUT.fileno = lambda: 1
    with pytest.raises(TypeError, match="cannot pickle"):
        copy.copy(streams.STDOUT)


def test_the_recursion_limit_is_the_programs_own_and_bounded(modules):
    jail_sys, real, below = modules["sys"], sys.getrecursionlimit(), facades.BELOW[0]
    facades.BELOW[0] = 5  # the frames below the program's
    try:
        jail_sys.setrecursionlimit(500)
        assert (jail_sys.getrecursionlimit(), sys.getrecursionlimit()) == (500, 505)
        jail_sys.setrecursionlimit(10**9)  # lowered to what the jail sustains
        assert jail_sys.getrecursionlimit() == facades.MAX_RECURSION_LIMIT
        with pytest.raises(ValueError, match="greater or equal than 1"):
            jail_sys.setrecursionlimit(0)
        with pytest.raises(OverflowError, match="too large to convert to C int"):
            jail_sys.setrecursionlimit(2**31)
        with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
            jail_sys.setrecursionlimit(1.5)
        with pytest.raises(RecursionError, match="cannot set the recursion limit to 3 at the"):
            jail_sys.setrecursionlimit(3)
        assert jail_sys.getrecursionlimit() == facades.MAX_RECURSION_LIMIT  # unchanged
    finally:
        sys.setrecursionlimit(real)
        facades.BELOW[0] = below


def test_wrapped_names_take_no_attribute_names(modules):
    def f():
        return 1

    with pytest.raises(TypeError):
        modules["functools"].wraps(f, updated=("__globals__",))
    with pytest.raises(TypeError):
        modules["functools"].update_wrapper(f, f, ("__globals__",))
    with pytest.raises(ValueError):
        modules["hashlib"].new("md4")

    class Yes(str):  # says it equals any name, and hashes as one that is allowed
        def __eq__(self, other):
            return True

        def __hash__(self):
            return hash("md5")

    with pytest.raises(ValueError, match="sm3"):
        modules["hashlib"].new(Yes("sm3"))
    assert modules["hashlib"].new("sha256", b"x").hexdigest().startswith("2d711642")
    printed = []
    facades.OUTPUT[0] = printed.append
    modules["pprint"].pprint({"b": 1, "a": 2})
    modules["pprint"].pp({"b": 1, "a": 2})
    stream = io.StringIO()
    modules["pprint"].pprint([1], stream=stream)
    assert printed == ["{'a': 2, 'b': 1}", "{'b': 1, 'a': 2}"] and stream.getvalue() == "[1]\n"


BAD = (
    types.ModuleType,
    types.FrameType,
    types.CodeType,
    types.TracebackType,
    io.TextIOWrapper,
    io.BufferedWriter,
    io.BufferedReader,
    io.FileIO,
)


def _instances(m):
    """An object of each kind a program makes from the facades."""

    @m["dataclasses"].dataclass
    class Record:
        x: int = 1

    class Color(m["enum"].Enum):
        A = 1

    def f(x):
        return x

    return [
        m["json"].JSONDecoder(),
        m["json"].JSONEncoder(),
        m["json"].JSONDecodeError("m", "d", 0),
        m["re"].compile("(x)"),
        m["re"].match("(x)", "x"),
        m["csv"].reader([]),
        m["csv"].writer(m["io"].StringIO()),
        m["csv"].DictReader([]),
        m["csv"].DictWriter(m["io"].StringIO(), ["a"]),
        m["csv"].Sniffer(),
        m["io"].StringIO(),
        m["io"].BytesIO(),
        m["random"].Random(),
        m["difflib"].SequenceMatcher(None, "a", "b"),
        m["difflib"].HtmlDiff(),
        m["textwrap"].TextWrapper(),
        m["string"].Template("$x"),
        m["statistics"].NormalDist(),
        m["decimal"].Context(),
        m["decimal"].Decimal(1),
        m["fractions"].Fraction(1, 3),
        m["datetime"].datetime.now(),
        m["time"].localtime(),
        m["uuid"].uuid4(),
        m["hashlib"].sha256(),
        m["dataclasses"].fields(Record),
        Record(),
        Color.A,
        Color,
        m["functools"].partial(f, 1),
        m["functools"].lru_cache(f),
        m["functools"].wraps(f)(lambda: 1),
        m["functools"].cached_property(f),
        m["functools"].partialmethod(f, 1),
        m["functools"].cmp_to_key(lambda a, b: 0)(1),
        m["typing"].TypeVar("T"),
        m["typing"].List[int],
        m["typing"].Optional[int],
        m["typing"].NamedTuple("Q", [("a", int)]),
        m["typing"].TypedDict("TD", {"a": int}),
        m["collections"].namedtuple("P", "a b")(1, 2),
        m["collections"].Counter("ab"),
        m["collections"].defaultdict(list),
        m["collections"].ChainMap(),
        m["collections"].UserDict(),
        m["itertools"].groupby([1]),
        m["itertools"].tee([1])[0],
        m["operator"].itemgetter(1),
        m["queue"].Queue(),
        m["queue"].PriorityQueue(),
        m["contextlib"].ExitStack(),
        m["contextlib"].suppress(KeyError),
        m["calendar"].Calendar(),
        m["calendar"].HTMLCalendar(),
        m["struct"].Struct("<I"),
        m["array"].array("i", [1]),
        m["zlib"].compressobj(),
        m["urllib.parse"].urlparse("http://a/b?c=d"),
        m["collections.abc"].Mapping,
        m["numbers"].Number,
        m["contextvars"].ContextVar("v", default=1),
        m["contextvars"].ContextVar("w").set(1),
        m["contextvars"].copy_context(),
        m["contextvars"].Context(),
        facades.TYPE,
        facades.TYPE("T", (), {}),
    ]


def test_no_module_frame_code_or_stream_is_reachable_without_dunders(modules):
    found, seen = [], set()
    forbidden = {id(builtins.__dict__), id(sys.modules), id(vars(sys))}

    def walk(obj, path, depth):
        if id(obj) in seen or depth > 4:
            return
        seen.add(id(obj))
        if depth > 0 and isinstance(obj, BAD) or id(obj) in forbidden:
            found.append(path)
            return
        if isinstance(obj, (str, bytes, int, float, complex, bool, type(None))):
            return
        if isinstance(obj, dict):
            for key, value in list(obj.items())[:200]:
                walk(value, f"{path}[{key!r}]", depth + 1)
            return
        if isinstance(obj, (list, tuple, set, frozenset)):
            for index, value in enumerate(list(obj)[:50]):
                walk(value, f"{path}[{index}]", depth + 1)
            return
        for name in dir(obj):
            if name.startswith("__"):
                continue
            try:
                value = getattr(obj, name)
            except Exception:
                continue
            walk(value, f"{path}.{name}", depth + 1)

    for name, facade in modules.items():
        walk(facade, name, 0)
    for index, obj in enumerate(_instances(modules)):
        walk(obj, f"instance{index}", 1)
    assert len(seen) > 1500  # the walk went somewhere
    assert not found, found


def test_a_dataclass_field_is_named_as_a_class_body_names_it(modules):
    """dataclasses writes field names into the text of the methods it makes and exec()s it,
    and asdict, astuple and replace read attributes by them: a name that is code ran beyond
    the validator's sight (a TypedDict's keys copied onto a class by update_wrapper), and a
    Field renamed to a dunder read that attribute (`__reduce_ex__`: copyreg's functions)."""
    dataclasses = modules["dataclasses"]
    code = "a,1/0)#"  # in __eq__'s text: `return (self.a,1/0)#,)==(other.a,1/0)#,)`
    for names in ({code: int}, {"__class__": int}):
        typed = modules["typing"].TypedDict("T", names)

        class Copied:
            a = 1

        with pytest.raises(AttributeError):  # after __annotations__ was set: a class's
            modules["functools"].update_wrapper(Copied, typed)  # __dict__ has no update
        with pytest.raises(TypeError, match="field's name must be an identifier"):
            dataclasses.dataclass(Copied, init=False, repr=False)

    @dataclasses.dataclass(frozen=True, order=True)
    class Plain:
        x: int = 1
        _y: str = "b"

    field = dataclasses.fields(Plain)[0]
    for name in ("__reduce_ex__", code, 1):
        with pytest.raises(TypeError, match="field's name must be an identifier"):
            field.name = name
    assert dataclasses.astuple(Plain(2)) == (2, "b") and Plain() < Plain(2)
    assert dataclasses.replace(Plain(), _y="c")._y == "c"
