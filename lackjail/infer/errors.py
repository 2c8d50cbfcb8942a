"""Why a model tier produced no reply: the pipeline notes it and moves on to the next tier."""

from lackjail.errors import HostError


class ProviderError(HostError):
    """A model tier that failed (server error, timeout) or cannot run here (`unavailable`)."""

    def __init__(self, reason: str, unavailable: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.unavailable = unavailable


def short(text, limit: int = 200) -> str:
    """One line of at most LIMIT characters, for notes built from server messages."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
