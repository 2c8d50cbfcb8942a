"""The frames between a Jail and its controller processes (shards), and what they carry.

The jail's framing (a 4-byte length, one msgpack map with a "t" key), decoded by
`protocol.decode` with this wire's own schemas: size-capped, scanned before it is
built, no ext types, the exact keys and types of each message. No pickle: a
policy and a kit's shape cross as plain data and are rebuilt on the other side.
Both ends are the trusted side, but a value or an error a shard forwards came
out of a jail, so every frame is checked all the same.
"""

from __future__ import annotations

import dataclasses

import msgpack

from lackjail import protocol
from lackjail.policy import Limits, Policy, PoolSettings, ToolRules

_S, _I, _B, _F = (str,), (int,), (bool,), (int, float)
_NONE = type(None)
SCHEMAS: dict[str, dict] = {
    # Jail -> shard
    "open": {  # the shard's pool and checker: what the Jail was made with
        "policy": (dict,),
        "kit": (dict, _NONE),
        "workers": _I,
        "mode": (str, _NONE),
        "isolation": (str, _NONE),
        "language": _S,
        "audience": _S,
    },
    "run": {
        "id": _I,
        "src": (str, bytes),
        "params": (dict,),
        "limits": (list, _NONE),  # [wall_s, cpu_s, memory_mb] when a call tightened them
        "seed": (int, _NONE),
        "stream": _B,  # send the printed text as it comes
        "tools": _B,  # the kit has host tools: forward their calls
    },
    "answer": {"id": _I, "ok": _B, "value": None, "error": (str, _NONE), "verdict": (str, _NONE)},
    "wait": {"id": _I, "timeout": _F},  # answer `waited` once every jail is idle (benchmarks)
    # shard -> Jail
    "opened": {"isolation": _S, "mode": _S},
    "failed": {"kind": _S, "message": _S},  # the pool could not start: why
    "output": {"id": _I, "text": _S},
    "call": {"id": _I, "tool": _S, "args": (list,), "kwargs": (dict,), "deadline": _F},
    "done": {
        "id": _I,
        "status": _S,
        "value": None,
        "output": _S,
        "errors": (list,),
        "cpu_ms": _F,
        "max_rss_kb": _I,
    },
    "raised": {"id": _I, "kind": _S, "message": _S},  # the pool failed the run (not the program)
    "waited": {"id": _I, "ok": _B},
}
TO_SHARD = frozenset({"open", "run", "answer", "wait"})
FROM_SHARD = frozenset(SCHEMAS) - TO_SHARD


def encode(msg: dict) -> bytes:
    """One frame of MSG; ProtocolError when it cannot be packed or the other side's decode
    would refuse it (`protocol.sendable`): a value that came out of a jail may pass the jail's
    frame and not this one (whose other fields differ in size), and a refused frame ends the
    channel with every run on it."""
    try:
        body = msgpack.packb(msg, use_bin_type=True)
    except (ValueError, TypeError, OverflowError) as exc:
        raise protocol.ProtocolError(f"cannot encode {msg.get('t')!r} frame: {exc}") from None
    return protocol.HEADER.pack(len(body)) + protocol.sendable(body)


def read(reader, expect: frozenset) -> dict:
    """The next frame from READER (a buffered binary file) of a type in EXPECT; EOFError at
    the end, ProtocolError for a frame that breaks the caps or the schemas."""
    header = reader.read(protocol.HEADER.size)
    if len(header) < protocol.HEADER.size:
        raise EOFError("channel closed")
    length = protocol.frame_length(header)
    body = reader.read(length)
    if len(body) < length:
        raise EOFError("channel closed mid-frame")
    return protocol.decode(body, expect, SCHEMAS)


# -- a policy as plain data, and back --------------------------------------


def policy_data(policy: Policy) -> dict:
    """POLICY as plain data (what `rebuild_policy` turns back into an equal Policy)."""
    return dataclasses.asdict(policy)


def rebuild_policy(data: dict) -> Policy:
    """The Policy `policy_data` made DATA of: the same values, tuples where it had tuples.
    TypeError or ValueError when DATA is not one."""

    def build(cls, values: dict):
        defaults = cls()
        return cls(
            **{
                key: tuple(value) if isinstance(getattr(defaults, key), tuple) else value
                for key, value in values.items()
            }
        )

    sections = {"limits": Limits, "pool": PoolSettings, "tools": ToolRules}
    top = {k: v for k, v in data.items() if k not in sections}
    policy = build(Policy, top)
    return policy.replace(**{key: build(cls, data[key]) for key, cls in sections.items()})


def limits_data(limits: Limits, policy: Limits) -> list | None:
    """A run's LIMITS as the run frame carries them: None when they are POLICY's own."""
    if limits is policy:
        return None
    return [limits.wall_s, limits.cpu_s, limits.memory_mb]


# -- a kit's shape: what validation and the run frame need of it ------------


@dataclasses.dataclass(frozen=True)
class Arg:
    name: str
    type: str
    required: bool


@dataclasses.dataclass(frozen=True)
class Spec:
    args: tuple[Arg, ...]


@dataclasses.dataclass(frozen=True)
class KitShape:
    """A kit as a shard's Checker reads it (its names and its tools' arguments), with the run
    frame's tools by placement; the tools themselves stay with the Jail."""

    names: tuple
    specs: dict
    host_tools: list
    jail_tools: dict


def kit_data(kit) -> dict | None:
    """KIT (a resolved Kit, or None) as plain data for `rebuild_kit`."""
    if kit is None:
        return None
    return {
        "names": list(kit.names),
        "specs": {
            call: [[a.name, a.type, bool(a.required)] for a in spec.args]
            for call, spec in kit.specs.items()
        },
        "host_tools": list(kit.host_tools),
        "jail_tools": {k: list(v) for k, v in kit.jail_tools.items()},
    }


def rebuild_kit(data: dict | None) -> KitShape | None:
    if data is None:
        return None
    specs = {
        call: Spec(tuple(Arg(name, kind, required) for name, kind, required in args))
        for call, args in data["specs"].items()
    }
    return KitShape(tuple(data["names"]), specs, data["host_tools"], data["jail_tools"])


class Frames:
    """Incremental decoding of one channel's bytes, as a non-blocking reader gets them: feed
    bytes, take whole frames (each capped, scanned and schema-checked as `read` does)."""

    def __init__(self):
        self._buf = bytearray()
        self._need = 0  # the body length of the frame whose header was read, else 0

    def feed(self, data: bytes, expect: frozenset) -> list[dict]:
        """The frames DATA completes (of types in EXPECT); ProtocolError on a bad one."""
        self._buf += data
        frames = []
        while True:
            if not self._need:
                if len(self._buf) < protocol.HEADER.size:
                    return frames
                self._need = protocol.frame_length(bytes(self._buf[: protocol.HEADER.size]))
                del self._buf[: protocol.HEADER.size]
            if len(self._buf) < self._need:
                return frames
            body = bytes(self._buf[: self._need])
            del self._buf[: self._need]
            self._need = 0
            frames.append(protocol.decode(body, expect, SCHEMAS))
