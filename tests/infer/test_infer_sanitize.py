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


FENCED = [
    ("```python\nx = 1\nx\n```", "x = 1\nx\n", 1),
    ("Here is the program:\n\n```py\nx = 1\n```\nIt sets x.", "x = 1\n", 3),
    ("~~~\nx = 1\n~~~\n", "x = 1\n", 1),
    ("```lackpy\r\nx = 1\r\n```\r\n", "x = 1\r\n", 1),
]


@pytest.mark.parametrize(("sent", "code", "above"), FENCED)
def test_unfence_gives_the_code_and_the_lines_above_it(sent, code, above):
    from lackjail.infer.sanitize import unfence

    assert unfence(sent) == (code, above)
    assert unfence(sent.encode()) == (code, above)


@pytest.mark.parametrize(
    "sent",
    [
        "x = 1\nx",
        's = """\n```python\nx\n```\n"""\ns',  # a fence inside a string: the program as it is
        "```bash\nls\n```",  # no Python fence: the validator says what is wrong
        b"```\n\xff\n```\n",  # not UTF-8: the validator says where
    ],
)
def test_unfence_leaves_a_program_without_a_python_fence_alone(sent):
    from lackjail.infer.sanitize import unfence

    assert unfence(sent) == (sent, 0)


def test_place_back_moves_errors_and_traceback_lines():
    from lackjail.infer.sanitize import place_back

    result = {
        "status": "error",
        "errors": [
            {
                "message": "boom",
                "line": 2,
                "col": 5,
                "traceback": [
                    {"function": "<module>", "line": 4},
                    {"function": "f", "line": 2},
                    {"function": "g", "line": 8, "earlier": True},  # another program's line
                ],
            },
            {"message": "no place"},
        ],
    }
    moved = place_back(result, 3)
    assert moved["errors"][0]["line"] == 5 and moved["errors"][0]["col"] == 5
    assert [f["line"] for f in moved["errors"][0]["traceback"]] == [7, 5, 8]
    assert moved["errors"][1] == {"message": "no place"}
    assert result["errors"][0]["line"] == 2  # the original is left as it was
    assert place_back(result, 0) is result


def test_unfence_costs_one_pass_however_the_fences_are_laid():
    """Openings that never close, one per length, and a text over the cap: each a quick no."""
    import time

    from lackjail.infer.sanitize import MAX_REPLY_CHARS, unfence

    rising = "\n".join("`" * k + "x" for k in range(3, 700))
    many = "```x\n```\n" * 25_000
    huge = "```python\n" + "x = 1\n" * (MAX_REPLY_CHARS // 6) + "```\n"
    for text in (rising, many, huge):
        started = time.perf_counter()
        assert unfence(text) == (text, 0)
        assert time.perf_counter() - started < 2  # a regex over the whole text took ~5 s
