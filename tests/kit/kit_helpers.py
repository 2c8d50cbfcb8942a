"""Python-provider tools for the tests (imported on the host by the python provider)."""

import time


class Opaque:
    def __init__(self):
        self.secret = "an object with methods"


class BadMessage(Exception):
    def __str__(self):
        raise RuntimeError("no message for you")


def nap(seconds: float) -> str:
    """Sleep, then answer.

    Use: test timeouts.
    Parameters:
        seconds (float): how long to sleep.
    """
    time.sleep(seconds)
    return "woke"


def boom(message: str) -> str:
    """Raise ValueError(message)."""
    raise ValueError(message)


def bad_message() -> str:
    """Raise an exception whose str() itself fails."""
    raise BadMessage()


def gives_object() -> str:
    """Return an object with methods (must be refused)."""
    return Opaque()


def gives_set() -> list:
    """Return a set (not plain data)."""
    return {1, 2}


def gives_tuple() -> list:
    """Return a tuple (becomes a list)."""
    return (1, ("two", b"3"), {"k": None})


def gives_int_keys() -> dict:
    """Return a dict with int keys (not plain data)."""
    return {1: "one"}


def echo(value=None):
    """Return what it was given.

    Parameters:
        value: anything plain.
    """
    return value


def add(a: int, b: int = 0) -> int:
    """Add two numbers.

    Use: sum two integers.
    Input: two integers.
    Output: their sum.
    Parameters:
        a (int): the first.
        b (int, optional): the second.
    Best Practices:
        - Keep numbers small.
        - Or large; it is Python.
    """
    return a + b


def _private():
    """Not a tool."""
