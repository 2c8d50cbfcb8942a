"""The python level's standard library in the jail: one facade module per allowed module.

`load()` runs in the zygote, before it forks a child that may run a python-level
program: it imports every module of the table in lackjail.lang.facades (a child
cannot: its imports end with no_lazy_imports and its filter kills any open) and
builds, for each, a fresh module object holding only the table's names. A
program's `import json` finds the facade through `importer`, the `__import__`
of the python level's builtins; the real module never reaches the program.

A few names are wrapped, so that their arguments cannot name attributes or
reach the process's own streams: functools.wraps/update_wrapper (no
`assigned`/`updated`), hashlib.new (algorithms_guaranteed only), pprint.pprint
and pprint.pp (they print with the program's print), and `type`, which hands
out no metaclass (a metaclass called with three arguments makes any class).
"""

import builtins
import os
import sys

from lackjail.lang.facades import FACADES
from lackjail.lang.grammar import attribute_refused

ModuleType = type(sys)  # types.ModuleType: types.py costs every start
MODULES: dict = {}  # module name -> its facade, once load() ran
OUTPUT: list = [None]  # the running program's print, for pprint (set by the runner)


class _Missing(ImportError):
    """A facade's module (or one of its names) is missing from this interpreter."""


def importer(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    """`__import__` for the python level: a facade by its exact name, nothing else.

    C code imports through the `__import__` of the frame running (datetime.strptime
    imports _strptime): a module loaded already answers None, for that call's side effect
    only; the C caller then takes the module from sys.modules itself, a program gets None.
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
    if not MODULES:
        raise ImportError("this jail was started without the python level's modules")
    if name in sys.modules:
        return None
    raise ImportError(f"no module named {name!r} in the jail")


def one_type(obj, /):
    """type(x) with one argument; a class's own type (a metaclass) is not handed out."""
    kind = builtins.type(obj)
    if issubclass(kind, builtins.type):
        raise TypeError("type() of a class is not available in the jail: use isinstance()")
    return kind


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
    "type": one_type,
    "getattr": guarded_getattr,
    "hasattr": guarded_hasattr,
    "setattr": guarded_setattr,
}


def _wrappers(modules):
    """The wrapped names, by module."""
    functools, hashlib, pprint = modules["functools"], modules["hashlib"], modules["pprint"]

    def wraps(wrapped, /):
        return functools.wraps(wrapped)

    def update_wrapper(wrapper, wrapped, /):
        return functools.update_wrapper(wrapper, wrapped)

    def new(name, data=b"", **kwargs):
        # a plain str: a subclass's __eq__ and __hash__ could pass any name through the test
        if builtins.type(name) is not str or name not in hashlib.algorithms_guaranteed:
            raise ValueError(f"unsupported hash type {name}")
        return hashlib.new(name, data, **kwargs)

    def pprint_(obj, stream=None, indent=1, width=80, depth=None, **kwargs):
        text = pprint.pformat(obj, indent, width, depth, **kwargs)
        if stream is None:
            OUTPUT[0](text)
        else:
            stream.write(text + "\n")

    def pp(obj, *args, sort_dicts=False, **kwargs):
        pprint_(obj, *args, sort_dicts=sort_dicts, **kwargs)

    pprint_.__name__ = pprint_.__qualname__ = "pprint"
    return {
        "functools": {"wraps": wraps, "update_wrapper": update_wrapper},
        "hashlib": {"new": new},
        "pprint": {"pprint": pprint_, "pp": pp},
    }


def _warm(modules):
    """First calls that load or read something once (and must not in a child): strptime's
    locale tables, the local time zone, OpenSSL's digests, decimal's context.

    The jail has no /etc/localtime: its zone is UTC. With TZ unset, glibc's mktime looks
    for that file again at every call (an open the child's filter kills); TZ=UTC names
    the same zone, parsed once, here."""
    if not os.environ.get("TZ"):
        os.environ["TZ"] = "UTC"
        modules["time"].tzset()
    modules["time"].mktime(modules["time"].localtime())
    modules["time"].strptime("2024-01-02", "%Y-%m-%d")
    modules["datetime"].datetime.strptime("2024", "%Y")
    modules["time"].localtime()
    for algorithm in modules["hashlib"].algorithms_guaranteed:
        modules["hashlib"].new(algorithm, b"x")
    modules["decimal"].Decimal("1.5") + 1
    modules["uuid"].uuid4()
    modules["unicodedata"].name("a")
    modules["re"].compile(r"(?P<x>\w+)\s*").sub(r"\g<x>", "a b")
    modules["calendar"].month_name[1]
    modules["zlib"].decompress(modules["zlib"].compress(b"x"))


def load() -> dict:
    """Import the table's modules and build their facades (in the zygote, once)."""
    if MODULES:
        return MODULES
    modules = {}
    for name in FACADES:
        __import__(name)
        modules[name] = sys.modules[name]
    wrapped = _wrappers(modules)
    facades = {}
    for name, names in FACADES.items():
        module, own = modules[name], wrapped.get(name, {})
        facade = ModuleType(name)
        for attr in names:
            value = own.get(attr)
            if value is None:
                try:
                    value = getattr(module, attr)
                except AttributeError:
                    raise _Missing(f"{name}.{attr} is missing from this Python") from None
            setattr(facade, attr, value)
        facades[name] = facade
    _warm(modules)
    MODULES.update(facades)
    return MODULES


def reseed(seed: int | None = None) -> None:
    """A fresh seed for `random` in each child (before its filter goes on): forked children
    would otherwise all draw the zygote's numbers. SEED: a run's own, for numbers it can
    draw again."""
    if MODULES:
        sys.modules["random"].seed(seed)
