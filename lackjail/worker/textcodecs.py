"""The text codecs a program can use in the jail (`str.encode`, `bytes.decode`).

The standard library imports a codec's module on first use, which a confined
child cannot do (its filter kills `openat`), and that is no escape. So the
zygote loads a chosen set now, and a lookup of any other codec ends in a clear
LookupError. Each codec loaded costs the zygote memory and its children
copied pages: the set is what programs commonly meet, not all 120 modules.
"""

import codecs
import encodings
import encodings.aliases
import os

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
# bytes-to-bytes and str-to-str codecs: `str.encode` and `bytes.decode` refuse them anyway
NOT_TEXT = frozenset(
    ("base64_codec", "bz2_codec", "hex_codec", "quopri_codec", "rot_13", "uu_codec", "zlib_codec")
)


def preload() -> None:
    """Load the LOADED codecs now, then make every other standard codec a clear LookupError."""
    for name in LOADED:
        codecs.lookup(name)
    folder = encodings.__path__[0]
    stdlib = frozenset(os.path.splitext(entry)[0] for entry in os.listdir(folder))
    codecs.register(_Unloaded(stdlib))


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
