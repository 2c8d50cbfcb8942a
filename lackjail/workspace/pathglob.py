"""Glob patterns for find_files, matched segment by segment so they cannot leave the workspace.

`*`, `?` and `[...]` match within one path segment, `**` matches any number of
segments. Wildcards do not match a leading dot (hidden files and folders)
unless the pattern segment starts with one, as in the shell. A pattern is
refused when it is absolute, holds a `..` segment or a NUL byte.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from lackjail.errors import ToolCallError
from lackjail.workspace.paths import show

MAX_PATTERN_CHARS = 1024


class PathGlob:
    """A checked pattern; `step` advances a set of match states over one path segment."""

    def __init__(self, text):
        if type(text) is not str:
            raise ToolCallError(f"a pattern must be a str, not {type(text).__name__}")
        if not text or len(text) > MAX_PATTERN_CHARS:
            raise ToolCallError(f"a pattern must have 1 to {MAX_PATTERN_CHARS} characters")
        if "\x00" in text:
            raise ToolCallError(f"pattern {show(text)} contains a NUL byte")
        if text.startswith("/"):
            raise ToolCallError(
                f"pattern {show(text)} is absolute; patterns are relative to the workspace"
            )
        segments = [s for s in text.split("/") if s not in ("", ".")]
        if ".." in segments:
            raise ToolCallError(
                f"pattern {show(text)} contains '..'; patterns cannot leave the workspace"
            )
        if not segments:
            raise ToolCallError(f"pattern {show(text)} names no files")
        self.text = text
        self.segments = segments
        self.start = self._closure({0})

    def _closure(self, states: set) -> frozenset:
        """STATES plus those reached by letting each `**` match zero segments."""
        todo, done = list(states), set(states)
        while todo:
            i = todo.pop()
            if i < len(self.segments) and self.segments[i] == "**" and i + 1 not in done:
                done.add(i + 1)
                todo.append(i + 1)
        return frozenset(done)

    def step(self, states: frozenset, name: str) -> frozenset:
        """The states after matching one path segment NAME; empty means nothing below can match."""
        hidden = name.startswith(".")
        nxt = set()
        for i in states:
            if i >= len(self.segments):
                continue
            seg = self.segments[i]
            if seg == "**":
                if not hidden:
                    nxt.add(i)
            elif (not hidden or seg.startswith(".")) and fnmatchcase(name, seg):
                nxt.add(i + 1)
        return self._closure(nxt) if nxt else frozenset()

    def is_match(self, states: frozenset) -> bool:
        return len(self.segments) in states

    def matches(self, rel: str) -> bool:
        states = self.start
        for name in rel.split("/"):
            states = self.step(states, name)
            if not states:
                return False
        return self.is_match(states)
