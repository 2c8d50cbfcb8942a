"""Text a program (or a workspace) chose, made safe to print on a person's terminal.

Escape sequences could move the cursor, hide lines, retitle the window or
reorder text (bidi controls), so every control and format character is
printed escaped (`\\x1b`, `\\r`, `\\u202e`); newlines and tabs survive where the
text is multi-line output.
"""

_KEPT_IN_OUTPUT = "\n\t"


def terminal_safe(text, multiline: bool = False) -> str:
    """TEXT with every non-printable character escaped; MULTILINE keeps newlines and tabs."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c == " " or (multiline and c in _KEPT_IN_OUTPUT) else repr(c)[1:-1]
        for c in text
    )
