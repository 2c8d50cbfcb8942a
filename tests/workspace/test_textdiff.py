"""The dry run's diff (`workspace/textdiff.py`): a unified diff `patch` applies, in linear time."""

import difflib

from lackjail.workspace.textdiff import MAX_MATCHED_LINES, unified


def lines(*text: str) -> list[str]:
    return [f"{t}\n" for t in text]


def test_no_change_is_no_diff():
    assert unified(lines("a", "b"), lines("a", "b"), "a/f", "b/f") == []


def test_a_small_edit_is_the_diff_difflib_would_write():
    old = lines(*"abcdefghij")
    new = old[:5] + ["X\n"] + old[6:]
    assert unified(old, new, "a/f", "b/f") == list(difflib.unified_diff(old, new, "a/f", "b/f"))


def test_an_edit_deep_in_a_big_file_keeps_its_line_numbers():
    old = lines(*(str(i) for i in range(5000)))
    new = old[:4000] + ["changed\n"] + old[4001:]
    diff = unified(old, new, "a/f", "b/f")
    assert diff[2] == "@@ -3998,7 +3998,7 @@\n"
    assert "-4000\n" in diff and "+changed\n" in diff and len(diff) == 3 + 7 + 1


def test_a_big_rewrite_is_one_span_replaced_whole():
    old = lines(*(f"old {i}" for i in range(MAX_MATCHED_LINES + 10)))
    new = lines(*(f"new {i}" for i in range(MAX_MATCHED_LINES + 10)))
    diff = unified(old, new, "a/f", "b/f")
    hunks = [line for line in diff if line.startswith("@@")]
    assert hunks == [f"@@ -1,{len(old)} +1,{len(new)} @@\n"]
    assert sum(line.startswith("-old") for line in diff) == len(old)
