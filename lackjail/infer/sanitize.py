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
_OPENING = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[ \t]*\r?")  # a whole line
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
        return fence[0].strip("\n").rstrip()
    text = _strip_unclosed_fence(text)
    if len(text) > 1 and text[0] == text[-1] == "`" and "\n" not in text:
        text = text.strip("`")
    if _parses(text):
        return text
    return _drop_prose(text)


def _first_fence(text: str):
    """(code, lines above it) of TEXT's first closed code fence of Python (or of no language),
    or None. One pass over the lines: a fence of another language is skipped whole, and an
    unclosed one ends the search (the rest of the text is inside it)."""
    lines = text.split("\n")  # "\r" stays at the end of a CRLF line: counted as the compiler does
    index = 0
    while index < len(lines):
        opening = _OPENING.fullmatch(lines[index])
        if opening is None:
            index += 1
            continue
        marker = opening.group(1)
        end = next(
            (i for i in range(index + 1, len(lines)) if lines[i].strip(" \t\r") == marker), None
        )
        if end is None:
            return None
        if opening.group(2).lower() in _CODE_LANGS:
            return "".join(line + "\n" for line in lines[index + 1 : end]), index + 1
        index = end + 1
    return None


def unfence(program):
    """PROGRAM (str or bytes) as a model often sends it, unwrapped: the code of its first
    Markdown fence (```python, ```py, ``` or ~~~, prose around it allowed), and how many lines
    of PROGRAM come before that code (add them to a line number in the code to place it in
    PROGRAM). A program without such a fence, one that Python parses as it is (a fence
    inside a string), or one over MAX_REPLY_CHARS (what it costs is the sender's choice: the
    validator's size cap judges it) comes back whole, with 0."""
    if not isinstance(program, (str, bytes)) or len(program) > MAX_REPLY_CHARS:
        return program, 0
    try:
        text = program.decode("utf-8") if isinstance(program, bytes) else program
    except UnicodeDecodeError:  # the validator says where, in what was sent
        return program, 0
    fence = _first_fence(text) if "```" in text or "~~~" in text else None
    if fence is None or _parses(text):  # one pass over the lines first; a parse only then
        return program, 0
    return fence


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
            error["traceback"] = [  # an earlier run's frame is on a line of that run's program
                {**f, "line": f["line"] + lines}
                if isinstance(f.get("line"), int) and not f.get("earlier")
                else f
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
