"""Fixtures shared by tests/ and fuzz/: whether this host can run the real nsjail."""

import functools

import pytest


@functools.lru_cache(maxsize=1)
def nsjail_status():
    from lackjail.pool import isolation

    return isolation.probe_nsjail()


@pytest.fixture(scope="session")
def require_nsjail():
    """Skip, with the probe's reason, where this host cannot run the real nsjail."""
    ok, why = nsjail_status()
    if not ok:
        pytest.skip(f"this host cannot run nsjail ({why}); these tests need the real jail")
