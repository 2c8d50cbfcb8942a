"""The python level's standard library in the jail: one facade module per allowed module.

`load(names)` runs in the zygote, before it forks the children that may run a
python-level program importing those modules: it imports them (a child cannot: its
imports end with no_lazy_imports and its filter kills any open) and builds, for
each, a fresh module object holding only the table's names (lackjail.lang.facades).
A zygote loads a module the first time the controller asks for it (a program that
imports nothing forks from a zygote as small as extended's), or all of them at its
start (a session's). A program's `import json` finds the facade through
`importer`, the `__import__` of the python level's builtins; the real module never
reaches the program.

A few names are wrapped, so that their arguments cannot name attributes or
reach the process's own streams: functools.wraps/update_wrapper (no
`assigned`/`updated`), hashlib.new (algorithms_guaranteed only), pprint.pprint
and pprint.pp (they print with the program's print), sys.stdout and sys.stderr
(the program's output: lackjail.worker.streams), sys's recursion limit (the
program's own, bounded), and `type` (TYPE, below), which hands out no metaclass
and makes only the classes a class statement may make. dataclasses' Field takes only
names a class body could give it (it exec()s them and reads attributes by them).
"""

import builtins
import os
import sys

from lackjail.lang.facades import FACADES, MAX_RECURSION_LIMIT
from lackjail.lang.grammar import NAMESPACE_DUNDERS, attribute_refused
from lackjail.worker import streams

ModuleType = type(sys)  # types.ModuleType: types.py costs every start
GenericAlias = type(list[int])  # types.GenericAlias, likewise
MODULES: dict = {}  # module name -> its facade, once load() ran
OUTPUT: list = [None]  # the running program's print, for pprint (set by the runner)
# The frames below a program's module frame (the runner's own), set by the runner: the
# program's recursion limit and depth are counted above them, as a script's are.
BELOW: list = [0]
_INT_MAX = (1 << 31) - 1  # sys.setrecursionlimit takes a C int


class _Missing(ImportError):
    """A facade's module (or one of its names) is missing from this interpreter."""


