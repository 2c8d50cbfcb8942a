"""What kernel-confined resolution costs per host file access, for `lackjail bench`.

`resolution_cost_us` times opening and closing one file of a workspace three
ways: a plain `open` of its path (no confinement), the confined open every
host tool now does (the path's in-tree form, then openat2 beneath the
workspace descriptor), and the same through the O_NOFOLLOW walk fallback.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

from lackjail.workspace.beneath import Tree
from lackjail.workspace.hostfs import READ_FLAGS


def resolution_cost_us(runs: int = 2000, rel: str = "src/pkg/module.py") -> dict:
    """Median microseconds per open+close: {"plain", "openat2", "walk", "added"}.

    "added" is openat2 minus plain: what confinement costs one host tool call.
    """
    with tempfile.TemporaryDirectory(prefix="lackjail-bench-") as root:
        os.makedirs(os.path.join(root, os.path.dirname(rel)))
        with open(os.path.join(root, rel), "w") as fh:
            fh.write("x = 1\n")
        path = os.path.join(root, rel)
        confined, walked = Tree(root), Tree(root, use_openat2=False)
        try:

            def plain():
                os.close(os.open(path, READ_FLAGS | os.O_CLOEXEC))

            def beneath():
                os.close(confined.open(confined.canonical(rel), READ_FLAGS))

            def walk():
                os.close(walked.open(walked.canonical(rel), READ_FLAGS))

            figures = {name: _median_us(fn, runs) for name, fn in
                       (("plain", plain), ("openat2", beneath), ("walk", walk))}  # fmt: skip
        finally:
            confined.close()
            walked.close()
    figures["added"] = round(figures["openat2"] - figures["plain"], 2)
    return figures


def _median_us(fn, runs: int) -> float:
    for _ in range(min(runs, 200)):  # warm up
        fn()
    samples = []
    for _ in range(runs):
        started = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - started)
    return round(statistics.median(samples) / 1000, 2)
