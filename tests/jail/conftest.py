import pytest

from lackjail.api import Jail
from lackjail.policy import load_policy


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(policy="default", workers=2) as j:
        yield j


@pytest.fixture(scope="module")
def tight_jail(require_nsjail):
    """Small limits so verdict tests finish quickly."""
    base = load_policy("default")
    policy = base.replace(
        limits=base.limits.__class__(
            wall_s=2.0, cpu_s=1, memory_mb=128, output_bytes=10_000, value_bytes=100_000
        )
    )
    with Jail(policy=policy, workers=2) as j:
        yield j
