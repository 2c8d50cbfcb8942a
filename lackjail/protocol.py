"""The wire between the controller and the jail: length-prefixed msgpack frames.

A frame is a 4-byte big-endian length followed by one msgpack map with a
"t" key naming its message type. Decoding is strict on purpose: frames come
out of the jail and are hostile until this module has checked their size,
their nesting, their types and their schema. No ext types, no pickle.

This module is mounted inside the jail: standard library and msgpack only.
"""

import struct
import time

import msgpack

from lackjail import plain

HEADER = struct.Struct(">I")
MAX_FRAME = 64 << 20  # bytes in one frame, header excluded (the controller's own frames)
MAX_STR = 32 << 20
MAX_ITEMS = plain.MAX_ITEMS  # elements of one array or map
MAX_DEPTH = plain.MAX_DEPTH + 2  # a value inside a frame's map and one list (call args)
OUTPUT_CHUNK = 16 << 10  # characters of printed text in one `output` frame
# Decoding a frame may cost at most COST_PER_BYTE times its size (+ COST_BASE) in
# Python objects, as scan() estimates them: an empty map is ~64 bytes from 1 byte.
COST_PER_BYTE, COST_BASE = 60, 64 << 10
# scan() counts at most 92 bytes of objects per byte (a map's item, 56, whose key and value
# are empty maps, 64 each, in two bytes): a body of at most SCAN_FREE bytes cannot pass the
# cost cap, nor the string and item caps, so encode() need not scan it (see there).
MAX_COST_PER_BYTE = 92
SCAN_FREE = COST_BASE // (MAX_COST_PER_BYTE - COST_PER_BYTE)
# Every byte that is not a msgpack array or map header (fixmap, fixarray, array/map 16/32):
# a body holding at most MAX_DEPTH bytes that could be one cannot nest deeper.
NOT_CONTAINER = bytes(b for b in range(256) if not (0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF))
MAX_FRAMES = 64  # program frames in a run error's traceback (of a deeper chain, the innermost)
MAX_FUNCTION = 200  # characters of a traceback frame's function name
SPIN_S = 0.0001  # how long either side polls before it sleeps when an answer is due
SPIN_BACKOFF_MAX = 64  # waits that sleep at once after spins kept coming up empty


