"""One controller process of a sharded Jail: its own interpreter, its own share of the jails.

Started as a fresh interpreter (never a fork of the caller's threaded process)
with one end of a socket pair; it reads an `open` frame (the policy and the
kit's shape), starts its pool, then validates and runs each `run` frame as a
Jail in one process does: the same Checker, the same Pool, the same checks of
everything the jail sends. What it does not hold are the tools: a host tool call
crosses to the Jail's process, which runs it under the kit's checks and writes
the trace, and the answer comes back here for the jail. At the end of its
channel (the Jail closed, or its process died) it closes its pool and exits.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
import threading
from types import SimpleNamespace

from lackjail import lang, protocol
from lackjail.checker import Checker
from lackjail.errors import LackjailError
from lackjail.pool import Pool, Request
from lackjail.shards import wire
from lackjail.shards.inbox import Inbox

ANSWER_GRACE_S = 5.0  # past a call's deadline, how long a run waits for the Jail's answer


class Shard:
    """The pool and checker of one shard, serving the frames of one channel."""

    def __init__(self, sock: socket.socket, reader, opened: dict):
        self._sock = sock
        self._sending = threading.Lock()
        self.policy = wire.rebuild_policy(opened["policy"])
        self.kit = wire.rebuild_kit(opened["kit"])
        self.checker = Checker(
            self.policy, self.kit, opened["language"], audience=opened["audience"]
        )
        self.host_tools = self.kit.host_tools if self.kit is not None else []
        self.jail_tools = self.kit.jail_tools if self.kit is not None else {}
        self.pool = Pool(
            self.policy,
            workers=opened["workers"],
            mode=opened["mode"],
            isolation_level=opened["isolation"],
            python_level=self.checker.language == "python",
        )
        self.inbox = Inbox(reader, self._on_wait)
        # one caller per jail in reuse mode, two in fresh mode: as Jail.map's in one process
        callers = self.pool.size * (1 if self.pool.mode == "reuse" else 2)
        self._callers = [
            threading.Thread(target=self._serve_runs, name="lackjail-shard-run", daemon=True)
            for _ in range(callers)
        ]
        for thread in self._callers:
            thread.start()

    def send(self, msg: dict) -> None:
        data = wire.encode(msg)
        with self._sending:
            self._sock.sendall(data)

    def serve(self) -> None:
        """Serve runs (on the callers' threads, which read the channel) until it ends."""
        self.inbox.wait_ended()

    def close(self) -> None:
        self.pool.close()

    def _on_wait(self, frame: dict) -> None:
        def wait():
            ok = self.pool.wait_full(frame["timeout"])
            self._quietly_send({"t": "waited", "id": frame["id"], "ok": ok})

        threading.Thread(target=wait, daemon=True).start()

    def _serve_runs(self) -> None:
        while (frame := self.inbox.next_run()) is not None:
            rid = frame["id"]
            try:
                done = self._run(frame)
            except LackjailError as exc:  # the pool failed the run (closed, no jail in time)
                done = {"t": "raised", "id": rid, "kind": type(exc).__name__, "message": str(exc)}
            except Exception as exc:  # a fault of this process: that run fails, the shard goes on
                done = {
                    "t": "raised",
                    "id": rid,
                    "kind": "PoolError",
                    "message": f"the controller process failed: {type(exc).__name__}: {exc}",
                }
            self._quietly_send(done)

    def _quietly_send(self, msg: dict) -> None:
        """Send MSG; a result that cannot cross becomes that run's error; a Jail that is gone
        is seen by the reader, and the shard exits."""
        try:
            try:
                self.send(msg)
            except protocol.ProtocolError as exc:
                self.send(_error_done(msg["id"], f"the run's result cannot be sent: {exc}"))
        except OSError:
            pass

    def _run(self, frame: dict) -> dict:
        rid, src, params = frame["id"], frame["src"], frame["params"]
        limits = self.policy.limits
        if frame["limits"] is not None:
            wall_s, cpu_s, memory_mb = frame["limits"]
            limits = dataclasses.replace(limits, wall_s=wall_s, cpu_s=cpu_s, memory_mb=memory_mb)
        check = self.checker.check(src, params)
        if not check.valid:
            errors = [e.to_dict() for e in check.errors]
            return _done(rid, "invalid", None, "", errors, 0.0, 0)
        request = Request(
            lang.decode_source(src),
            params,
            self.host_tools,
            self.jail_tools,
            self.checker.language,
            False,
            frame["seed"],
            check.modules,
        )
        output: list[str] = []
        stream = frame["stream"]

        def on_output(text):
            output.append(text)
            if stream:
                self._quietly_send({"t": "output", "id": rid, "text": text})

        handler = self._tool_handler(rid) if frame["tools"] else None
        outcome = self.pool.execute(request, handler, on_output, limits)
        value = outcome.value if outcome.status == "ok" else None
        return _done(
            rid,
            outcome.status,
            value,
            "".join(output),
            outcome.errors,
            outcome.cpu_ms,
            outcome.max_rss_kb,
        )

    def _tool_handler(self, rid: int):
        """A tool handler for run RID: the call crosses to the Jail, which answers it."""

        def call(tool, args, kwargs, deadline):
            self.inbox.expect(rid)
            try:
                sent = {"t": "call", "id": rid, "tool": tool, "args": args, "kwargs": kwargs}
                self.send({**sent, "deadline": deadline})
            except (OSError, protocol.ProtocolError) as exc:
                self.inbox.forget(rid)
                return _answer(False, None, f"{tool}: the call could not be sent: {exc}", None)
            got = self.inbox.answer(rid, deadline + ANSWER_GRACE_S)
            if got is None:
                return _answer(False, None, f"{tool}: no answer from the Jail", "timeout")
            return _answer(got["ok"], got["value"], got["error"], got["verdict"])

        return call


def _answer(ok, value, error, verdict) -> SimpleNamespace:
    """A tool handler's answer, as a run reads it (the kit's CallOutcome's fields)."""
    return SimpleNamespace(ok=ok, value=value, error=error, verdict=verdict)


def _done(rid, status, value, output, errors, cpu_ms, max_rss_kb) -> dict:
    return {
        "t": "done",
        "id": rid,
        "status": status,
        "value": value,
        "output": output,
        "errors": errors,
        "cpu_ms": cpu_ms,
        "max_rss_kb": max_rss_kb,
    }


def _error_done(rid: int, message: str) -> dict:
    return _done(rid, "error", None, "", [{"message": message}], 0.0, 0)


def main(fd: int) -> int:
    """Serve the channel on descriptor FD; 0 once the Jail closed it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the Jail's to handle
    sock = socket.socket(fileno=fd)
    reader = sock.makefile("rb", buffering=1 << 16)
    try:
        opened = wire.read(reader, frozenset({"open"}))
    except (EOFError, OSError, protocol.ProtocolError):
        return 1
    try:
        shard = Shard(sock, reader, opened)
    except LackjailError as exc:
        sock.sendall(wire.encode({"t": "failed", "kind": type(exc).__name__, "message": str(exc)}))
        return 1
    except (TypeError, ValueError, KeyError) as exc:
        why = f"the controller process could not start: {type(exc).__name__}: {exc}"
        sock.sendall(wire.encode({"t": "failed", "kind": "PoolError", "message": why}))
        return 1
    shard.send({"t": "opened", "isolation": shard.pool.isolation, "mode": shard.pool.mode})
    try:
        shard.serve()
    finally:
        shard.close()
    return 0


if __name__ == "__main__":
    os._exit(main(int(sys.argv[1])))
