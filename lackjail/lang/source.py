"""From program input to the exact text that is parsed, here and in the jail.

Programs are UTF-8 text. Bytes are decoded here, strictly, before the parser
sees them, so an encoding declaration (`# coding: utf-7`) is never honoured:
the parser only ever gets a str. Cheap byte checks (size, NUL) run first.
"""

import re

from .errors import ValidationError

_BOM = "\ufeff"
# PEP 263, as CPython's tokenizer reads it (emacs `-*- coding: x -*-`, vim
# `fileencoding=x` and plain `coding: x` forms all match), on lines 1 and 2.
_DECLARATION = re.compile(r"[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
_FIRST_LINES = re.compile(r"\r\n|\r|\n")


class SourceError(Exception):
    """The input is not a program text; carries the validation error to report."""

    def __init__(self, error: ValidationError):
        super().__init__(error.message)
        self.error = error


def _place(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of character INDEX in TEXT."""
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def prepare(source, max_bytes: int | None) -> tuple[str, list[bytes] | None]:
    """Return (text, lines): the text to parse and, when it is not pure ASCII,
    its UTF-8 lines (so byte columns from the parser can be checked and converted).

    Raises SourceError for anything that is not a lackpy program text.
    """
    if isinstance(source, str):
        text = source
        if text.isascii():
            raw = None
            size = len(text)
        else:
            try:
                raw = text.encode("utf-8")
            except UnicodeEncodeError as exc:
                line, col = _place(text, exc.start)
                raise SourceError(
                    ValidationError(
                        f"program is not valid Unicode text: lone surrogate {text[exc.start]!r}",
                        line,
                        col,
                        "encoding",
                    )
                ) from None
            size = len(raw)
        _check_size(size, max_bytes)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        _check_size(len(raw), max_bytes)  # before decoding anything big
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            before = raw[: exc.start].decode("utf-8")  # everything before the bad byte decoded fine
            line, col = _place(before, len(before))
            raise SourceError(
                ValidationError(
                    f"program is not UTF-8: byte 0x{raw[exc.start]:02x} cannot be decoded "
                    "(encoding declarations are not honoured)",
                    line,
                    col,
                    "encoding",
                )
            ) from None
        if text.isascii():
            raw = None
    else:
        raise SourceError(
            ValidationError(
                f"a program must be str or bytes, not {type(source).__name__}",
                None,
                None,
                "input-type",
            )
        )
    nul = text.find("\x00")
    if nul >= 0:
        line, col = _place(text, nul)
        raise SourceError(ValidationError("program contains a NUL byte", line, col, "nul-byte"))
    if text.startswith(_BOM):
        text = text[1:]
        raw = raw[3:]
    if "coding" in text:
        _check_declaration(text)
    return text, (raw.splitlines() if raw is not None else None)


def _check_declaration(text: str):
    """Reject an encoding declaration: lackjail reads UTF-8 only, but a Python that
    reads the file later would honour it, and see another program."""
    for number, line in enumerate(_FIRST_LINES.split(text, 2)[:2], 1):
        found = _DECLARATION.match(line)
        if found:
            raise SourceError(
                ValidationError(
                    f"encoding declaration {found.group().strip()!r} is not allowed: "
                    "programs are UTF-8 and nothing may read them otherwise; remove the comment",
                    number,
                    line.index("#") + 1,
                    "encoding-declaration",
                )
            )


def _check_size(size: int, max_bytes: int | None):
    if max_bytes is not None and size > max_bytes:
        raise SourceError(
            ValidationError(
                f"program is {size} bytes; the limit is {max_bytes} bytes",
                None,
                None,
                "limit-source-bytes",
            )
        )


def decode_source(source) -> str:
    """The text to compile for SOURCE (str or bytes), exactly as the validator parsed it.

    Raises ValueError when SOURCE is not a program text. Use this, never
    `compile(bytes)`, so the jail runs what the validator checked.
    """
    try:
        return prepare(source, None)[0]
    except SourceError as exc:
        raise ValueError(exc.error.message) from None
