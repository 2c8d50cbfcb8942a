"""Turn a model's reply into program text: drop code fences, reasoning and prose around the code.

This only trims text. It never makes a reply trusted: whatever it returns is
validated like any other program, and a wrong guess here costs one round of
validator feedback, not safety.
"""

from __future__ import annotations

import ast
import re

MAX_REPLY_CHARS = 256 * 1024
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(
    r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[ \t]*\n(.*?)^[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE
)
_CODE_LANGS = {"", "python", "py", "python3", "lackpy"}
# A line of prose: starts like a sentence, holds no code punctuation.
_PROSE = re.compile(r"^\s*[A-Z][^=()\[\]{}#\"]*$")
_MAX_PROSE_LINES = 5


def sanitize(reply: str) -> str:
    """The program inside REPLY: the first Python code fence if any, else the reply minus prose
    lines.
    """
    text = _THINK.sub("", reply[:MAX_REPLY_CHARS]).strip()
    fences = [m for m in _FENCE.finditer(text) if m.group(2).lower() in _CODE_LANGS]
    if fences:
        return fences[0].group(3).strip("\n").rstrip()
    text = _strip_unclosed_fence(text)
    if len(text) > 1 and text[0] == text[-1] == "`" and "\n" not in text:
        text = text.strip("`")
    if _parses(text):
        return text
    return _drop_prose(text)


def _strip_unclosed_fence(text: str) -> str:
    """A reply cut off before its closing fence: keep what follows the opening one."""
    lines = text.split("\n")
    if lines and re.match(r"^(`{3,}|~{3,})[\w+.-]*\s*$", lines[0]):
        lines = lines[1:]
        if lines and re.match(r"^(`{3,}|~{3,})\s*$", lines[-1]):
            lines = lines[:-1]
    return "\n".join(lines).strip()


def _drop_prose(text: str) -> str:
    lines = text.split("\n")
    start, end = 0, len(lines)
    while start < min(end, _MAX_PROSE_LINES) and (
        not lines[start].strip() or _PROSE.match(lines[start])
    ):
        start += 1
    while (
        end > start
        and len(lines) - end < _MAX_PROSE_LINES
        and (not lines[end - 1].strip() or _PROSE.match(lines[end - 1]))
    ):
        end -= 1
    return "\n".join(lines[start:end]).strip("\n")


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