def max_frame(value_bytes: int) -> int:
    """The largest frame a jail may send under a policy whose values are at most
    VALUE_BYTES (plain.copy's size): a value or a call's arguments, with room for
    msgpack's headers and the frame's other keys; output comes in OUTPUT_CHUNKs."""
    return min(MAX_FRAME, value_bytes + value_bytes // 2 + (1 << 20))


# The verdicts of a run (a Result's status: ARCHITECTURE.md), each with what follows from it:
# (keeps_child: a reused child may serve another run after it,
#  exit_code: 0 ok, 1 the program ran and failed, 2 rejected).
STATUSES = {
    "ok": (True, 0),
    "invalid": (True, 2),
    "error": (True, 1),
    "timeout": (False, 1),
    "memory": (False, 1),
    "limit": (False, 1),
    "killed": (False, 1),
    "denied": (False, 1),
}


def keeps_child(status: str) -> bool:
    """After a run ending in STATUS, may a reused child serve the next run?"""
    return STATUSES.get(status, (False, 1))[0]


def exit_code(status: str) -> int:
    """The process exit code that reports STATUS (unknown statuses: 1)."""
    return STATUSES.get(status, (False, 1))[1]


SEED_MAX = (1 << 63) - 1  # a run's seed for `random`: what an int64 on the wire holds

# What each message type must carry: key -> accepted types. Extra keys are errors.
_S, _I, _B, _F = (str,), (int,), (bool,), (int, float)
_ANY = None
SCHEMAS: dict[str, dict] = {
    # controller -> zygote (control channel)
    "ping": {"id": _I},
    "cancel": {"gen": _I},
    "limit": {"gen": _I, "memory_mb": _I},  # lower a ready child's address space (0: restore)
    "load": {"id": _I, "modules": (list,)},  # python level: load these facade modules
    "stop": {},
    # zygote -> controller (`spawned` carries the child's run channel: two descriptors;
    # `loads`: how many loads had added modules when it was forked, its module set)
    "spawned": {"gen": _I, "loads": _I},
    "pong": {"id": _I},
    "limited": {"gen": _I, "memory_mb": _I, "ok": _B},
    # the answer to `load` ID: the zygote's loads now, and why it did not load (None: did)
    "loaded": {"id": _I, "loads": _I, "error": (str, type(None))},
    "done": {
        "gen": _I,
        "code": (int, type(None)),
        "signal": (int, type(None)),
        "cpu_ms": _F,
        "max_rss_kb": _I,
    },
    # controller -> child (run channel)
    "run": {
        "id": _S,
        "src": _S,
        "params": (dict,),
        "tools": (list,),
        "jail_tools": (dict,),
        "language": _S,
        "cpu_s": _F,  # this run's CPU limit, at most the child's (0: the child's)
        "memory_mb": _I,  # this run's address-space limit, at most the child's (0: the child's)
        "session": _B,  # the child keeps the run's globals for its next run
        "seed": (int, type(None)),  # seeds the program's `random` (python level); None: fresh
    },
    "return": {
        "seq": _I,
        "ok": _B,
        "value": _ANY,
        "error": (str, type(None)),
        "stop": (str, type(None)),
    },
    # child -> controller
    "ready": {"gen": _I},  # confined, warmed, waiting for a run
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


class Spin:
    """Waiting for an answer that is due: poll without sleeping for up to SPIN_S, then sleep.

    A spin saves a wake-up (tens to hundreds of microseconds on an idle VM) when the peer
    answers within it, and only takes a CPU when it does not: the peer waits for a CPU
    itself (the machine is busy), or works longer. So a spin that comes up empty makes the
    next wait sleep at once, the next two after a second one, and so on up to
    SPIN_BACKOFF_MAX; a spin that catches its answer starts spinning at every wait again.
    """

    __slots__ = ("skip", "backoff")

    def __init__(self):
        self.skip = self.backoff = 0

    def poll(self, poll, timeout_ms=None) -> list:
        """POLL's (a select.poll's) events, waiting up to TIMEOUT_MS (None: for ever)."""
        if self.skip:
            self.skip -= 1
            return poll(timeout_ms)
        until = time.perf_counter() + SPIN_S
        while True:
            events = poll(0)
            if events:
                self.backoff = 0
                return events
            if time.perf_counter() > until:
                break
        self.backoff = self.skip = min(2 * self.backoff or 1, SPIN_BACKOFF_MAX)
        return poll(timeout_ms)


class ProtocolError(Exception):
    """A frame that is malformed, oversized, too deep or not of the expected schema."""


# -- message builders: the only places a frame's map is spelled out ----------


def make_ping(token: int) -> dict:
    return {"t": "ping", "id": token}


def make_cancel(gen: int) -> dict:
    return {"t": "cancel", "gen": gen}


def make_limit(gen: int, memory_mb: int) -> dict:
    return {"t": "limit", "gen": gen, "memory_mb": memory_mb}


def make_limited(gen: int, memory_mb: int, ok: bool) -> dict:
    return {"t": "limited", "gen": gen, "memory_mb": memory_mb, "ok": ok}


def make_load(token: int, modules: list) -> dict:
    return {"t": "load", "id": token, "modules": modules}


def make_loaded(token: int, loads: int, error: str | None) -> dict:
    return {"t": "loaded", "id": token, "loads": loads, "error": error}


def make_stop() -> dict:
    return {"t": "stop"}


def make_spawned(gen: int, loads: int = 0) -> dict:
    return {"t": "spawned", "gen": gen, "loads": loads}


def make_ready(gen: int) -> dict:
    return {"t": "ready", "gen": gen}


def make_pong(token: int) -> dict:
    return {"t": "pong", "id": token}


def make_done(gen: int, code, sig, cpu_ms: float, max_rss_kb: int) -> dict:
    return {
        "t": "done",
        "gen": gen,
        "code": code,
        "signal": sig,
        "cpu_ms": cpu_ms,
        "max_rss_kb": max_rss_kb,
    }


def make_run(
    run_id: str,
    src: str,
    params: dict,
    tools: list,
    jail_tools: dict,
    language: str,
    cpu_s: float = 0,
    memory_mb: int = 0,
    session: bool = False,
    seed: int | None = None,
) -> dict:
    return {
        "t": "run",
        "id": run_id,
        "src": src,
        "params": params,
        "tools": tools,
        "jail_tools": jail_tools,
        "language": language,
        "cpu_s": cpu_s,
        "memory_mb": memory_mb,
        "session": session,
        "seed": seed,
    }


def make_return(seq: int, ok: bool, value, error, stop) -> dict:
    return {"t": "return", "seq": seq, "ok": ok, "value": value, "error": error, "stop": stop}


def make_output(text: str) -> dict:
    return {"t": "output", "text": text}


def make_call(seq: int, tool: str, args: list, kwargs: dict) -> dict:
    return {"t": "call", "seq": seq, "tool": tool, "args": args, "kwargs": kwargs}


def make_result(run_id: str, status: str, value, errors: list, cpu_ms, max_rss_kb) -> dict:
    return {
        "t": "result",
        "id": run_id,
        "status": status,
        "value": value,
        "errors": errors,
        "cpu_ms": cpu_ms,
        "max_rss_kb": max_rss_kb,
    }


def encode(msg: dict) -> bytes:
    """One frame: header + msgpack body. Raises ProtocolError if it breaks the caps."""
    try:
        body = msgpack.packb(msg, use_bin_type=True, strict_types=False)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ProtocolError(f"cannot encode {msg.get('t', '?')!r} frame: {exc}") from None
    return HEADER.pack(len(body)) + sendable(body)


def sendable(body: bytes) -> bytes:
    """BODY, when decode() takes a body of its shape (size, depth, strings, items, cost):
    never send what the other side must refuse (the child decodes our frames unscanned, and a
    controller process that sends a refused frame is taken for a broken one). ProtocolError.

    Of a small body only its depth could be refused, and it cannot be when it holds at most
    MAX_DEPTH bytes that could open a container (a count at C speed); else the full scan."""
    if len(body) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds the {MAX_FRAME}-byte cap")
    if len(body) > SCAN_FREE or len(body.translate(None, NOT_CONTAINER)) > MAX_DEPTH:
        scan(body)
    return body


def frame_length(header: bytes, limit: int = MAX_FRAME) -> int:
    """The body length a header announces, checked against LIMIT before any read."""
    (length,) = HEADER.unpack(header)
    if length == 0 or length > limit:
        raise ProtocolError(f"frame length {length} is outside 1..{limit}")
    return length


# What scan() does with each msgpack type byte: (kind, a, b), where a scalar has `a` payload
# bytes and costs `b`, a fixstr holds `a` bytes, a sized str/bin has an `a`-byte length, a
# fixarray/fixmap holds `a` items of `b` values each, an array/map 16/32 has an `a`-byte
# count of items of `b` values each; ext types and the reserved byte are refused.
_SCALAR, _FIXSTR, _SIZED, _FIXCONTAINER, _CONTAINER, _REFUSED = range(6)


def _type_table() -> tuple:
    table = [(_REFUSED, 0, 0)] * 256
    for b in range(0x80):
        table[b] = (_SCALAR, 0, 0)  # positive fixint
    for b in range(0xE0, 0x100):
        table[b] = (_SCALAR, 0, 32)  # negative fixint
    for b in range(0x80, 0x90):
        table[b] = (_FIXCONTAINER, b & 0x0F, 2)  # fixmap
    for b in range(0x90, 0xA0):
        table[b] = (_FIXCONTAINER, b & 0x0F, 1)  # fixarray
    for b in range(0xA0, 0xC0):
        table[b] = (_FIXSTR, b & 0x1F, 0)
    scalars = {  # nil, false, true, float 32/64, uint 8..64, int 8..64: (payload, cost)
        0xC0: (0, 0), 0xC2: (0, 0), 0xC3: (0, 0), 0xCA: (4, 24), 0xCB: (8, 24),
        0xCC: (1, 0), 0xCD: (2, 32), 0xCE: (4, 32), 0xCF: (8, 32),
        0xD0: (1, 32), 0xD1: (2, 32), 0xD2: (4, 32), 0xD3: (8, 32),
    }  # fmt: skip
    for b, (payload, cost) in scalars.items():
        table[b] = (_SCALAR, payload, cost)
    for b, width in {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}.items():
        table[b] = (_SIZED, width, 0)  # bin 8/16/32, str 8/16/32
    for b, (width, per) in {0xDC: (2, 1), 0xDD: (4, 1), 0xDE: (2, 2), 0xDF: (4, 2)}.items():
        table[b] = (_CONTAINER, width, per)  # array 16/32, map 16/32
    return tuple(table)


_TYPES = _type_table()


def scan(body: bytes) -> None:
    """Walk BODY's msgpack headers without building anything; ProtocolError unless
    every container fits the bytes that follow it, nesting stays within MAX_DEPTH,
    strings within MAX_STR, containers within MAX_ITEMS, there is no ext type, and
    the objects decoding would build cost at most COST_PER_BYTE times the size.

    msgpack allocates a list for the item count a header announces before it reads
    the items: this is what keeps a few hostile bytes from costing megabytes. The
    cost estimate (bytes of CPython objects; shared singletons such as None, small
    ints and one-character strings cost nothing) is what keeps a frame of many
    tiny containers from costing gigabytes and seconds.
    """
    size, pos = len(body), 0
    budget = COST_PER_BYTE * size + COST_BASE
    left, above = 1, []  # values still to read at the open level, and at each level above
    types = _TYPES
    while True:
        if not left:
            if not above:
                break
            left = above.pop()
            continue
        left -= 1
        if pos >= size:
            raise ProtocolError("frame ends inside a value")
        b = body[pos]
        kind, a, per = types[b]
        pos += 1
        if kind == _SCALAR:
            pos += a
            budget -= per
            continue
        if kind == _FIXSTR or kind == _SIZED:
            if kind == _SIZED:
                length = int.from_bytes(body[pos : pos + a], "big")
                pos += a
                if length > MAX_STR:
                    raise ProtocolError(f"string of {length} bytes exceeds the {MAX_STR}-byte cap")
            else:
                length = a
            pos += length
            if length > 1:
                budget -= 56 + length
            continue
        if kind == _FIXCONTAINER:
            items = a
        elif kind == _CONTAINER:
            items = int.from_bytes(body[pos : pos + a], "big")
            pos += a
        else:
            raise ProtocolError(
                f"type byte 0x{b:02x} (an ext type or reserved) is not allowed on the wire"
            )
        if items > MAX_ITEMS:
            raise ProtocolError(f"a container of {items} items exceeds the {MAX_ITEMS}-item cap")
        count = items * per
        if count > size - pos:
            raise ProtocolError(
                f"a container announces {count} items but the frame holds {size - pos} bytes"
            )
        if len(above) >= MAX_DEPTH:
            raise ProtocolError(f"frame nests deeper than {MAX_DEPTH} levels")
        budget -= 64 + 56 * items if per == 2 else 56 + 8 * items
        if budget < 0:
            raise ProtocolError(
                f"a {size}-byte frame would decode into more than {COST_PER_BYTE} times "
                "its size in objects (too many small containers)"
            )
        above.append(left)
        left = count
    if pos != size:
        raise ProtocolError(
            f"frame has {size - pos} bytes after its value"
            if pos < size
            else "frame ends inside a value"
        )


def _ext_refused(code, data):
    raise ProtocolError(f"ext type {code} is not allowed on the wire")


def decode(body: bytes, expect=None, schemas=None, trusted: bool = False) -> dict:
    """Decode and check one frame body; EXPECT is the set of message types allowed now.
    SCHEMAS: another wire's message types (the jail's, SCHEMAS, when None). TRUSTED: the
    controller wrote it (the jail reading its run channel), and encode() checked it: only its
    schema is checked here."""
    if not trusted:
        scan(body)
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
    return verify_schema(msg, expect, schemas)


def verify_schema(msg, expect=None, schemas=None) -> dict:
    """Schema-check a decoded message: a map, a known type, the right keys and types."""
    if not isinstance(msg, dict):
        raise ProtocolError(f"frame is a {type(msg).__name__}, not a map")
    kind = msg.get("t")
    schema = (schemas or SCHEMAS).get(kind) if isinstance(kind, str) else None
    if schema is None:
        raise ProtocolError(f"unknown message type {kind!r}"[:120])
    if expect is not None and kind not in expect:
        raise ProtocolError(f"unexpected {kind!r} frame (expected {', '.join(sorted(expect))})")
    if len(msg) != len(schema) + 1:
        extra = sorted(str(k) for k in msg if k != "t" and k not in schema)
        missing = sorted(k for k in schema if k not in msg)
        raise ProtocolError(
            f"{kind!r} frame has wrong keys (extra {extra}, missing {missing})"[:200]
        )
    for key, types in schema.items():
        if key not in msg:
            raise ProtocolError(f"{kind!r} frame lacks {key!r}")
        value = msg[key]
        if types is not None and (
            not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        ):
            raise ProtocolError(f"{kind!r} frame: {key!r} is a {type(value).__name__}")
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
    """Incremental decoder for a non-blocking reader: feed bytes, take whole frames
    of at most LIMIT bytes (TRUSTED: as decode() takes it)."""

    def __init__(self, limit: int = MAX_FRAME, trusted: bool = False):
        self._buf = bytearray()
        self._need = None
        self._limit = limit
        self._trusted = trusted

    def feed(self, data: bytes) -> None:
        self._buf += data

    def pending(self) -> bool:
        """Are bytes of an unfinished frame buffered?"""
        return bool(self._buf) or self._need is not None

    def frames(self, expect=None):
        """Yield every complete frame now buffered; ProtocolError on the first bad one."""
        while True:
            if self._need is None:
                if len(self._buf) < HEADER.size:
                    return
                self._need = frame_length(self._buf[: HEADER.size], self._limit)
                del self._buf[: HEADER.size]
            if len(self._buf) < self._need:
                return
            body = self._buf[: self._need]  # a copy, decoded as it is
            del self._buf[: self._need]
            self._need = None
            yield decode(body, expect, trusted=self._trusted)
