"""The templates tier: stored programs that match an intent by pattern, filled in as data.

A template is `.lackjail/templates/NAME.tmpl`: a frontmatter (`name`,
`pattern` with `{placeholder}`s, `success_count`, `fail_count`) and a lackpy
body. In the body a placeholder is `{name}` written as code (it becomes a
string literal) or `{name}` inside a plain (not f-) string literal (the
literal's text is filled in). Captured text is hostile: it is substituted into the parsed tree
as a string value and the result is re-parsed and compared, so a capture can
change a literal's value and nothing else (lackpy 0.15.1 spliced it as code).
"""

from __future__ import annotations

import ast
import errno
import fcntl
import json
import os
import re
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lackjail.errors import InputError, KitError, ToolCallError
from lackjail.workspace.beneath import Tree
from lackjail.workspace.files import FileTooLarge, read_regular
from lackjail.workspace.hostfs import workspace_root_of, write_whole

TEMPLATES_DIR = Path(".lackjail") / "templates"
SUFFIX = ".tmpl"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_TEMPLATE_BYTES = 256 * 1024
LOCK_WAIT_S = 5.0  # the longest a save or a count waits for the folder's lock
MAX_PLACEHOLDERS = 8
MAX_NESTING = 100  # AST levels a body may have; the validator's own cap is of the same order
FIELDS = ("name", "pattern", "success_count", "fail_count")
_QUOTES = {'"': '"', "'": "'", "`": "`", "\u201c": "\u201d", "\u2018": "\u2019"}


class TemplateError(InputError, ValueError):
    """A template that cannot be parsed, saved or filled in; the message says which and why."""


# --- filling a body -------------------------------------------------------------------------


class _Fill(ast.NodeTransformer):
    """Replace placeholders by string values in a parsed body; never touches code."""

    def __init__(self, values: dict):
        self.values = values

    def visit_Set(self, node):
        if (
            len(node.elts) == 1
            and isinstance(node.elts[0], ast.Name)
            and node.elts[0].id in self.values
        ):
            return ast.copy_location(ast.Constant(self.values[node.elts[0].id]), node)
        return self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and "{" in node.value:
            text = PLACEHOLDER.sub(lambda m: self.values.get(m.group(1), m.group(0)), node.value)
            return ast.copy_location(ast.Constant(text), node)
        return node

    def visit_JoinedStr(self, node):
        return node  # f-strings hold code and format specs: never filled in


def fill(body: str, values: dict) -> str:
    """BODY with each placeholder replaced by its value as a string literal, as program text.

    Never raises anything but TemplateError: a body nested deeper than
    MAX_NESTING is refused before the (recursive) ast walks could overflow.
    """
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise TemplateError(f"the program does not parse: {exc}") from None
    if _depth(tree) > MAX_NESTING:
        raise TemplateError(
            f"the program is nested more than {MAX_NESTING} levels deep; simplify it"
        )
    try:
        filled = _Fill({k: str(v) for k, v in values.items()}).visit(tree)
        filled = ast.fix_missing_locations(filled)
        text = ast.unparse(filled)
        faithful = ast.dump(ast.parse(text)) == ast.dump(filled)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise TemplateError(f"the program cannot be filled in: {type(exc).__name__}") from None
    if not faithful:  # the rendering must be exactly the filled tree
        raise TemplateError("the filled-in program does not render faithfully; not used")
    return text


def as_checked(body: str, names) -> str:
    """BODY as a Checker judges it, with the placeholder NAMES as parameters: each `{name}`
    written as code loses its braces (two spaces, so every line and column stays where it was
    written) and reads as the parameter `name`, not as a set holding it."""
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return body  # the Checker says what is wrong with it
    lines = [line.encode("utf-8") for line in body.split("\n")]
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Set)
            and len(node.elts) == 1
            and isinstance(node.elts[0], ast.Name)
            and node.elts[0].id in names
            and node.end_lineno is not None
            and node.end_col_offset is not None
        ):
            continue
        for line, col, brace in (
            (node.lineno, node.col_offset, b"{"),
            (node.end_lineno, node.end_col_offset - 1, b"}"),
        ):
            text = lines[line - 1]
            if text[col : col + 1] == brace:  # where the parser says (a line break it counts
                lines[line - 1] = text[:col] + b" " + text[col + 1 :]  # and split does not: no)
    return "\n".join(line.decode("utf-8") for line in lines)


