"""Per-run budgets from the policy: tool calls, bytes read, bytes written."""

from __future__ import annotations

import threading

from lackjail.errors import LimitExceeded


class Budget:
    """Counters checked before each effect; a spent budget raises LimitExceeded (verdict
    `limit`).
    """

    def __init__(self, limits):
        self.max_calls = limits.tool_calls
        self.max_read = limits.read_bytes
        self.max_write = limits.write_bytes
        self.calls = self.bytes_read = self.bytes_written = 0
        self._lock = threading.Lock()

    def charge_call(self) -> None:
        with self._lock:
            if self.calls >= self.max_calls:
                raise LimitExceeded(
                    f"tool call budget of {self.max_calls} calls per run is spent (policy "
                    "limits.tool_calls)"
                )
            self.calls += 1

    def read_allowance(self) -> int:
        with self._lock:
            return max(self.max_read - self.bytes_read, 0)

    def charge_read(self, n: int) -> None:
        with self._lock:
            _fits(self.bytes_read, n, self.max_read, "reading", "read")
            self.bytes_read += n

    def check_write(self, n: int) -> None:
        """Raise unless N more bytes (beyond those already written) fit the write budget."""
        with self._lock:
            _fits(self.bytes_written, n, self.max_write, "writing", "write")

    def charge_write(self, n: int) -> None:
        with self._lock:
            _fits(self.bytes_written, n, self.max_write, "writing", "write")
            self.bytes_written += n

    def stats(self) -> dict:
        with self._lock:
            return {
                "tool_calls": self.calls,
                "bytes_read": self.bytes_read,
                "bytes_written": self.bytes_written,
            }


def _fits(spent: int, n: int, budget: int, doing: str, kind: str) -> None:
    """Raise LimitExceeded when N more bytes after SPENT would pass BUDGET, naming the policy
    key (limits.KIND_bytes) that sets it."""
    if spent + n > budget:
        raise LimitExceeded(
            f"{doing} {n} more bytes would pass the run's {kind} budget of {budget} bytes "
            f"(policy limits.{kind}_bytes)"
        )
