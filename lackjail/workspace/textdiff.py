"""A unified diff whose cost stays linear in the lines compared, whatever a program wrote.

difflib matches lines in time that grows with the cube of their number when
lines recur (3,000 lines took seconds, 128,000 minutes). The common head and
tail are cut off first (linear), so a small edit in a big file is matched
exactly; a changed span of more than MAX_MATCHED_LINES lines is shown replaced
whole: still a unified diff `patch` applies, found without matching.
"""

from __future__ import annotations

import difflib
import re

MAX_MATCHED_LINES = 1_000  # changed lines (either side) difflib matches line by line
CONTEXT = 3  # unchanged lines around each change, as `diff -u`
_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def unified(old: list[str], new: list[str], source: str, target: str) -> list[str]:
    """The lines of a unified diff from OLD to NEW (lines with their line ends)."""
    if old == new:
        return []
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    start = max(head - CONTEXT, 0)  # what is kept of the head and tail: their context lines
    old_part, new_part = (
        old[start : len(old) - max(tail - CONTEXT, 0)],
        new[start : len(new) - max(tail - CONTEXT, 0)],
    )
    if max(len(old) - head - tail, len(new) - head - tail) > MAX_MATCHED_LINES:
        return _replaced(old_part, new_part, head - start, tail, start, source, target)
    lines = list(difflib.unified_diff(old_part, new_part, source, target, n=CONTEXT))
    return [_shift(line, start) if line.startswith("@@ ") else line for line in lines]


def _replaced(old, new, head: int, tail: int, start: int, source: str, target: str) -> list[str]:
    """One hunk: HEAD context lines, the span between them and TAIL's context replaced whole."""
    after = min(tail, CONTEXT)
    span = slice(head, len(old) - after), slice(head, len(new) - after)
    return [
        f"--- {source}\n",
        f"+++ {target}\n",
        f"@@ -{_range(start, len(old))} +{_range(start, len(new))} @@\n",
        *(" " + line for line in old[:head]),
        *("-" + line for line in old[span[0]]),
        *("+" + line for line in new[span[1]]),
        *(" " + line for line in old[len(old) - after :]),
    ]


def _range(start: int, length: int) -> str:
    """A hunk's `first,count` as `diff -u` writes it (an empty range names the line before)."""
    return f"{start + 1 if length else start},{length}"


def _shift(header: str, offset: int) -> str:
    """A hunk header of a diff of lines from OFFSET on, renumbered for the whole files."""
    if not offset:
        return header

    def renumber(match: re.Match) -> str:
        old, old_len, new, new_len = match.groups()
        return f"@@ -{int(old) + offset}{old_len or ''} +{int(new) + offset}{new_len or ''} @@"

    return _HUNK.sub(renumber, header, count=1)
