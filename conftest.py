"""Fixtures shared by tests/ and fuzz/: whether this host can run the real nsjail."""

import functools
import os

import pytest

# `lackjail run` hands its commands to a resident server of the user's and starts one when none
# answers: the suite's commands run without one (they must neither leave servers behind nor
# reach the developer's); the server's own tests turn it on with folders of their own
os.environ["LACKJAIL_SERVER"] = "0"


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


def pytest_collection_modifyitems(items):
    """Every test that runs the real jail (it needs `require_nsjail`, itself or through a
    fixture) carries the `nsjail` marker, so `-m nsjail` and `-m "not nsjail"` split the suite
    exactly; a file need not remember to mark itself."""
    for item in items:
        if "require_nsjail" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.nsjail)
