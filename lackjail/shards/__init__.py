"""Jails sharded across several controller processes, behind the same `Jail`.

One controller process holds one interpreter's lock: past a few jails its own
Python work (validating, framing, bookkeeping) is what limits throughput, not
the jails. A Jail with `processes=N > 1` starts N controller processes
(`lackjail.shards.shard`), each a fresh interpreter owning a share of the jails
and doing what a one-process Jail does for the runs it is sent, while the
Jail's own process spreads runs over them, runs host tool calls (the tools
live there), and keeps sessions. See docs/scale-out.md.
"""

from __future__ import annotations

import os

from lackjail.errors import ArgumentError

JAILS_PER_PROCESS = 2  # auto: one controller process per this many jails
MIN_CPUS = 4  # auto: below this many CPUs, one process (the caller's own)


def processes_for(setting, workers: int, cpus: int | None = None, key: str = "processes") -> int:
    """How many controller processes serve WORKERS jails: SETTING when it is a number; for
    "auto" (or 0), one per JAILS_PER_PROCESS jails and at most one per two CPUs, and the
    caller's own process alone on a host of fewer than MIN_CPUS CPUs or for two jails or
    fewer. A busy controller takes about a CPU of its own and its jails need theirs: on two
    CPUs a second process only adds a hop. KEY names the setting in an error."""
    if setting in ("auto", 0):
        cpus = cpus or os.cpu_count() or 1
        if cpus < MIN_CPUS:
            return 1
        return max(1, min(-(-workers // JAILS_PER_PROCESS), cpus // 2))
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 1:
        raise ArgumentError(
            f"{key} must be 'auto' or a whole number of controller processes from 1, "
            f"not {setting!r}"
        )
    if setting > workers:
        raise ArgumentError(
            f"{key} = {setting} is more than the jails ({workers}): each controller process "
            f"keeps at least one; use at most {workers}, or 'auto'"
        )
    return setting
