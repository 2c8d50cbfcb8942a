"""The jail starts without `re` (with it `enum` and `functools`: ~5 ms of every jail's
start), so the code it runs scans text by hand where it used regular expressions. Each
scan must find exactly what the expression it replaces found: checked against it."""

import re
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lackjail.lang.source import _declaration, _first_lines
from lackjail.lang.validator import _spelt_after
from lackjail.worker.puretools import slugify

DECLARATION = re.compile(r"[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")  # PEP 263's, as it was
LINES = re.compile(r"\r\n|\r|\n")

# pieces that make declarations, near misses and line ends likely
TEXT_PIECES = [" ", "\t", "\f", "\v", "#", "coding", "c", ":", "=", "-", ".", "_", "x", "9"]
TEXT_PIECES += ["\u00e9", "\u00b2", "\u0660", "\ufb01", "\r", "\n", "\u2028", "utf-8", "*"]
texts = st.lists(st.sampled_from(TEXT_PIECES) | st.text(max_size=2), max_size=14).map("".join)


@settings(max_examples=3000, deadline=None)
@given(texts)
@example("# -*- coding: latin-1 -*-")
@example("#!/usr/bin/python\n# vim: set fileencoding=utf-8 :")
@example("x = 1  # coding=\n# codingcoding: x")
@example("\f #coding:\u0660\u00b2_.-\u00e9!")
def test_encoding_declarations_are_found_as_the_expression_found_them(text):
    assert _first_lines(text) == LINES.split(text, 2)[:2]
    for line in _first_lines(text):
        found = DECLARATION.match(line)
        assert _declaration(line) == (found.group() if found else None), line


BYTE_PIECES = [b" ", b"\t", b"\n", b"\x0b", b"\x0c", b"\r", b"\x1c", b"\xa0", b"def", b"as"]
BYTE_PIECES += [b"d", b"a", b"s", b"x", b"_", b"9", b"\xc3\xa9", b"(", b"f", b":"]
NAMES = [b"x", b"x9", b"_", b"f", b"as", b"def", b"\xc3\xa9", b"f\xc3\xa9", b"\xc3\xa9x"]


@settings(max_examples=3000, deadline=None)
@given(
    st.lists(st.sampled_from(BYTE_PIECES), max_size=12).map(b"".join),
    st.sampled_from([b"def", b"as"]),
    st.sampled_from(NAMES),
    st.integers(0, 30),
)
@example(b"def  f(x):", b"def", b"f", 0)
@example(b"except E as\te:", b"as", b"e", 0)
@example(b"def ff(): def f():", b"def", b"f", 0)
@example(b"def \xc3\xa9x(): pass", b"def", b"\xc3\xa9", 0)
def test_spelt_names_are_found_as_the_expression_found_them(line, keyword, name, start):
    found = re.compile(keyword + rb"\s+" + re.escape(name) + rb"\b").search(line, start)
    assert _spelt_after(line, keyword, name, start) == (found.end() - len(name) if found else -1)


def _slug_as_it_was(text):
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


@settings(max_examples=3000, deadline=None)
@given(st.text(st.characters(max_codepoint=0x3FF) | st.sampled_from("\ufb01\u1e9e\u0130K")))
@example("  H\u00e9llo, W\u00f6rld! 2024 ")
@example("--a__b--")
def test_slugify_makes_the_slug_the_expression_made(text):
    assert slugify(text) == _slug_as_it_was(text)
