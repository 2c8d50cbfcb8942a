"""Plain data at the tool boundary: copies within one call's budgets, and renderings.

Arguments come out of the jail and results come out of tools; both are copied
with `lackjail.plain` (which owns what plain data is) within the budgets of one
call. `display` and `summarize` make short, terminal-safe renderings for traces
and approval prompts.
"""

from lackjail import plain
from lackjail.errors import ToolCallError
from lackjail.terminal import terminal_safe

CALL_MAX_ITEMS = 100_000  # list elements plus dict entries of one call's arguments or result
ARGS_MAX_SIZE = 32 << 20  # bytes of all arguments of one call
RESULT_MAX_SIZE = 32 << 20  # of one tool result


def plain_copy(value, what: str, max_size: int):
    """A fresh plain copy of VALUE (tuples become lists), or ToolCallError naming WHAT and where."""
    try:
        return plain.copy(value, what, max_size, max_items=CALL_MAX_ITEMS)
    except plain.PlainError as exc:
        raise ToolCallError(str(exc)) from None


def plain_call(args, kwargs: dict, what: str, max_size: int) -> list:
    """[args, kwargs], fresh plain copies of a call's arguments (as plain_copy([list(ARGS),
    KWARGS]) makes them), or ToolCallError naming WHAT and where."""
    try:
        return plain.copy_call(args, kwargs, what, max_size, max_items=CALL_MAX_ITEMS)
    except plain.PlainError as exc:
        raise ToolCallError(str(exc)) from None


def display(value, width: int = 80, depth: int = 0, quote: bool = True):
    """A short plain rendering of VALUE for traces, prompts and messages: long strings and
    containers are cut, bytes summarized. Strings are repr()'d (QUOTE, for messages) or kept
    as text with control characters escaped (for the trace, whose args are JSON values)."""
    kind = type(value)
    if kind is str:
        cut = value[:width]
        more = f"…(+{len(value) - width} chars)" if len(value) > width else ""
        return f"{cut!r}{more}" if quote else terminal_safe(cut) + more
    if kind is bytes:
        return f"<{len(value)} bytes>"
    if kind in (list, tuple):
        if depth >= 2:
            return f"[…{len(value)} items]"
        shown = [display(v, width // 2, depth + 1, quote) for v in value[:5]]
        return shown + ([f"…(+{len(value) - 5} items)"] if len(value) > 5 else [])
    if kind is dict:
        if depth >= 2:
            return f"{{…{len(value)} keys}}"
        keys = list(value)[:5]
        entries = {
            str(display(k, 40, 0, quote)): display(value[k], width // 2, depth + 1, quote)
            for k in keys
        }
        if len(value) > 5:
            entries["…"] = f"+{len(value) - 5} keys"
        return entries
    if kind in (bool, int, float, type(None)):
        return (
            value
            if kind is not int or plain.INT_MIN <= value <= plain.INT_MAX
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