def _depth(tree: ast.AST) -> int:
    """The deepest nesting of TREE's nodes, counted without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


# --- patterns -------------------------------------------------------------------------------


def _segment(text: str, first: bool, last: bool) -> re.Pattern | None:
    """Literal pattern text as a regex (None when it is only whitespace).

    Case-insensitive; any run of whitespace matches any other. No quantifier
    sits at either edge (edge whitespace is checked by look-around and trimmed
    from the captures), so searching costs linear time whatever the intent.
    """
    words = text.split()
    if not words:
        return None
    lead = r"\s*" if first else (r"(?<=\s)" if text[0].isspace() else "")
    trail = r"\s*\Z" if last else (r"(?=\s)" if text[-1].isspace() else "")
    return re.compile(lead + r"\s+".join(re.escape(w) for w in words) + trail, re.IGNORECASE)


@dataclass(frozen=True)
class IntentPattern:
    """An intent pattern: literal text with `{name}` captures, matched without backtracking.

    Each capture is the shortest non-blank text after which the next literal
    part follows; the last literal part must end the intent. A left-to-right
    scan, so a hostile intent cannot make matching slow.
    """

    text: str
    names: tuple
    segments: tuple  # compiled literal parts (None: blank), len(names) + 1

    @classmethod
    def compile(cls, text: str) -> IntentPattern:
        if not isinstance(text, str) or not text.strip():
            raise TemplateError('a pattern must be non-empty text, e.g. "read the file {path}"')
        parts = PLACEHOLDER.split(text)
        literals, names = parts[0::2], parts[1::2]
        for literal in literals:
            if "{" in literal or "}" in literal:
                raise TemplateError(
                    f"pattern {text!r}: braces may only enclose a placeholder name, as in {{path}}"
                )
        if len(set(names)) != len(names):
            raise TemplateError(f"pattern {text!r}: each placeholder may appear once")
        if len(names) > MAX_PLACEHOLDERS:
            raise TemplateError(f"pattern {text!r}: at most {MAX_PLACEHOLDERS} placeholders")
        for i, literal in enumerate(literals[1:-1], start=1):
            if not literal.strip():
                raise TemplateError(
                    f"pattern {text!r}: {{{names[i - 1]}}} and {{{names[i]}}} need words between "
                    "them"
                )
        last = len(literals) - 1
        segments = tuple(_segment(lit, i == 0, i == last) for i, lit in enumerate(literals))
        return cls(text, tuple(names), segments)

    def match(self, intent: str) -> dict | None:
        """The captured values (trimmed, one pair of enclosing quotes removed), or None."""
        pos = 0
        if self.segments[0] is not None:
            found = self.segments[0].match(intent)
            if found is None:
                return None
            pos = found.end()
        values = {}
        for name, segment in zip(self.names, self.segments[1:]):
            if segment is None:  # the pattern ends with this placeholder: it takes the rest
                found_start = found_end = len(intent)
            else:
                found = segment.search(intent, pos)
                while found is not None and not intent[pos : found.start()].strip():
                    found = segment.search(intent, found.start() + 1)
                if found is None:
                    return None
                found_start, found_end = found.start(), found.end()
            value = intent[pos:found_start].strip()
            if not value:
                return None
            values[name] = unquote(value)
            pos = found_end
        return values


def unquote(text: str) -> str:
    """TEXT without one pair of enclosing quotes: users quote paths with spaces."""
    if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
        return text[1:-1]
    return text


# --- template files -------------------------------------------------------------------------


@dataclass
class Template:
    name: str
    pattern: IntentPattern
    body: str
    success_count: int = 0
    fail_count: int = 0
    path: Path | None = field(default=None, compare=False)

    def match(self, intent: str) -> dict | None:
        return self.pattern.match(intent)

    def instantiate(self, values: dict) -> str:
        return fill(self.body, values)

    def unused_placeholders(self) -> list:
        """Pattern placeholders the body never uses (filling them in changes nothing)."""
        base = {n: f"a{n}" for n in self.pattern.names}
        program = self.instantiate(base)
        return [n for n in self.pattern.names if self.instantiate({**base, n: f"b{n}"}) == program]

    def render(self) -> str:
        """The file text; the pattern is written as a JSON string so any character survives."""
        return (
            f"---\nname: {self.name}\npattern: "
            f"{json.dumps(self.pattern.text, ensure_ascii=False)}\n"
            f"success_count: {self.success_count}\nfail_count: {self.fail_count}\n---\n"
            f"{self.body.strip()}\n"
        )

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "pattern": self.pattern.text,
            "success_count": self.success_count,
            "fail_count": self.fail_count,
            "path": str(self.path) if self.path else None,
        }


def parse_template(text: str, path: Path | None = None) -> Template:
    """A Template from file text; TemplateError says what is wrong."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise TemplateError(
            "a template starts with a '---' line, then name:, pattern:, '---' and the program"
        )
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise TemplateError("the frontmatter has no closing '---' line") from None
    meta = {}
    for line in lines[1:end]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in FIELDS:
            raise TemplateError(
                f"frontmatter line {line.strip()!r}: expected one of {', '.join(FIELDS)}"
            )
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:
                raise TemplateError(
                    f"frontmatter {key}: {value} is not a valid quoted string"
                ) from None
        meta[key] = value
    name = meta.get("name") or (path.stem if path else "")
    if not isinstance(name, str) or not NAME.match(name):
        raise TemplateError(f"name {name!r}: use letters, digits, '_', '.', '-' (at most 64)")
    if path is not None and name != path.stem:
        raise TemplateError(
            f"name {name!r} differs from the file name; rename the file to {name}{SUFFIX}"
        )
    counts = {}
    for key in ("success_count", "fail_count"):
        raw = str(meta.get(key, "0"))
        if not raw.isdigit():
            raise TemplateError(f"{key} must be a whole number, not {raw!r}")
        counts[key] = int(raw)
    body = "\n".join(lines[end + 1 :]).strip()
    if not body:
        raise TemplateError("the template has no program after the frontmatter")
    template = Template(
        name, IntentPattern.compile(meta.get("pattern", "")), body, path=path, **counts
    )
    fill(body, {})  # the body must parse
    return template


