"""Plain data: the only values that cross between a program and a tool.

Arguments come out of the jail and results come out of tools; both are
copied here into fresh None/bool/int/float/str/bytes/list/dict values with
exact types (no subclasses, so no methods of the sender's choosing), bounded
in size, item count and depth. `display` and `summarize` make short,
terminal-safe renderings for traces and approval prompts.
"""

from lackjail.errors import ToolCallError

MAX_DEPTH = 32  # nesting of lists and dicts
MAX_ITEMS = 100_000  # list elements plus dict entries, all levels together
MAX_INT = 1 << 64  # the wire carries 64-bit integers
ARGS_MAX_SIZE = 32 << 20  # characters/bytes of all arguments of one call
RESULT_MAX_SIZE = 32 << 20  # of one tool result; a wire frame is 64 MiB

PLAIN_TYPES = "None, bool, int, float, str, bytes, list, dict"
_SCALARS = (bool, float, str, bytes, type(None))


class _Tally:
    __slots__ = ("size", "items", "max_size")

    def __init__(self, max_size):
        self.size, self.items, self.max_size = 0, 0, max_size


def plain_copy(value, what: str, max_size: int):
    """A fresh plain copy of VALUE (tuples become lists), or ToolCallError naming WHAT and where."""
    return _copy(value, what, _Tally(max_size), 0)


def _copy(value, where, tally, depth):
    kind = type(value)
    if kind is int:
        if not -MAX_INT < value < MAX_INT:
            raise ToolCallError(f"{where} is an integer wider than 64 bits")
        tally.size += 8
    elif kind in _SCALARS:
        tally.size += len(value) if kind is str or kind is bytes else 8
    elif kind is list or kind is tuple or kind is dict:
        if depth >= MAX_DEPTH:
            raise ToolCallError(f"{where} nests lists/dicts deeper than {MAX_DEPTH} levels")
        tally.items += len(value)
        if tally.items > MAX_ITEMS:
            raise ToolCallError(f"{where} holds more than {MAX_ITEMS} list/dict items")
    else:
        raise ToolCallError(
            f"{where} is of type {kind.__name__}, which is not plain data ({PLAIN_TYPES})"
        )
    if tally.size > tally.max_size:
        raise ToolCallError(f"{where} is larger than {tally.max_size} bytes")
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise ToolCallError(
                    f"{where} has a key of type {type(key).__name__}; dict keys must be str"
                )
            tally.size += len(key)
            out[key] = _copy(item, f"{where}[{display(key, 40)}]", tally, depth + 1)
        return out
    if kind is list or kind is tuple:
        return [_copy(item, f"{where}[{i}]", tally, depth + 1) for i, item in enumerate(value)]
    return value


def display(value, width: int = 80, depth: int = 0):
    """A short plain rendering of VALUE for traces and prompts; strings are repr()'d (escapes control characters)."""
    kind = type(value)
    if kind is str:
        if len(value) <= width:
            return repr(value)
        return f"{value[:width]!r}…(+{len(value) - width} chars)"
    if kind is bytes:
        return f"<{len(value)} bytes>"
    if kind in (list, tuple):
        if depth >= 2:
            return f"[…{len(value)} items]"
        shown = [display(v, width // 2, depth + 1) for v in value[:5]]
        return shown + ([f"…(+{len(value) - 5} items)"] if len(value) > 5 else [])
    if kind is dict:
        if depth >= 2:
            return f"{{…{len(value)} keys}}"
        keys = list(value)[:5]
        shown = {str(display(k, 40)): display(value[k], width // 2, depth + 1) for k in keys}
        if len(value) > 5:
            shown["…"] = f"+{len(value) - 5} keys"
        return shown
    if kind in (bool, int, float, type(None)):
        return (
            value
            if kind is not int or -MAX_INT < value < MAX_INT
            else f"<int of {value.bit_length()} bits>"
        )
    return f"<{kind.__name__}>"


def summarize(value) -> str:
    """One short line about a tool result, for the trace."""
    kind = type(value)
    if kind is str:
        return f"str ({len(value)} chars)"
    if kind is bytes:
        return f"bytes ({len(value)})"
    if kind is list:
        return f"list ({len(value)} items)"
    if kind is dict:
        return f"dict ({len(value)} keys)"
    return repr(value)[:60]
