"""The jails' lifecycle: spawn, lend, time out, kill, recycle, shut down.

Glossary (see `lackjail.worker.zygote`): a jail is one zygote and its
children; the pool is the N jails of one policy, kept by a supervisor thread;
a Run is one program on one child.

The names below load on first use, so that a command can import `pool.early` (standard
library only) before anything else.
"""

from lackjail.lazy import exports

TYPE_CHECKING = False  # typing's own costs an import; the type checker reads this name alike
if TYPE_CHECKING:
    from lackjail.pool.isolation import IsolationError
    from lackjail.pool.pool import Pool, PoolError
    from lackjail.pool.run import Outcome, Request

_EXPORTS = {
    "IsolationError": "lackjail.pool.isolation",
    "Pool": "lackjail.pool.pool",
    "PoolError": "lackjail.pool.pool",
    "Outcome": "lackjail.pool.run",
    "Request": "lackjail.pool.run",
}

__all__ = ["IsolationError", "Outcome", "Pool", "PoolError", "Request"]


__getattr__ = exports(__name__, _EXPORTS, globals())
