"""Pure grade-0 tools that run inside the jail (placement "jail"): no I/O, stdlib only.

The zygote preloads this module, so a program's calls to these tools never
leave the jail. They check their own arguments: nothing sits between the
program and them.
"""

import unicodedata

MAX_TEXT = 1 << 20  # characters one call accepts
# every ASCII character but a-z and 0-9 becomes a space (split() then drops the runs)
_SLUG_GAPS = {c: " " for c in range(128) if not chr(c).isdigit() and not chr(c).islower()}


def _text(name, text):
    if not isinstance(text, str):
        raise TypeError(f"{name}() needs a str, not {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ValueError(f"{name}() takes at most {MAX_TEXT} characters")
    return text


def slugify(text: str) -> str:
    """Turn text into a lowercase ASCII slug.

    Use: make file names or ids from titles.
    Input: any text.
    Output: lowercase ASCII letters and digits joined by single '-'; empty if there are none.
    Parameters:
        text (str): the text to turn into a slug.
    Best Practices:
        - Accents are dropped and other scripts vanish; keep the original text if you need it.
    """
    ascii_text = (
        unicodedata.normalize("NFKD", _text("slugify", text))
        .encode("ascii", "ignore")
        .decode("ascii")
    )
    return "-".join(ascii_text.lower().translate(_SLUG_GAPS).split())


def word_count(text: str) -> int:
    """Count the whitespace-separated words in a text.

    Use: measure the length of a text in words.
    Input: any text.
    Output: the number of words.
    Parameters:
        text (str): the text to count.
    """
    return len(_text("word_count", text).split())
