"""The jails' lifecycle: spawn, lend, time out, kill, recycle, shut down.

Glossary (see `lackjail.worker.zygote`): a jail is one zygote and its
children; the pool is the N jails of one policy, kept by a supervisor thread;
a Run is one program on one child.
"""

from lackjail.pool.isolation import IsolationError
from lackjail.pool.pool import Pool, PoolError
from lackjail.pool.run import Outcome, Request

__all__ = ["IsolationError", "Outcome", "Pool", "PoolError", "Request"]
