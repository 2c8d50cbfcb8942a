"""Process accounting for the tests: the processes of each jail, and leftovers."""

from __future__ import annotations

import time

import psutil


def jail_processes(jail) -> list[tuple[int, int | None, list[int]]]:
    """(nsjail pid, zygote pid, child pids) for each live jail of JAIL's pool.

    The zygote is the Python process nsjail started; children are the Python processes it forked.
    """
    out = []
    for pid in jail.pool.pids():
        try:
            zygotes = [p for p in psutil.Process(pid).children() if p.name().startswith("python")]
            if not zygotes:
                out.append((pid, None, []))
                continue
            zygote = zygotes[0]
            children = [c.pid for c in zygote.children() if c.name().startswith("python")]
            out.append((pid, zygote.pid, children))
        except psutil.NoSuchProcess:
            continue
    return out


def descendants(zombies: bool = False) -> set[int]:
    """Live processes below this test process (ZOMBIES: and those nobody reaped)."""
    out = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if zombies or proc.status() != psutil.STATUS_ZOMBIE:
                out.add(proc.pid)
        except psutil.NoSuchProcess:
            pass
    return out


def wait_no_leftovers(before: set[int], timeout: float = 5.0) -> set[int]:
    """Processes started since BEFORE that are still alive after TIMEOUT (empty when all ended)."""
    deadline = time.monotonic() + timeout
    while True:
        left = descendants() - before
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def describe(pids) -> list[str]:
    out = []
    for pid in sorted(pids):
        try:
            p = psutil.Process(pid)
            out.append(f"{pid} {p.name()} {p.status()} {' '.join(p.cmdline())[:80]}")
        except psutil.NoSuchProcess:
            pass
    return out