def importer(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    """`__import__` for the python level: a facade by its exact name, nothing else.

    C code imports through the `__import__` of the frame running (datetime.strptime
    imports _strptime), with a list for a fromlist: a module loaded already answers None,
    for that call's side effect only; the C caller then takes the module from sys.modules
    itself. A module of the table this child's zygote has not loaded is an ImportError,
    never an import (the controller lends a run a child that has its modules).
    """
    facade = MODULES.get(name) if level == 0 else None
    if facade is not None:
        return facade
    if level != 0:  # a program is a script: no package around it, as in CPython
        raise ImportError("attempted relative import with no known parent package")
    head = name.partition(".")[0]
    if head[:1] != "_" and head not in sys.stdlib_module_names:
        # numpy, or the jail's own packages: never handed out; CPython's words where one
        # is not installed (the validator lets a program try: `except ImportError`)
        raise ModuleNotFoundError(f"No module named {head!r}", name=head)
    if name in sys.modules and (type(fromlist) is list or name not in FACADES):
        return None  # C code imports with a list for a fromlist; a statement never does
    if name in FACADES:  # the controller lends a child that has it loaded: a bug
        raise ImportError(
            f"module {name!r} was not loaded in this jail's child before the program ran "
            "(a child cannot load one): please report this"
        )
    raise ImportError(f"no module named {name!r} in the jail")


class _Type:
    """The python level's `type`: CPython's, less what makes a class outside a class
    statement's rules.

    type(x) gives x's class; of a class it gives `type` (this object), never a metaclass
    (called with three arguments, a metaclass makes any class). type(name, bases, namespace)
    makes a class as a class statement would, with the same limits: bases that are classes
    whose metaclass is type, namespace keys that are plain str, none starting with '__'
    but the dunders a class body may define (NAMESPACE_DUNDERS: no __getattr__,
    __getattribute__, __init_subclass__, __set_name__, __class_getitem__, __del__,
    __reduce__ ...), slot names without '__', and no keyword a class's hook would receive.
    `isinstance(x, type)` and `issubclass(c, type)` answer as CPython's do, and `type[X]`
    and `type | None` stand in annotations.
    """

    __slots__ = ()
    __name__ = "type"
    __module__ = "builtins"

    def __getattr__(self, name):
        if name == "__qualname__":  # what CPython's call errors name: "type() argument ..."
            return "type"
        raise AttributeError(f"type object 'type' has no attribute {name!r}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            return _type_of(args[0])
        if len(args) != 3:
            return builtins.type(*args, **kwargs)  # CPython's own error: it makes nothing
        caller = sys._getframe(1).f_globals.get("__name__")
        return _new_class(*args, caller, **kwargs)

    def __getitem__(self, item):
        """`type[Base]` (an annotation): an alias of this type, as CPython's is of its own."""
        return GenericAlias(self, item)

    def __or__(self, other):
        """`type | None` (an annotation): a typing.Union of this type, never of CPython's."""
        return sys.modules["typing"].Union[self, other]

    def __ror__(self, other):
        return sys.modules["typing"].Union[other, self]

    def __instancecheck__(self, obj):
        return obj is self or isinstance(obj, builtins.type)

    def __subclasscheck__(self, cls):
        return cls is self or issubclass(cls, builtins.type)

    def __repr__(self):
        return "<class 'type'>"

    def __reduce__(self):
        return "TYPE"  # copy and deepcopy give this object itself, as they give a class


_Type.__name__ = _Type.__qualname__ = "type"  # what errors name: "'type' object is not ..."
TYPE = _Type()


def _type_of(obj):
    """type(OBJ): its class; `type` (TYPE) for a class; no metaclass."""
    kind = builtins.type(obj)
    if kind is builtins.type or obj is TYPE:
        return TYPE
    if issubclass(kind, builtins.type):
        raise TypeError(
            f"type() of a class made by a metaclass ({kind.__name__}) is not available in "
            "the jail: use isinstance()"
        )
    return kind


def _new_class(name, bases, namespace, module, /, **kwargs):
    """type(NAME, BASES, NAMESPACE, **KWARGS), called from code whose module is MODULE (a
    class's __module__, as CPython takes it from the caller): refused (TypeError, naming
    what) unless a class statement could make the same class."""
    for value, kind in ((name, str), (bases, tuple), (namespace, dict)):
        if builtins.type(value) is not kind:
            if isinstance(value, kind):  # a subclass could show the checks other items
                raise TypeError(f"type() takes a plain {kind.__name__} in the jail, not a subclass")
            return builtins.type(name, bases, namespace, **kwargs)  # CPython's own error
    for base in bases:
        if builtins.type(base) is not builtins.type or issubclass(base, builtins.type):
            raise TypeError(
                "type() takes as bases classes whose metaclass is type in the jail (it makes "
                f"no metaclass): not {_described(base)}"
            )
    namespace = dict(namespace)  # a copy: what is checked is what the class gets
    for key in namespace:
        if builtins.type(key) is not str:
            kind = builtins.type(key).__name__
            raise TypeError(f"type() takes str keys in the namespace in the jail, not {kind}")
        if key[:2] == "__" and key not in NAMESPACE_DUNDERS:
            raise TypeError(
                f"a class may not define {key!r} in the jail: type()'s namespace holds what a "
                "class body may bind (the python level's spec lists the dunder methods)"
            )
    if "__slots__" in namespace:
        namespace["__slots__"] = _slots(namespace["__slots__"])
    if kwargs and any(
        "__init_subclass__" in vars(cls) for base in bases for cls in base.__mro__[:-1]
    ):
        raise TypeError("type() takes no keywords in the jail: no class hook receives them")
    if module is not None:
        namespace["__module__"] = module
    return builtins.type(name, bases, namespace, **kwargs)


def _described(base):
    """What BASE is, for type()'s refusal of it (no program code runs)."""
    if base is TYPE or base is builtins.type:
        return "type"
    kind = builtins.type(base)
    if not issubclass(kind, builtins.type):
        return f"a {kind.__name__} object"
    if issubclass(base, builtins.type):
        return f"{base.__name__}, a metaclass"
    return f"{base.__name__}, made by the metaclass {kind.__name__}"


def _slots(slots):
    """A namespace's __slots__ as a tuple of plain str, none of them starting with '__' (as
    a class body can spell them); iterated once, here."""
    names = (slots,) if isinstance(slots, str) else tuple(slots)
    for slot in names:
        if builtins.type(slot) is not str or slot[:2] == "__":
            raise TypeError(f"__slots__ holds plain names in the jail, not {slot!r}")
    return names


def _attribute_name(args, kwargs, least):
    """The name that getattr, hasattr or setattr ARGS name, checked as the validator checks
    a literal one; None when the call is malformed (the real builtin then says why)."""
    if kwargs or len(args) < least:
        return None
    name = args[1]
    if builtins.type(name) is not str:
        if isinstance(name, str):  # a str subclass could lie to the check below
            raise TypeError("attribute name must be a plain str in the jail")
        return None
    if attribute_refused(name):
        raise AttributeError(
            f"attribute {name!r} is off limits in the jail: no '_' name, and no frame, "
            "code, generator, traceback, type or format attribute"
        )
    return name


def guarded_getattr(*args, **kwargs):
    """getattr(obj, name[, default]), refusing a name the validator would refuse."""
    _attribute_name(args, kwargs, 2)
    return builtins.getattr(*args, **kwargs)


def guarded_hasattr(*args, **kwargs):
    """hasattr(obj, name), refusing (not answering False for) a name that is off limits."""
    _attribute_name(args, kwargs, 2)
    return builtins.hasattr(*args, **kwargs)


def guarded_setattr(*args, **kwargs):
    """setattr(obj, name, value), refusing a name the validator would refuse."""
    _attribute_name(args, kwargs, 2)
    return builtins.setattr(*args, **kwargs)


for _guard, _name in (
    (guarded_getattr, "getattr"),
    (guarded_hasattr, "hasattr"),
    (guarded_setattr, "setattr"),
):
    _guard.__name__ = _guard.__qualname__ = _name
GUARDED = {
    "type": TYPE,
    "getattr": guarded_getattr,
    "hasattr": guarded_hasattr,
    "setattr": guarded_setattr,
}


def _depth(frame):
    """How many frames FRAME's chain holds, FRAME included."""
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _sys_wrappers(sys_module):
    index = sys.modules["operator"].index  # loaded at every start (the worker's own imports)

    def setrecursionlimit(limit, /):
        limit = index(limit)
        if not -_INT_MAX - 1 <= limit <= _INT_MAX:
            raise OverflowError("Python int too large to convert to C int")
        if limit < 1:
            raise ValueError("recursion limit must be greater or equal than 1")
        limit = min(limit, MAX_RECURSION_LIMIT)
        depth = _depth(sys._getframe(1)) - BELOW[0]
        if depth >= limit:
            raise RecursionError(
                f"cannot set the recursion limit to {limit} at the recursion depth {depth}: "
                "the limit is too low"
            )
        # this function's own frame counts where CPython's has none: the tightest limit
        # (one above the caller's depth) leaves the program one frame more than it asked
        sys.setrecursionlimit(limit + BELOW[0] + (limit == depth + 1))

    def getrecursionlimit():
        return sys.getrecursionlimit() - BELOW[0]

    return {
        "stdout": streams.STDOUT,
        "stderr": streams.STDERR,
        "setrecursionlimit": setrecursionlimit,
        "getrecursionlimit": getrecursionlimit,
    }


def _dataclasses_wrappers(dataclasses):
    """No name is wrapped: the Field class is guarded instead. dataclasses writes each field's
    name into the text of the methods it makes and exec()s it, and asdict, astuple and
    replace read each field's attribute by that name. A class statement's fields have
    identifiers for names, but a program can give a class others (a TypedDict's keys copied
    by update_wrapper) or rename a Field afterwards (`fields(P)[0].name = ...`): its text
    then ran, or its dunder attributes were read, beyond the validator's sight. So a Field's
    name is what a class body could have named it, or the Field is refused (TypeError)."""
    set_slot = object.__setattr__

    def __setattr__(self, attr, value):
        if attr == "name" and value is not None:
            if builtins.type(value) is not str or not value.isidentifier() or value[:2] == "__":
                raise TypeError(
                    f"a dataclass field's name must be an identifier not starting "
                    f"with '__' in the jail, not {value!r}"
                )
        set_slot(self, attr, value)

    dataclasses.Field.__setattr__ = __setattr__
    return {}


def _functools_wrappers(functools):
    def wraps(wrapped, /):
        return functools.wraps(wrapped)

    def update_wrapper(wrapper, wrapped, /):
        return functools.update_wrapper(wrapper, wrapped)

    return {"wraps": wraps, "update_wrapper": update_wrapper}


def _hashlib_wrappers(hashlib):
    def new(name, data=b"", **kwargs):
        # a plain str: a subclass's __eq__ and __hash__ could pass any name through the test
        if builtins.type(name) is not str or name not in hashlib.algorithms_guaranteed:
            raise ValueError(f"unsupported hash type {name}")
        return hashlib.new(name, data, **kwargs)

    return {"new": new}


def _pprint_wrappers(pprint):
    def pprint_(obj, stream=None, indent=1, width=80, depth=None, **kwargs):
        text = pprint.pformat(obj, indent, width, depth, **kwargs)
        if stream is None:
            OUTPUT[0](text)
        else:
            stream.write(text + "\n")

    def pp(obj, *args, sort_dicts=False, **kwargs):
        pprint_(obj, *args, sort_dicts=sort_dicts, **kwargs)

    pprint_.__name__ = pprint_.__qualname__ = "pprint"
    return {"pprint": pprint_, "pp": pp}


# The wrapped names, by module: module name -> a function of the real module.
_WRAPPERS = {
    "dataclasses": _dataclasses_wrappers,
    "functools": _functools_wrappers,
    "hashlib": _hashlib_wrappers,
    "pprint": _pprint_wrappers,
    "sys": _sys_wrappers,
}


def _utc():
    """The jail has no /etc/localtime: its zone is UTC. With TZ unset, glibc's mktime looks
    for that file again at every call (an open the child's filter kills); TZ=UTC names
    the same zone, parsed once, here."""
    if not os.environ.get("TZ"):
        os.environ["TZ"] = "UTC"
        sys.modules["time"].tzset()


def _warm_time(time):
    _utc()
    time.mktime(time.localtime())
    time.strptime("2024-01-02", "%Y-%m-%d")
    time.localtime()


def _warm_datetime(datetime):
    _utc()
    datetime.datetime.strptime("2024", "%Y")
    datetime.datetime.now()


def _warm_hashlib(hashlib):
    for algorithm in hashlib.algorithms_guaranteed:
        hashlib.new(algorithm, b"x")


def _warm_decimal(decimal):
    # in a context of its own: the zygote's (what a child's program starts in, and what
    # contextvars.copy_context() shows it) stays as empty as a script's
    from _contextvars import Context  # contextvars.py's own, without its import

    Context().run(lambda: decimal.Decimal("1.5") + 1)


def _warm_dataclasses(dataclasses):
    @dataclasses.dataclass
    class Item:
        name: str
        tags: list = dataclasses.field(default_factory=list)

    repr(Item("x"))


# First calls that load or read something once (and must not in a child): strptime's locale
# tables, the local time zone, OpenSSL's digests, decimal's context. Keyed by the real
# module: each runs once that module is in the zygote, whichever facade brought it in (uuid
# brings hashlib).
_WARM_UPS = {
    "time": _warm_time,
    "datetime": _warm_datetime,
    "hashlib": _warm_hashlib,
    "decimal": _warm_decimal,
    "dataclasses": _warm_dataclasses,
    "uuid": lambda uuid: uuid.uuid4(),
    "unicodedata": lambda unicodedata: unicodedata.name("a"),
    "re": lambda re: re.compile(r"(?P<x>\w+)\s*").sub(r"\g<x>", "a b"),
    "calendar": lambda calendar: calendar.month_name[1],
    "zlib": lambda zlib: zlib.decompress(zlib.compress(b"x")),
}
_WARMED: set = set()


def _warm(names, imported):
    """Run the warm-ups of the modules NAMES' facades stand for and of those IMPORTED (a
    set of names) just now, each once. The ones the worker itself imports (time, datetime,
    unicodedata) wait for their facade: no program reaches them before."""
    for name, warm_up in _WARM_UPS.items():
        if name not in _WARMED and (name in names or name in imported) and name in sys.modules:
            warm_up(sys.modules[name])
            _WARMED.add(name)


def _held_back(work):
    """WORK() with two at-fork handlers the modules it imports register held back: random's
    reseed and threading's reset of the threads a fork leaves behind. Every child would run
    both cold (~150 us of CPU and ~45 page faults each, measured), and neither has work
    there: a child reseeds random itself (`reseed`, before its filter goes on), and the
    zygote never starts a thread, so its one thread is the child's and nothing is left
    behind. Any other handler is registered as it asked."""
    held = []
    register = os.register_at_fork
    os.register_at_fork = lambda **hooks: held.append(hooks)
    try:
        work()
    finally:
        os.register_at_fork = register
    known = []
    if "random" in sys.modules:
        known.append(sys.modules["random"]._inst.seed)
    if "threading" in sys.modules:
        known.append(sys.modules["threading"]._after_fork)
    for hooks in held:
        if list(hooks) != ["after_in_child"] or hooks["after_in_child"] not in known:
            register(**hooks)


def _facade(name, module):
    """The facade of NAME: a fresh module holding the table's names of MODULE (the real
    one), the wrapped ones in their place."""
    own = _WRAPPERS[name](module) if name in _WRAPPERS else {}
    facade = ModuleType(name)
    for attr in FACADES[name]:
        value = own.get(attr)
        if value is None:
            try:
                value = getattr(module, attr)
            except AttributeError:
                raise _Missing(f"{name}.{attr} is missing from this Python") from None
        setattr(facade, attr, value)
    return facade


# Modules outside the table that its modules import inside functions a program reaches:
# typing's runtime-checkable protocols read attributes with inspect.getattr_static,
# functools' dispatch keeps a weakref.WeakKeyDictionary.
SUPPORT = ("inspect", "weakref")


def _import_lazy(names, before, scanned) -> None:
    """Import the modules of the table that the modules of NAMES, and every module imported
    since BEFORE (a set of names), import inside their functions: Counter.most_common
    imports heapq when it is first called, and HtmlDiff's helper imports re, which a child
    cannot. Until no new one comes in; SCANNED (a set) holds the modules already read. Of
    the modules outside the table, only SUPPORT's."""
    while fresh := (set(names) | (sys.modules.keys() - before)) - scanned:
        for name in fresh:
            scanned.add(name)
            module = sys.modules.get(name)
            if module is None:
                continue
            own = [v for v in vars(module).values() if getattr(v, "__module__", 0) == name]
            for target in _imported_inside(own):
                if (target in FACADES or target in SUPPORT) and target not in sys.modules:
                    __import__(target)


def _imported_inside(values) -> set:
    """The modules that the functions of VALUES, and of the classes among them, import by
    absolute name (IMPORT_NAME with level 0 in their code, nested code included)."""
    import opcode  # the zygote's alone, when it loads

    load_const, import_name = opcode.opmap["LOAD_CONST"], opcode.opmap["IMPORT_NAME"]
    extended = opcode.opmap["EXTENDED_ARG"]
    codes: list = []
    found: set = set()
    for value in values:
        members = list(vars(value).values()) if isinstance(value, builtins.type) else [value]
        for member in members:
            member = getattr(member, "__func__", member)  # staticmethod, classmethod
            member = getattr(member, "__wrapped__", member)  # functools.cache's, wraps'
            codes.append(getattr(member, "__code__", None))
            codes.append(getattr(getattr(member, "fget", None), "__code__", None))
    while codes:
        code = codes.pop()
        if not hasattr(code, "co_code"):
            continue
        raw, arg, consts = code.co_code, 0, []
        for i in range(0, len(raw), 2):
            op, arg = raw[i], raw[i + 1] | (arg << 8 if i and raw[i - 2] == extended else 0)
            if op == load_const:
                consts.append(code.co_consts[arg])
            elif op == import_name and len(consts) >= 2 and consts[-2] == 0:
                found.add(code.co_names[arg])
        codes += [c for c in code.co_consts if hasattr(c, "co_code")]
    return found


def load(names=None) -> dict:
    """Import the table's modules NAMES (every one when None) that are not loaded yet, build
    their facades and run their warm-ups: in the zygote, before it forks the children that
    may import them (a child cannot). Returns MODULES. Raises KeyError for a name not in
    the table (nothing is imported then), ImportError when one cannot be loaded."""
    wanted = [name for name in (FACADES if names is None else names) if name not in MODULES]
    for name in wanted:
        FACADES[name]  # noqa: B018 - a name outside the table is never imported
    if not wanted:
        return MODULES
    before = set(sys.modules)

    def work():
        built = {}
        for name in wanted:
            __import__(name)
            built[name] = _facade(name, sys.modules[name])
        scanned: set = set()
        while True:  # a warm-up imports too (strptime's locale tables), and what it imports
            count = len(sys.modules)
            _import_lazy(wanted, before, scanned)
            _warm(wanted, set(sys.modules) - before)
            if len(sys.modules) == count:
                break
        MODULES.update(built)

    _held_back(work)
    return MODULES


def reseed(seed: int | None = None) -> None:
    """A fresh seed for `random` in each child (before its filter goes on), once the zygote
    has loaded it (its facade, or another's that imports it: statistics): forked children
    would otherwise all draw the zygote's numbers. SEED: a run's own, for numbers it can
    draw again."""
    random = sys.modules.get("random")
    if random is not None:
        random.seed(seed)
