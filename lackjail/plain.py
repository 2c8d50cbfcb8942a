"""Plain data: the only values that cross between a program, the jail and a tool.

Plain data is None, bool, int, float, str, bytes, list, and dict with str keys,
with exact types (no subclasses, so no methods of the sender's choosing),
nested at most MAX_DEPTH levels, ints within what msgpack carries (64 bits),
and a size counted the same way everywhere (ITEM_SIZE per item plus each
str, bytes and key's length; strings made safe for UTF-8). Every layer that
checks or copies a value does it with this module: the Checker (parameters),
the runner in the jail (tool arguments, the program's value), the kit (tool
arguments and results) and the wire (its depth cap derives from MAX_DEPTH).

This module is mounted inside the jail: standard library only.
"""

MAX_DEPTH = 64  # nesting of lists and dicts in one value
MAX_ITEMS = 1 << 20  # list elements plus dict entries of one value, all levels together
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # msgpack's integers: int64 and uint64
ITEM_SIZE = 8  # what each scalar, list element or dict entry counts toward a size budget
TYPES = "None, bool, int, float, str, bytes, list, dict with str keys"

_SCALARS = (type(None), bool, float)
_SEQUENCES = (list, tuple)
_LENIENT_SEQUENCES = (list, tuple, set, frozenset)
_LENIENT_KEYS = (str, int, float, bool, type(None))


class PlainError(ValueError):
    """A value that is not plain data or breaks a cap. KIND: "type" (not plain data)
    or "limit" (too deep, too large, too many items); the message names where."""

    def __init__(self, what: str, kind: str):
        super().__init__(what)
        self.what, self.kind = what, kind
        self.path: list = []  # keys and indexes, innermost first, added while unwinding

    def place(self, where: str) -> "PlainError":
        """This error with its message starting at WHERE (the value's name)."""
        path = self.path[::-1]
        shown = [f"[{_short(k)}]" for k in path[:6]] + (["[…]"] if len(path) > 6 else [])
        at = where + "".join(shown)
        self.args = (f"{at} {self.what}",)
        return self


def copy(
    value,
    where: str,
    max_size: int,
    *,
    max_items: int = MAX_ITEMS,
    lenient: bool = False,
    exact_text: bool = False,
):
    """A fresh plain copy of VALUE (tuples become lists), or PlainError naming WHERE.

    LENIENT (a program's value): sets become lists, ints wider than 64 bits and
    values of other types become their text, and scalar dict keys are kept.
    Strict (parameters, tool arguments and results): those are errors.
    Text that UTF-8 cannot carry (lone surrogates) becomes backslash escapes, or
    with EXACT_TEXT (a caller's parameters, which must arrive as given) an error.
    """
    if 0 <= _scalar_size(value) <= max_size:  # the common tool result: nothing to walk
        return value
    text = _exact if exact_text else utf8
    budget = [max_size, max_items]
    sequences = _LENIENT_SEQUENCES if lenient else _SEQUENCES

    def conv(v, depth):
        kind = type(v)
        budget[0] -= ITEM_SIZE
        if kind is str:
            budget[0] -= len(v)
            if not v.isascii():
                v = text(v)
        elif kind is bytes:
            budget[0] -= len(v)
        elif kind is int:
            if not INT_MIN <= v <= INT_MAX:
                if not lenient:
                    raise PlainError("is an integer wider than 64 bits", "type")
                try:
                    return conv(str(v), depth)
                except ValueError:  # more digits than int->str allows
                    raise PlainError("is an integer too large to return", "limit") from None
        elif kind in _SCALARS:
            pass
        elif kind is dict or kind in sequences:
            if depth >= MAX_DEPTH:
                raise PlainError(f"nests lists/dicts deeper than {MAX_DEPTH} levels", "limit")
            budget[1] -= len(v)
            if budget[1] < 0:
                raise PlainError(f"holds more than {max_items} list/dict items", "limit")
            if kind is not dict:
                out = []
                for i, item in enumerate(v):
                    try:
                        out.append(conv(item, depth + 1))
                    except PlainError as exc:
                        exc.path.append(i)
                        raise
                return out
            out = {}
            for key, item in v.items():
                if type(key) is str:
                    budget[0] -= len(key)
                    if not key.isascii():
                        key = text(key)
                elif not lenient:
                    raise PlainError(
                        f"has a key of type {type(key).__name__}; dict keys must be str", "type"
                    )
                elif type(key) not in _LENIENT_KEYS:
                    key = conv(repr(key), depth + 1)
                elif type(key) is int and not INT_MIN <= key <= INT_MAX:
                    key = conv(key, depth + 1)  # its text, as a value that wide becomes
                try:
                    out[key] = conv(item, depth + 1)
                except PlainError as exc:
                    exc.path.append(key)
                    raise
            return out
        elif lenient:
            return conv(repr(v), depth)
        else:
            raise PlainError(
                f"is of type {kind.__name__}, which is not plain data ({TYPES})", "type"
            )
        if budget[0] < 0:
            raise PlainError(f"is larger than {max_size} bytes", "limit")
        return v

    try:
        return conv(value, 0)
    except PlainError as exc:
        raise exc.place(where) from None


def copy_call(args, kwargs: dict, where: str, max_size: int, *, max_items: int = MAX_ITEMS):
    """A call's arguments (a list or tuple) and keywords as copy([list(ARGS), KWARGS], ...)
    copies them: the usual call, all scalars, without walking them as a tree."""
    size = 3 * ITEM_SIZE  # the pair, the arguments' list, the keywords' dict
    for value in args:
        n = _scalar_size(value)
        if n < 0:
            break
        size += n
    else:
        for key, value in kwargs.items():
            n = _scalar_size(value)
            if n < 0 or type(key) is not str or not key.isascii():
                break
            size += n + len(key)
        else:
            if size <= max_size and 2 + len(args) + len(kwargs) <= max_items:
                return [list(args), dict(kwargs)]
    return copy([list(args), kwargs], where, max_size, max_items=max_items)


def _scalar_size(value) -> int:
    """What VALUE counts toward a size budget when it is a scalar that copies as it is
    (ASCII text, bytes, a 64-bit int, a float, a bool, None); -1 for anything else."""
    kind = type(value)
    if kind is str:
        return ITEM_SIZE + len(value) if value.isascii() else -1
    if kind is int:
        return ITEM_SIZE if INT_MIN <= value <= INT_MAX else -1
    if kind is bytes:
        return ITEM_SIZE + len(value)
    return ITEM_SIZE if kind in _SCALARS else -1


def problem(value, where: str, max_size: int) -> str | None:
    """Why VALUE is not plain data within MAX_SIZE (a message naming WHERE), or None."""
    try:
        copy(value, where, max_size, exact_text=True)
    except PlainError as exc:
        return str(exc)
    except RecursionError:
        return f"{where} nests lists/dicts deeper than {MAX_DEPTH} levels"
    return None


def utf8(text: str) -> str:
    """TEXT as a str the wire can carry: lone surrogates become backslash escapes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _exact(text: str) -> str:
    """TEXT unchanged when UTF-8 can carry it, else PlainError naming the first lone surrogate."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError as exc:
        raise PlainError(
            f"is not valid text: a lone surrogate (U+{ord(text[exc.start]):04X}) at index "
            f"{exc.start}; pass text that encodes as UTF-8",
            "type",
        ) from None


def _short(key) -> str:
    text = repr(key)
    return text if len(text) <= 40 else text[:40] + "…"
