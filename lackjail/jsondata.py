"""Results as JSON: the plain data a run returns, made safe for json.dumps."""

import json
import re

from lackjail import plain

MAX_DEPTH = plain.MAX_DEPTH + 8  # a plain value inside a result, report or trace entry


def jsonable(value, depth=0):
    """Plain data for json.dumps: bytes become text (undecodable bytes escaped)."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return str(value)  # JSON has no NaN or infinity
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(jsonable(k, depth + 1)): jsonable(v, depth + 1) for k, v in value.items()}
    return value


_NOT_ASCII = re.compile(r"[^\x00-\x7e]")


def dumps(value, **options) -> str:
    """VALUE as JSON text whose non-ASCII text stays readable, but in which every character a
    terminal could act on is escaped (\\u009b): json.dumps escapes only U+0000-U+001F, so a
    C1 control (U+009B is CSI), DEL or a bidi override reached whoever printed --json output."""
    text = json.dumps(jsonable(value), ensure_ascii=False, **options)
    return _NOT_ASCII.sub(_escape_unprintable, text)


def _escape_unprintable(match: re.Match) -> str:
    char = match.group()
    if char.isprintable():
        return char
    code = ord(char)
    if code > 0xFFFF:  # JSON spells it as a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"
