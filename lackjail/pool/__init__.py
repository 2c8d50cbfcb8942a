"""The jails' lifecycle: spawn, lend, time out, kill, recycle, shut down."""

from lackjail.pool.isolation import IsolationError
from lackjail.pool.pool import Pool, PoolError
from lackjail.pool.worker import Outcome

__all__ = ["IsolationError", "Outcome", "Pool", "PoolError"]