class TemplateStore:
    """The `.lackjail/templates` folder: load, match, save, and count outcomes (atomically).

    The folder belongs to a (hostile) workspace: it is reached beneath the
    workspace root with no symlink on the way, files in it are opened by
    descriptor and never through a symlink, and writes are made as the
    workspace's owner.
    """

    def __init__(self, root=None):
        """The store of ROOT (a workspace `Root`, used as is, or its folder; default: the
        current folder)."""
        self.root = root if root is not None else os.getcwd()
        self.directory = Path(self.root) / TEMPLATES_DIR  # for messages

    @classmethod
    def at(cls, root=None) -> TemplateStore:
        return cls(root)

    @contextmanager
    def _folder(self, create: bool = False):
        """The folder's Tree for one operation, reached beneath the workspace's descriptor (a
        folder is opened once for the operation, a `Root` never again), as the workspace's
        owner: missing folders are made as the owner too."""
        with ExitStack() as stack:
            try:
                root = stack.enter_context(workspace_root_of(self.root))
            except KitError as exc:
                raise FileNotFoundError(errno.ENOENT, str(exc)) from None
            stack.enter_context(root.owner.acting())
            tree = root.tree.below(TEMPLATES_DIR.as_posix(), create=create)
            stack.callback(tree.close)
            yield tree

    def load(self) -> tuple[list, list]:
        """(templates, problems): a broken file is reported and skipped, never fatal."""
        templates, problems = [], []
        try:
            with self._folder() as tree:
                listing = tree.open("", os.O_RDONLY | os.O_DIRECTORY)
                try:
                    names = sorted(n for n in os.listdir(listing) if n.endswith(SUFFIX))
                finally:
                    os.close(listing)
                for name in names:
                    try:  # a symlink is refused: a template is read from this folder only
                        data, _ = read_regular(tree, name, MAX_TEMPLATE_BYTES, name)
                        templates.append(
                            parse_template(data.decode("utf-8"), self.directory / name)
                        )
                    except FileTooLarge:
                        problems.append(f"{name}: larger than {MAX_TEMPLATE_BYTES} bytes")
                    except (ToolCallError, UnicodeDecodeError, TemplateError) as exc:
                        problems.append(f"{name}: {exc}")
        except FileNotFoundError:
            return [], []
        except OSError as exc:
            return templates, [f"{TEMPLATES_DIR}: {exc.strerror or exc}"]
        return templates, problems

    def matches(self, intent: str) -> tuple[list, list]:
        """([(template, values)], problems): matching templates, the best track record first."""
        templates, problems = self.load()
        found = [(t, v) for t in templates if (v := t.match(intent)) is not None]
        found.sort(key=lambda tv: (tv[0].fail_count - tv[0].success_count, tv[0].name))
        return found, problems

    def create(self, name: str, pattern: str, body: str, force: bool = False) -> Template:
        """Save a new template; refuse to replace an existing one unless FORCE."""
        if not NAME.match(name or ""):
            raise TemplateError(f"name {name!r}: use letters, digits, '_', '.', '-' (at most 64)")
        if not body.strip():
            raise TemplateError("the program is empty")
        template = Template(
            name,
            IntentPattern.compile(pattern),
            body.strip(),
            path=self.directory / f"{name}{SUFFIX}",
        )
        fill(template.body, {})
        unused = template.unused_placeholders()
        if unused:
            marks = ", ".join(f"{{{n}}}" for n in unused)
            raise TemplateError(
                f"the program never uses {marks} of the pattern; write it as "
                f"{{name}} in code or inside a string literal"
            )
        try:
            with self._folder(create=True) as tree, self._locked(tree):
                self._write(tree, template, replace=force)
        except OSError as exc:
            raise TemplateError(f"cannot save the template: {exc.strerror or exc}") from None
        return template

    def record(self, name: str, ok: bool) -> bool:
        """Count one run of template NAME; re-read under a lock so concurrent counts add up."""
        if not NAME.match(name or ""):
            return False
        file = f"{name}{SUFFIX}"
        try:
            with self._folder() as tree, self._locked(tree):
                data, _ = read_regular(tree, file, MAX_TEMPLATE_BYTES, file)
                template = parse_template(data.decode("utf-8"), self.directory / file)
                if ok:
                    template.success_count += 1
                else:
                    template.fail_count += 1
                self._write(tree, template, replace=True)
        except (OSError, ToolCallError, UnicodeDecodeError, TemplateError):
            return False  # removed, broken or read-only: the file stays as it was
        return True

    @contextmanager
    def _locked(self, tree: Tree):
        """The templates folder locked (flock on the folder itself: a lock file the workspace
        holds could be a FIFO or a device, which must never be opened)."""
        fd = tree.open("", os.O_RDONLY | os.O_DIRECTORY)
        try:
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:  # anyone who can read the folder can hold its lock: wait a while only
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise OSError(
                            errno.ETIMEDOUT,
                            f"{TEMPLATES_DIR} stayed locked by another process for "
                            f"{LOCK_WAIT_S:g} s; try again once it lets go",
                        ) from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)

    def _write(self, tree: Tree, template: Template, replace: bool) -> None:
        """Write via a temporary file: readers see the old file or the new one, never half of
        one.
        """
        try:
            write_whole(tree, f"{template.name}{SUFFIX}", template.render().encode(), replace)
        except FileExistsError:
            raise TemplateError(
                f"template {template.name!r} exists at {template.path}; pass --force to replace it"
            ) from None
