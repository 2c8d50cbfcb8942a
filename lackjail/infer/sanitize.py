"""Turn a model's reply into program text: drop code fences, reasoning and prose around the code.

`sanitize` is delegate's (fences, reasoning, prose); `unfence` is what `run`, MCP and batch
accept (only a Markdown fence around the program), with `place_back` for error places.

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
    r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[ \t]*\r?\n(.*?)^[ \t]*\1[ \t]*\r?$",
    re.DOTALL | re.MULTILINE,
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
    fence = _first_fence(text)
    if fence is not None:
        return fence.group(3).strip("\n").rstrip()
    text = _strip_unclosed_fence(text)
    if len(text) > 1 and text[0] == text[-1] == "`" and "\n" not in text:
        text = text.strip("`")
    if _parses(text):
        return text
    return _drop_prose(text)


def _first_fence(text: str):
    """The match of TEXT's first code fence of Python (or of no language), or None."""
    return next((m for m in _FENCE.finditer(text) if m.group(2).lower() in _CODE_LANGS), None)


def unfence(program):
    """PROGRAM (str or bytes) as a model often sends it, unwrapped: the code of its first
    Markdown fence (```python, ```py, ``` or ~~~, prose around it allowed), and how many lines
    of PROGRAM come before that code (add them to a line number in the code to place it in
    PROGRAM). A program without such a fence, or one that Python parses as it is (a fence
    inside a string), comes back whole, with 0."""
    try:
        text = program.decode("utf-8") if isinstance(program, bytes) else program
    except UnicodeDecodeError:  # the validator says where, in what was sent
        return program, 0
    if not isinstance(text, str) or ("```" not in text and "~~~" not in text) or _parses(text):
        return program, 0
    fence = _first_fence(text)
    if fence is None:
        return program, 0
    return fence.group(3), text.count("\n", 0, fence.start(3))


def place_back(result: dict, lines: int) -> dict:
    """RESULT (a run's or a check's dict) with every line number of its errors and their
    tracebacks moved down by LINES: places in the unwrapped code become places in what was
    sent (see unfence)."""
    if not lines:
        return result
    errors = []
    for error in result.get("errors") or []:
        error = dict(error)
        if isinstance(error.get("line"), int):
            error["line"] += lines
        if error.get("traceback"):
            error["traceback"] = [
                {**f, "line": f["line"] + lines} if isinstance(f.get("line"), int) else f
                for f in error["traceback"]
            ]
        errors.append(error)
    return {**result, "errors": errors}


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
