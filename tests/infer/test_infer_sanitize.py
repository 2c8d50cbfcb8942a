"""Model replies become program text: fences, reasoning and prose around the code are dropped."""

import pytest

from lackjail.infer.sanitize import sanitize

PROGRAM = "files = find_files('**/*.py')\nlen(files)"


@pytest.mark.parametrize(
    "reply",
    [
        PROGRAM,
        f"\n\n{PROGRAM}\n\n",
        f"```python\n{PROGRAM}\n```",
        f"```\n{PROGRAM}\n```",
        f"~~~py\n{PROGRAM}\n~~~",
        f"Here is the program:\n\n```python\n{PROGRAM}\n```\n\nIt counts the files.",
        f"Sure! Here's the code:\n{PROGRAM}",
        f"Here is the program:\n{PROGRAM}\nThis returns the count.",
        f"<think>The user wants a count. I'll use find_files.</think>\n{PROGRAM}",
        f"```python\n{PROGRAM}",  # cut off before the closing fence
    ],
)
def test_program_is_extracted(reply):
    assert sanitize(reply) == PROGRAM


def test_first_python_fence_wins_over_other_languages():
    reply = f"```bash\nrm -rf /\n```\nThen:\n```python\n{PROGRAM}\n```\n```python\nother()\n```"
    assert sanitize(reply) == PROGRAM


def test_single_backticked_expression():
    assert sanitize("`len(find_files('*.py'))`") == "len(find_files('*.py'))"


def test_code_that_parses_is_left_alone():
    text = "Total = 1\nTotal"
    assert sanitize(text) == text


def test_unparseable_code_is_passed_on_for_the_validator():
    assert sanitize("x = (1,\ny") == "x = (1,\ny"


def test_huge_reply_is_capped():
    assert len(sanitize("x" * 10_000_000)) <= 256 * 1024
