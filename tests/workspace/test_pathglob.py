"""find_files' patterns (`workspace/pathglob.py`): matched segment by segment, never outside."""

import pytest

from lackjail.errors import ToolCallError
from lackjail.workspace.pathglob import PathGlob


@pytest.mark.parametrize(
    "pattern, path, matches",
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),  # `*` stays within one segment
        ("**/*.py", "a.py", True),  # `**` matches no segment too
        ("**/*.py", "src/pkg/a.py", True),
        ("src/?.py", "src/a.py", True),
        ("src/[ab].py", "src/c.py", False),
        ("*", ".env", False),  # a wildcard skips hidden names, as the shell does
        ("**/*.py", ".git/hooks/x.py", False),
        (".*", ".env", True),  # unless the segment itself starts with a dot
        ("./src//a.py", "src/a.py", True),  # empty and `.` segments are nothing
    ],
)
def test_a_pattern_matches_as_the_shell_would(pattern, path, matches):
    assert PathGlob(pattern).matches(path) is matches


@pytest.mark.parametrize(
    "pattern, says",
    [
        ("/etc/*", "absolute"),
        ("../*", "'..'"),
        ("src/../../x", "'..'"),
        ("a\x00b", "NUL"),
        ("", "1 to"),
        ("./", "names no files"),
        (b"*.py", "must be a str"),
    ],
)
def test_a_pattern_that_could_leave_the_workspace_is_refused(pattern, says):
    with pytest.raises(ToolCallError, match=says):
        PathGlob(pattern)


def test_stepping_stops_early_where_nothing_below_can_match():
    glob = PathGlob("src/*.py")
    assert glob.step(glob.start, "docs") == frozenset()
    inside = glob.step(glob.start, "src")
    assert inside and not glob.is_match(inside)
    assert glob.is_match(glob.step(inside, "a.py"))
