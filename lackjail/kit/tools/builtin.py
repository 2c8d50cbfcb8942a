"""The built-in file tools: read_file, find_files, list_dir, grep, write_file, edit_file.

Each takes the call's ToolContext first (bound by the builtin provider, not
visible to programs) and touches files only through its confined
WorkspaceView, so every path is checked and every write is staged. Their
docstrings are their specs (see docspec).
"""

from __future__ import annotations

from lackjail.errors import ToolCallError
from lackjail.workspace.files import FileTooLarge
from lackjail.workspace.paths import show

MAX_GREP_MATCHES = 10_000  # matching lines one grep returns
MAX_GREP_LINE = 500  # characters of a matching line returned


def _text(data: bytes, path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolCallError(
            f"{show(path)} is not UTF-8 text (bad byte at offset {exc.start})"
        ) from None


def read_file(ctx, path: str) -> str:
    """Read a UTF-8 text file inside the workspace.

    Use: get the contents of one file you know the path of.
    Input: a path relative to the workspace.
    Output: the whole file as text, including writes made earlier in this run.
    Parameters:
        path (str): the file, relative to the workspace (no '..', no paths outside).
    Best Practices:
        - Call find_files first when you are not sure a path exists.
        - Files over 16 MiB and binary files are refused.
    """
    return _text(ctx.workspace.read_bytes(path), path)


def find_files(ctx, pattern: str) -> list[str]:
    """Find files in the workspace whose paths match a glob pattern.

    Use: discover which files exist before reading or editing them.
    Input: a glob relative to the workspace: * and ? match within a folder, ** across folders.
    Output: a sorted list of workspace-relative file paths.
    Parameters:
        pattern (str): e.g. "*.py", "src/**/*.md".
    Best Practices:
        - Anchor patterns to a folder ("src/**/*.py") rather than "**/*" to stay fast.
        - Hidden files match only when the pattern segment starts with a dot.
        - Symlinked folders are not searched; symlinks leading outside the workspace are left out.
    """
    return ctx.workspace.find(pattern)


def list_dir(ctx, path: str = ".") -> list[str]:
    """List one folder of the workspace.

    Use: see what a folder holds before reading files in it.
    Input: a workspace-relative folder ("." for the workspace itself).
    Output: a sorted list of names; folders end with "/".
    Parameters:
        path (str): the folder, relative to the workspace (no '..', no paths outside).
    Best Practices:
        - Use find_files to search several folders at once.
    """
    return ctx.workspace.list_dir(path)


def grep(ctx, text: str, pattern: str = "**/*") -> list[dict]:
    """Find the lines that contain a piece of text in the workspace's files.

    Use: locate where a name or message occurs without reading every file yourself.
    Input: the exact text to look for (not a regex) and a glob choosing the files.
    Output: a list of {"path", "line", "text"} (1-based line numbers), in path order.
    Parameters:
        text (str): the literal text to find (case-sensitive; not a regular expression).
        pattern (str): a glob of the files to search, e.g. "src/**/*.py" (default: all).
    Best Practices:
        - Narrow the pattern: every file searched counts against the run's read budget.
        - Binary files, files that are not UTF-8 and protected files are skipped.
    """
    if not isinstance(text, str) or not text:
        raise ToolCallError("text is empty; give the exact text to find")
    found = []
    for path in ctx.workspace.find(pattern):
        try:
            content = ctx.workspace.read_bytes(path).decode("utf-8")
        except (ToolCallError, UnicodeDecodeError) as exc:
            if isinstance(exc, ToolCallError) and not _skippable(exc):
                raise
            continue
        for number, line in enumerate(content.splitlines(), 1):
            if text in line:
                found.append({"path": path, "line": number, "text": line[:MAX_GREP_LINE]})
                if len(found) > MAX_GREP_MATCHES:
                    raise ToolCallError(
                        f"grep: more than {MAX_GREP_MATCHES} matching lines; narrow the pattern"
                    )
    return found


def _skippable(exc: ToolCallError) -> bool:
    """A file grep passes over (protected, too large, not regular), unlike a budget or a stop."""
    return type(exc) in (ToolCallError, FileTooLarge)


def write_file(ctx, path: str, content: str) -> bool:
    """Write a UTF-8 text file inside the workspace, replacing what was there.

    Use: create a file or replace its whole content.
    Input: a workspace-relative path and the full new text.
    Output: True once the write is staged and verified; it is applied only if the run succeeds.
    Parameters:
        path (str): the file, relative to the workspace; missing folders are created.
        content (str): the complete new content.
    Best Practices:
        - Prefer edit_file for small changes to existing files.
        - Writes under .git, .lackjail or site-packages and .pth files are refused.
    """
    ctx.workspace.write_bytes(path, content.encode("utf-8"))
    return True


def edit_file(ctx, path: str, old_str: str, new_str: str) -> bool:
    """Replace the first occurrence of a piece of text in a workspace file.

    Use: change part of an existing file without rewriting all of it.
    Input: the path, the exact text to find and the text to put in its place.
    Output: True once the edit is staged and verified; an error if old_str is not in the file.
    Parameters:
        path (str): the file, relative to the workspace.
        old_str (str): the exact text to replace (must occur in the file).
        new_str (str): the replacement text.
    Best Practices:
        - Include enough context in old_str to make it unique; only the first match changes.
    """
    if not old_str:
        raise ToolCallError("edit_file: old_str is empty; give the exact text to replace")
    text = _text(ctx.workspace.read_bytes(path), path)
    if old_str not in text:
        raise ToolCallError(f"edit_file: old_str was not found in {show(path)}")
    ctx.workspace.write_bytes(path, text.replace(old_str, new_str, 1).encode("utf-8"))
    return True


IMPLEMENTATIONS = {
    f.__name__: f for f in (read_file, find_files, list_dir, grep, write_file, edit_file)
}
# Grades and timeouts of the built-in tools (everything else comes from the docstrings).
SETTINGS: dict[str, dict] = {
    "read_file": {"grade_w": 1, "effects_ceiling": 1},
    "find_files": {"grade_w": 1, "effects_ceiling": 1, "timeout_s": 30.0},
    "list_dir": {"grade_w": 1, "effects_ceiling": 1},
    "grep": {"grade_w": 1, "effects_ceiling": 1, "timeout_s": 30.0},
    "write_file": {"grade_w": 3, "effects_ceiling": 3},
    "edit_file": {"grade_w": 3, "effects_ceiling": 3},
}
