"""Process accounting for the tests (the nsjail fixture is in the root conftest.py)."""

import psutil


def descendants():
    """PIDs of every process below this test process."""
    return {p.pid for p in psutil.Process().children(recursive=True)}
