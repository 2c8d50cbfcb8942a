"""The rules tier: built-in keyword rules for the commonest intents, no model needed.

A rule applies only when the kit has every tool it calls, each taking one
string (so the call it writes binds), and fills its program like a template
does: captured text becomes a string value, never code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lackjail.infer.templates import fill, unquote
from lackjail.kit.tools.toolspec import type_accepts

# Names people give file kinds, and the extension each means.
KINDS = {
    "python": "py",
    "py": "py",
    "javascript": "js",
    "js": "js",
    "typescript": "ts",
    "ts": "ts",
    "rust": "rs",
    "ruby": "rb",
    "go": "go",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "c++": "cpp",
    "header": "h",
    "shell": "sh",
    "bash": "sh",
    "markdown": "md",
    "md": "md",
    "text": "txt",
    "txt": "txt",
    "json": "json",
    "yaml": "yaml",
    "yml": "yml",
    "toml": "toml",
    "html": "html",
    "css": "css",
    "csv": "csv",
    "xml": "xml",
    "sql": "sql",
    "log": "log",
    "ini": "ini",
    "rst": "rst",
}
_EXPLICIT_EXT = re.compile(r"\*?\.([A-Za-z0-9_+-]{1,16})")
_ARTICLE = r"(?:all\s+(?:of\s+)?)?(?:the\s+)?"
_KIND = r"(?P<kind>[\w.*+#-]{1,20})"
_PATH = r"""(?P<path>"[^"\n]+"|'[^'\n]+'|`[^`\n]+`|\S+)"""
_END = r"\s*[.!?]?\s*"


def _files_of_kind(values: dict) -> dict | None:
    """{kind} -> a find_files pattern; None when the word is not a known kind or an extension."""
    kind = values["kind"].lower()
    explicit = _EXPLICIT_EXT.fullmatch(kind)
    ext = explicit.group(1) if explicit else KINDS.get(kind)
    return {"pattern": f"**/*.{ext}"} if ext else None


def _path(values: dict) -> dict:
    return {"path": unquote(values["path"])}


@dataclass(frozen=True)
class Rule:
    name: str
    regex: re.Pattern
    tools: tuple
    body: str
    values: Callable[[dict], dict | None]

    def apply(self, intent: str, kit) -> str | None:
        """The program for INTENT, or None when the rule does not match or the kit lacks a tool."""
        if not all(_takes_one_string(kit, tool) for tool in self.tools):
            return None
        found = self.regex.fullmatch(intent)
        if found is None:
            return None
        values = self.values(found.groupdict())
        return None if values is None else fill(self.body, values)


def _rule(name, regex, tools, body, values) -> Rule:
    return Rule(name, re.compile(r"\s*" + regex + _END, re.IGNORECASE), tools, body, values)


RULES = (
    _rule(
        "read-file",
        r"(?:read|show|print|cat|display|open|get)\s+(?:me\s+)?(?:the\s+)?(?:contents?\s+of\s+)?"
        r"(?:the\s+)?file\s+" + _PATH,
        ("read_file",),
        "read_file({path})",
        _path,
    ),
    _rule(
        "find-and-count-files-of-kind",
        r"(?:find|list|get)\s+" + _ARTICLE + _KIND + r"\s+files\s+and\s+count\s+them",
        ("find_files",),
        "len(find_files({pattern}))",
        _files_of_kind,
    ),
    _rule(
        "count-files-of-kind",
        r"(?:count|how\s+many)\s+" + _ARTICLE + _KIND + r"\s+files(?:\s+are\s+there)?",
        ("find_files",),
        "len(find_files({pattern}))",
        _files_of_kind,
    ),
    _rule(
        "list-files-of-kind",
        r"(?:find|list|show|get)\s+(?:me\s+)?" + _ARTICLE + _KIND + r"\s+files",
        ("find_files",),
        "find_files({pattern})",
        _files_of_kind,
    ),
    _rule(
        "glob",
        r"(?:glob|(?:find|list)\s+(?:all\s+)?files\s+matching)\s+(?P<pattern>\S+)",
        ("find_files",),
        "find_files({pattern})",
        lambda v: {"pattern": unquote(v["pattern"])},
    ),
)


def _takes_one_string(kit, tool: str) -> bool:
    spec = kit.specs.get(tool) if tool in kit.names else None
    if spec is None:
        return False
    required = [a for a in spec.args if a.required]
    return len(required) == 1 and spec.args[0] is required[0] and type_accepts(required[0].type, "")


def generate(intent: str, kit) -> tuple[str, str] | None:
    """(rule name, program) of the first rule that fits INTENT and KIT's tools, or None."""
    if kit is None:
        return None
    for rule in RULES:
        program = rule.apply(intent, kit)
        if program is not None:
            return rule.name, program
    return None
