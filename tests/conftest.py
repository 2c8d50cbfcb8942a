"""Shared fixtures: whether this host can run the real nsjail, and process accounting."""

import functools

import psutil
import pytest


@functools.lru_cache(maxsize=1)
def nsjail_status():
    from lackjail.pool import isolation

    return isolation.probe_nsjail()


@pytest.fixture(scope="session")
def require_nsjail():
    ok, why = nsjail_status()
    if not ok:
        pytest.skip(f"this host cannot run nsjail ({why}); isolation tests need the real jail")


def descendants():
    """PIDs of every process below this test process."""
    return {p.pid for p in psutil.Process().children(recursive=True)}
