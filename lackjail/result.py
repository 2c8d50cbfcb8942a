"""What a run produced: the Result, its stats, its trace entries, and the events a stream yields.

Plain data all the way down: `Result.to_dict()` is the `--json` object, and every event is a
dict that `json.dumps` takes as it is. The types say which keys a caller may rely on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from lackjail import protocol


class Stats(TypedDict):
    """What one run cost: wall and CPU time, the child's peak memory, the tool calls made."""

    wall_ms: float
    cpu_ms: float
    max_rss_kb: int
    tool_calls: int


def stats(wall_ms: float = 0.0, cpu_ms: float = 0.0, max_rss_kb: int = 0, tool_calls: int = 0):
    """A run's Stats; without arguments, those of a run that never started."""
    return Stats(
        wall_ms=round(wall_ms, 3), cpu_ms=cpu_ms, max_rss_kb=max_rss_kb, tool_calls=tool_calls
    )


class ErrorEntry(TypedDict):
    """Why a run failed: a message, and where the program was (1-based) when it is known."""

    message: str
    line: NotRequired[int | None]
    col: NotRequired[int | None]
    rule: NotRequired[str]


class TraceEntry(TypedDict):
    """One tool call, recorded by the controller as it dispatched it."""

    seq: int
    tool: str
    args: list
    ok: bool
    duration_ms: float
    summary: str
    kwargs: NotRequired[dict]
    error: NotRequired[str]
    verdict: NotRequired[str]


class OutputEvent(TypedDict):
    """Text the program printed, as it printed it."""

    event: Literal["output"]
    text: str


class CallEvent(TraceEntry):
    """A tool call, as soon as it returned (the same entry the trace keeps)."""

    event: Literal["call"]


Event = OutputEvent | CallEvent | dict[str, Any]  # the last: {"event": "result", **to_dict()}


@dataclass
class Result:
    """What a run produced; `to_dict()` is the `--json` object of `lackjail run`."""

    status: str
    value: object = None
    output: str = ""
    errors: list[ErrorEntry] = field(default_factory=list)
    trace: list[TraceEntry] = field(default_factory=list)
    isolation: str = ""
    mode: str = ""
    stats: Stats = field(default_factory=stats)
    written: list[str] = field(default_factory=list)
    diff: str = ""

    @classmethod
    def failed(cls, status: str, message: str, wall_ms: float = 0.0, **known: Any) -> Result:
        """A run that never ran or did not finish (STATUS: invalid, killed, ...), saying why;
        KNOWN (output, trace, isolation, mode) says what happened until then."""
        trace = known.get("trace", [])
        return cls(
            status,
            errors=[ErrorEntry(message=message)],
            stats=stats(wall_ms, tool_calls=len(trace)),
            **known,
        )

    @classmethod
    def killed(cls, message: str) -> Result:
        """A program lackjail could not run to its end (the pool or the cluster failed)."""
        return cls.failed("killed", message)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def exit_code(self) -> int:
        """The CLI's exit status for this result: 0 ok, 1 ran and failed, 2 rejected."""
        return protocol.exit_code(self.status)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
