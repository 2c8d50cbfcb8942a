"""From program input to the exact text that is parsed, here and in the jail.

Programs are UTF-8 text. Bytes are decoded here, strictly, before the parser
sees them, so an encoding declaration (`# coding: utf-7`) is never honoured:
the parser only ever gets a str. Cheap byte checks (size, NUL) run first.
"""

from .errors import ValidationError

_BOM = "\ufeff"


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
        raw = raw[3:] if raw is not None else None
    if "coding" in text:
        _check_declaration(text)
    return text, (raw.splitlines() if raw is not None else None)


def _check_declaration(text: str):
    """Reject an encoding declaration: lackjail reads UTF-8 only, but a Python that
    reads the file later would honour it, and see another program."""
    for number, line in enumerate(_first_lines(text), 1):
        found = _declaration(line)
        if found:
            raise SourceError(
                ValidationError(
                    f"encoding declaration {found.strip()!r} is not allowed: "
                    "programs are UTF-8 and nothing may read them otherwise; remove the comment",
                    number,
                    line.index("#") + 1,
                    "encoding-declaration",
                )
            )


def _first_lines(text: str) -> list[str]:
    """Lines 1 and 2 of TEXT, split at \\r\\n, \\r or \\n (as the tokenizer ends lines)."""
    lines = []
    start = 0
    while len(lines) < 2:
        cr, lf = text.find("\r", start), text.find("\n", start)
        end = min(cr, lf) if cr >= 0 and lf >= 0 else max(cr, lf)
        if end < 0:
            lines.append(text[start:])
            break
        lines.append(text[start:end])
        start = end + 2 if text.startswith("\r\n", end) else end + 1
    return lines


def _declaration(line: str) -> str | None:
    """The PEP 263 encoding declaration LINE starts with, as CPython's tokenizer reads it
    (emacs `-*- coding: x -*-`, vim `fileencoding=x` and plain `coding: x` forms all
    match), else None. What re.match(r"[ \\t\\f]*#.*?coding[:=][ \\t]*[-\\w.]+", LINE)
    matches, without re: the jail does not load it."""
    hash_at = len(line) - len(line.lstrip(" \t\f"))
    if not line.startswith("#", hash_at):
        return None
    at = line.find("coding", hash_at + 1)
    while at >= 0:
        begin = at + len("coding")
        if line.startswith((":", "="), begin):
            begin += 1
            while line.startswith((" ", "\t"), begin):
                begin += 1
            end = begin
            while end < len(line) and (line[end].isalnum() or line[end] in "-_."):
                end += 1
            if end > begin:
                return line[:end]
        at = line.find("coding", at + 1)
    return None


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
