"""The text codecs a program can use in the jail (`str.encode`, `bytes.decode`).

The standard library imports a codec's module on first use, which a confined
child cannot do (its filter kills `openat`), and that is no escape. So the
zygote reads the code of a chosen set now, and a child runs a codec's code when
a program first uses it, opening no file; a lookup of any other codec ends in a
clear LookupError. Reading is cheap where running is not: IDNA alone imports re,
enum and functools (~6 ms of every jail's start). The set is what programs
commonly meet, not all 120 modules.
"""

import _frozen_importlib_external as _external  # importlib.machinery without importlib
import codecs
import encodings
import encodings.aliases
import marshal
import os
import sys

# Unicode, ASCII and Latin-1 (the C codecs' thin modules), the web's legacy
# single-byte sets, Japanese and the IDNA pair.
LOADED = (
    "ascii",
    "latin_1",
    "utf_8",
    "utf_8_sig",
    "utf_16",
    "utf_16_le",
    "utf_16_be",
    "utf_32",
    "utf_32_le",
    "utf_32_be",
    "utf_7",
    "unicode_escape",
    "raw_unicode_escape",
    "cp1252",
    "iso8859_15",
    "cp1251",
    "koi8_r",
    "shift_jis",
    "idna",
    "punycode",
)
# What those codecs import that the jail does not load otherwise: the pure Python
# modules are read with them (IDNA's); C extensions cannot be (loading one opens its
# file), so they are imported now.
SUPPORT = (
    "types",
    "copyreg",
    "functools",
    "enum",
    "re",
    "re._casefix",
    "re._constants",
    "re._parser",
    "re._compiler",
    "stringprep",
)
EXTENSIONS = ("unicodedata", "_multibytecodec", "_codecs_jp")
# bytes-to-bytes and str-to-str codecs: `str.encode` and `bytes.decode` refuse them anyway
NOT_TEXT = frozenset(
    ("base64_codec", "bz2_codec", "hex_codec", "quopri_codec", "rot_13", "uu_codec", "zlib_codec")
)


def preload() -> None:
    """Make the LOADED codecs usable without opening a file, then make every other
    standard codec a clear LookupError."""
    for name in EXTENSIONS:
        __import__(name)
    sys.meta_path.insert(0, ReadAhead([*SUPPORT, *(f"encodings.{name}" for name in LOADED)]))
    folder = encodings.__path__[0]
    stdlib = frozenset(os.path.splitext(entry)[0] for entry in os.listdir(folder))
    codecs.register(_Unloaded(stdlib))


class ReadAhead:
    """Finds and loads the modules NAMES from code read when it is made: a confined
    process imports them on first use without opening a file. (A parent package comes
    before its modules in NAMES; one imported already is left to the import system.)"""

    def __init__(self, names):
        self.specs, self.code = {}, {}
        for name in names:
            if name in sys.modules:
                continue
            parent = name.rpartition(".")[0]
            path = None
            if parent:
                found = sys.modules.get(parent) or self.specs[parent]
                path = getattr(found, "__path__", None) or found.submodule_search_locations
            spec = _external.PathFinder.find_spec(name, path)
            if spec is None:
                raise ImportError(f"no module named {name!r} to read ahead", name=name)
            self.code[name] = _read(spec)
            spec.loader = self
            self.specs[name] = spec

    def find_spec(self, name, path=None, target=None):
        return self.specs.get(name)

    def create_module(self, spec):
        return None  # the usual module object

    def exec_module(self, module) -> None:
        code = self.code[module.__spec__.name]
        exec(marshal.loads(code) if type(code) is bytes else code, module.__dict__)


def _read(spec):
    """SPEC's code: its bytecode file's marshalled code when that file is current (the
    header the import system checks: magic number, no flags, the source's mtime and
    size), to be unmarshalled on first use; else the code compiled from the source."""
    loader = spec.loader
    if spec.cached is not None:
        try:
            data = loader.get_data(spec.cached)
            stats = loader.path_stats(spec.origin)
        except OSError:
            pass
        else:
            mtime, size = int(stats["mtime"]) & 0xFFFFFFFF, stats["size"] & 0xFFFFFFFF
            header = _external.MAGIC_NUMBER + bytes(4)
            header += mtime.to_bytes(4, "little") + size.to_bytes(4, "little")
            if data[:16] == header:
                return data[16:]
    return loader.get_code(spec.name)


class _Unloaded:
    """The last codec search function: a standard codec that is not loaded says so."""

    def __init__(self, stdlib):
        self.stdlib = stdlib

    def __call__(self, name):
        norm = encodings.normalize_encoding(name)
        aliases = encodings.aliases.aliases
        module = aliases.get(norm) or aliases.get(norm.replace(".", "_"), norm)
        if module in NOT_TEXT:
            raise LookupError(f"{name!r} is not a text encoding")
        if module in self.stdlib:
            raise LookupError(
                f"the {name!r} codec is not available in the jail; these are: " + ", ".join(LOADED)
            )
        return None
