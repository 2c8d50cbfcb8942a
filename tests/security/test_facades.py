"""The python level's facades, in this process: each holds exactly its table's names, the
importer hands out nothing else, and the objects they reach, read without '__' names (as a
validated program reads them), lead to no module, frame, code, traceback, file object or
builtins namespace."""

import builtins
import io
import os
import sys
import time
import types

import pytest

from lackjail.lang.facades import FACADES
from lackjail.worker import facades

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
    for leak in ("modules", "argv", "stdout", "path", "_getframe", "settrace", "exit"):
        assert not hasattr(modules["sys"], leak), leak
    with pytest.raises(ImportError):
        facades.importer("no_such_module_here")
    with pytest.raises(ImportError):
        facades.importer("json", None, None, (), 1)  # relative


def test_type_hands_out_no_metaclass():
    assert facades.one_type(1) is int and facades.one_type("a") is str
    for cls in (int, type, facades.ModuleType):
        with pytest.raises(TypeError, match="isinstance"):
            facades.one_type(cls)
    with pytest.raises(TypeError):
        facades.one_type("A", (), {})  # noqa - one argument only


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
