"""Pure grade-0 tools that run inside the jail (placement "jail"): no I/O, stdlib only."""


def word_count(text: str) -> int:
    """Use: count whitespace-separated words in TEXT."""
    return len(str(text).split())
