"""The wire between the controller and the jail: length-prefixed msgpack frames.

A frame is a 4-byte big-endian length followed by one msgpack map with a
"t" key naming its message type. Decoding is strict on purpose: frames come
out of the jail and are hostile until this module has checked their size,
their nesting, their types and their schema. No ext types, no pickle.

This module is mounted inside the jail: standard library and msgpack only.
"""

import struct

import msgpack

HEADER = struct.Struct(">I")
MAX_FRAME = 64 << 20  # bytes in one frame, header excluded
MAX_STR = 32 << 20
MAX_ITEMS = 1 << 20  # elements of one array or map
MAX_DEPTH = 100  # nesting of arrays and maps, the frame's own map included

# Result statuses, the verdicts of DESIGN.md's run contract.
STATUSES = ("ok", "invalid", "error", "timeout", "memory", "limit", "killed", "denied")

# What each message type must carry: key -> accepted types. Extra keys are errors.
_S, _I, _B, _F = (str,), (int,), (bool,), (int, float)
_ANY = None
SCHEMAS = {
    # controller -> zygote (control channel)
    "ping": {"id": _I},
    "cancel": {"gen": _I},
    "stop": {},
    # zygote -> controller
    "ready": {"gen": _I},
    "pong": {"id": _I},
    "done": {"gen": _I, "code": (int, type(None)), "signal": (int, type(None)), "cpu_ms": _F, "max_rss_kb": _I},
    # controller -> child (run channel)
    "run": {"id": _S, "src": _S, "params": (dict,), "tools": (list,), "jail_tools": (dict,), "filename": _S},
    "return": {"seq": _I, "ok": _B, "value": _ANY, "error": (str, type(None)), "stop": (str, type(None))},
    # child -> controller
    "output": {"text": _S},
    "call": {"seq": _I, "tool": _S, "args": (list,), "kwargs": (dict,)},
    "result": {
        "id": _S,
        "status": _S,
        "value": _ANY,
        "errors": (list,),
        "cpu_ms": _F,
        "max_rss_kb": _I,
    },
}


# Fields that may hold nested data (every other field is a scalar by its schema).
_NESTED = {kind: tuple(k for k, types in schema.items() if types is None or list in types or dict in types)
           for kind, schema in SCHEMAS.items()}


class ProtocolError(Exception):
    """A frame that is malformed, oversized, too deep or not of the expected schema."""


def encode(msg: dict) -> bytes:
    """One frame: header + msgpack body. Raises ProtocolError if it breaks the caps."""
    try:
        body = msgpack.packb(msg, use_bin_type=True, strict_types=False)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode {msg.get('t', '?')!r} frame: {exc}") from None
    if len(body) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds the {MAX_FRAME}-byte cap")
    return HEADER.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    """The body length a header announces, checked against the cap before any read."""
    (length,) = HEADER.unpack(header)
    if length == 0 or length > MAX_FRAME:
        raise ProtocolError(f"frame length {length} is outside 1..{MAX_FRAME}")
    return length


def _depth_ok(value) -> bool:
    """True when VALUE nests arrays and maps no deeper than MAX_DEPTH (iteratively)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > MAX_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
            if isinstance(item, dict):
                stack.extend((key, depth + 1) for key in item if isinstance(key, (list, dict)))
    return True


def _ext_refused(code, data):
    raise ProtocolError(f"ext type {code} is not allowed on the wire")


def decode(body: bytes, expect=None) -> dict:
    """Decode and check one frame body; EXPECT is the set of message types allowed now."""
    try:
        msg = msgpack.unpackb(
            body,
            raw=False,
            use_list=True,
            strict_map_key=False,
            max_str_len=MAX_STR,
            max_bin_len=MAX_STR,
            max_array_len=MAX_ITEMS,
            max_map_len=MAX_ITEMS,
            max_ext_len=0,
            ext_hook=_ext_refused,
        )
    except ProtocolError:
        raise
    except Exception as exc:  # msgpack raises many types for bad bytes; all mean the same here
        raise ProtocolError(f"undecodable frame: {type(exc).__name__}: {exc}"[:200]) from None
    return check(msg, expect)


def check(msg, expect=None) -> dict:
    """Schema-check a decoded message: a map, a known type, the right keys and types."""
    if not isinstance(msg, dict):
        raise ProtocolError(f"frame is a {type(msg).__name__}, not a map")
    kind = msg.get("t")
    schema = SCHEMAS.get(kind) if isinstance(kind, str) else None
    if schema is None:
        raise ProtocolError(f"unknown message type {kind!r}"[:120])
    if expect is not None and kind not in expect:
        raise ProtocolError(f"unexpected {kind!r} frame (expected {', '.join(sorted(expect))})")
    if len(msg) != len(schema) + 1:
        extra = sorted(str(k) for k in msg if k != "t" and k not in schema)
        missing = sorted(k for k in schema if k not in msg)
        raise ProtocolError(f"{kind!r} frame has wrong keys (extra {extra}, missing {missing})"[:200])
    for key, types in schema.items():
        if key not in msg:
            raise ProtocolError(f"{kind!r} frame lacks {key!r}")
        value = msg[key]
        if types is not None and (not isinstance(value, types) or (types == _I and isinstance(value, bool))):
            raise ProtocolError(f"{kind!r} frame: {key!r} is a {type(value).__name__}")
    for key in _NESTED.get(kind, ()):
        if isinstance(msg[key], (list, dict)) and not _depth_ok(msg[key]):
            raise ProtocolError(f"{kind!r} frame nests deeper than {MAX_DEPTH} levels")
    return msg


def read_frame(read, expect=None) -> dict:
    """Read one frame with READ(n) -> bytes (which returns b'' at end of file)."""
    header = _read_exact(read, HEADER.size)
    return decode(_read_exact(read, frame_length(header)), expect)


def _read_exact(read, n: int) -> bytes:
    chunks, missing = [], n
    while missing:
        chunk = read(missing)
        if not chunk:
            raise EOFError("channel closed mid-frame" if chunks else "channel closed")
        chunks.append(chunk)
        missing -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class FrameBuffer:
    """Incremental decoder for a non-blocking reader: feed bytes, take whole frames."""

    def __init__(self):
        self._buf = bytearray()
        self._need = None

    def feed(self, data: bytes) -> None:
        self._buf += data

    def frames(self, expect=None):
        """Yield every complete frame now buffered; ProtocolError on the first bad one."""
        while True:
            if self._need is None:
                if len(self._buf) < HEADER.size:
                    return
                self._need = frame_length(bytes(self._buf[: HEADER.size]))
                del self._buf[: HEADER.size]
            if len(self._buf) < self._need:
                return
            body = bytes(self._buf[: self._need])
            del self._buf[: self._need]
            self._need = None
            yield decode(body, expect)
