"""The wire: round trips, caps and schemas (the fuzz suite attacks it harder)."""

import struct

import msgpack
import pytest

from lackjail import protocol

SAMPLES = [
    {"t": "ping", "id": 1},
    {"t": "pong", "id": 2},
    {"t": "cancel", "gen": 3},
    {"t": "stop"},
    {"t": "ready", "gen": 1},
    {"t": "spawned", "gen": 1, "loads": 2},
    {"t": "done", "gen": 1, "code": 0, "signal": None, "cpu_ms": 1.5, "max_rss_kb": 100},
    {
        "t": "run",
        "id": "a",
        "src": "1",
        "params": {"n": 1},
        "tools": ["read_file"],
        "jail_tools": {},
        "language": "lackpy",
        "cpu_s": 0.5,
        "memory_mb": 64,
        "session": True,
        "seed": 7,
    },
    {"t": "limit", "gen": 2, "memory_mb": 64},
    {"t": "limited", "gen": 2, "memory_mb": 0, "ok": True},
    {"t": "load", "id": 4, "modules": ["json", "re"]},
    {"t": "loaded", "id": 4, "loads": 1, "error": None},
    {
        "t": "return",
        "seq": 1,
        "ok": True,
        "value": [1, b"x", {"k": None}],
        "error": None,
        "stop": None,
    },
    {"t": "output", "text": "hé"},
    {"t": "call", "seq": 1, "tool": "read_file", "args": ["a"], "kwargs": {}},
    {
        "t": "result",
        "id": "a",
        "status": "ok",
        "value": 3,
        "errors": [],
        "cpu_ms": 0.1,
        "max_rss_kb": 1,
    },
]


@pytest.mark.parametrize("msg", SAMPLES, ids=[m["t"] for m in SAMPLES])
def test_round_trip(msg):
    frame = protocol.encode(msg)
    assert protocol.frame_length(frame[:4]) == len(frame) - 4
    assert protocol.decode(frame[4:]) == msg
    buf = protocol.FrameBuffer()
    for i in range(0, len(frame), 3):  # byte-wise arrival still yields one frame
        buf.feed(frame[i : i + 3])
    assert list(buf.frames()) == [msg]


def test_every_schema_has_a_sample():
    assert {m["t"] for m in SAMPLES} == set(protocol.SCHEMAS)


def _nest(depth):
    value = None
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "body,why",
    [
        (msgpack.packb([1]), "not a map"),
        (msgpack.packb({"t": "nope"}), "unknown message type"),
        (msgpack.packb({"t": "ping"}), "wrong keys"),
        (msgpack.packb({"t": "ping", "id": "1"}), "'id' is a str"),
        (msgpack.packb({"t": "ping", "id": True}), "'id' is a bool"),
        (msgpack.packb({"t": "ping", "id": 1, "x": 1}), "wrong keys"),
        (b"\xc1", "not allowed on the wire"),
        (msgpack.packb({"t": "output", "text": msgpack.ExtType(1, b"x")}), "ext type"),
        (b"\x81\xa1t\xdd\xff\xff\xff\xff", "exceeds the"),
        (b"\x81\xa1t\xdc\x00\xff", "announces 255 items but the frame holds 0 bytes"),
        (b"\x81\xa1t\xa4ping\x00", "bytes after its value"),
        (
            msgpack.packb(
                {
                    "t": "return",
                    "seq": 1,
                    "ok": True,
                    "value": _nest(150),
                    "error": None,
                    "stop": None,
                }
            ),
            "deeper",
        ),
    ],
)
def test_bad_frames_raise_protocol_error(body, why):
    with pytest.raises(protocol.ProtocolError, match=why):
        protocol.decode(body)


def test_unexpected_type_is_refused():
    with pytest.raises(protocol.ProtocolError, match="unexpected 'run'"):
        protocol.decode(protocol.encode(SAMPLES[7])[4:], expect=("result",))


@pytest.mark.parametrize("length", [0, protocol.MAX_FRAME + 1, 0xFFFFFFFF])
def test_length_caps_are_checked_before_reading(length):
    with pytest.raises(protocol.ProtocolError, match="outside"):
        protocol.frame_length(struct.pack(">I", length))


def test_encode_refuses_unencodable():
    with pytest.raises(protocol.ProtocolError):
        protocol.encode({"t": "output", "text": object()})


def test_read_frame_reports_truncation():
    frame = protocol.encode({"t": "ping", "id": 1})
    data = [frame[:6]]
    with pytest.raises(EOFError, match="mid-frame"):
        protocol.read_frame(lambda n: data.pop() if data else b"")


def test_builders_make_frames_of_their_schema():
    built = [
        protocol.make_ping(1),
        protocol.make_pong(1),
        protocol.make_cancel(1),
        protocol.make_stop(),
        protocol.make_spawned(1),
        protocol.make_ready(1),
        protocol.make_done(1, 0, None, 1.0, 1),
        protocol.make_run("a", "1", {}, [], {}, "lackpy"),
        protocol.make_limit(1, 64),
        protocol.make_limited(1, 64, True),
        protocol.make_load(1, ["json"]),
        protocol.make_loaded(1, 1, "no module 'os' in the table"),
        protocol.make_return(1, True, None, None, None),
        protocol.make_output("x"),
        protocol.make_call(1, "t", [], {}),
        protocol.make_result("a", "ok", 1, [], 1.0, 1),
    ]
    assert {m["t"] for m in built} == set(protocol.SCHEMAS)
    for msg in built:
        assert protocol.decode(protocol.encode(msg)[4:]) == msg


def test_max_frame_follows_the_policys_value_limit():
    assert protocol.max_frame(1 << 20) < 4 << 20
    assert protocol.max_frame(1 << 40) == protocol.MAX_FRAME
    buf = protocol.FrameBuffer(protocol.max_frame(1000))
    buf.feed(struct.pack(">I", 2 << 20))
    with pytest.raises(protocol.ProtocolError, match="outside"):
        list(buf.frames())


@pytest.mark.parametrize("kind", ["map of empty maps", "array of empty maps"])
def test_a_body_encode_need_not_scan_cannot_break_the_cost_cap(kind):
    """encode() scans only bodies over SCAN_FREE bytes: one that size at the costliest the
    scan counts (empty maps as a map's keys and values, or as an array's items) must pass."""
    n = protocol.SCAN_FREE
    if kind == "map of empty maps":
        items = (n - 3) // 2
        body = b"\xde" + items.to_bytes(2, "big") + b"\x80" * (2 * items)
    else:
        body = b"\xdc" + (n - 3).to_bytes(2, "big") + b"\x80" * (n - 3)
    assert len(body) <= n
    protocol.scan(body)
    with pytest.raises(protocol.ProtocolError, match="60 times its size"):
        protocol.scan(b"\xdc" + (4 * n).to_bytes(2, "big") + b"\x80" * (4 * n))


@pytest.mark.parametrize("depth", [protocol.MAX_DEPTH - 2, protocol.MAX_DEPTH - 1, 100, 400])
def test_a_small_frame_encode_sends_is_one_the_scan_accepts(depth):
    """The child decodes the controller's frames without the scan: whatever encode() sends,
    however small, must be a frame the scan accepts (here: nesting at and past the cap, in
    bodies well under SCAN_FREE), and a small body merely holding bytes that look like
    container headers (in a string) still encodes."""
    msg = {"t": "return", "seq": 1, "ok": True, "value": _nest(depth), "error": None}
    msg["stop"] = None
    body = msgpack.packb(msg)
    assert len(body) <= protocol.SCAN_FREE
    try:
        frame = protocol.encode(msg)
    except protocol.ProtocolError:
        with pytest.raises(protocol.ProtocolError, match="deeper"):
            protocol.scan(body)
        assert depth >= protocol.MAX_DEPTH - 1
        return
    protocol.scan(frame[4:])
    assert protocol.decode(frame[4:], trusted=True) == msg
    looks = {**msg, "value": b"\x91" * 500}
    assert protocol.decode(protocol.encode(looks)[4:]) == looks


def test_a_trusted_frame_is_still_checked_against_its_schema():
    body = protocol.encode({"t": "return", "seq": 1, "ok": True, "value": 1, "error": None})[4:]
    with pytest.raises(protocol.ProtocolError, match="wrong keys"):
        protocol.decode(body, ("return",), trusted=True)


class _Peer:
    """A poll function: its answer comes after ZEROS polls without a timeout (None: never
    while spinning); a poll with a timeout (asleep) always finds it."""

    def __init__(self, zeros):
        self.zeros, self.spun, self.slept = zeros, 0, 0

    def __call__(self, timeout_ms):
        if timeout_ms == 0:
            self.spun += 1
            return [(3, 1)] if self.zeros is not None and self.spun > self.zeros else []
        self.slept += 1
        return [(3, 1)]


def test_a_spin_that_catches_its_answer_keeps_spinning():
    spin = protocol.Spin()
    for _ in range(3):
        peer = _Peer(zeros=2)
        assert spin.poll(peer, 1000) == [(3, 1)]
        assert peer.spun == 3 and peer.slept == 0


def test_spins_that_come_up_empty_back_off_and_a_catch_ends_the_back_off():
    spin = protocol.Spin()
    pattern = []  # per wait: spun (True) or slept at once (False)
    for _ in range(1 + 1 + 1 + 2 + 1 + 4 + 1):
        peer = _Peer(zeros=None)
        assert spin.poll(peer, 1000) == [(3, 1)] and peer.slept == 1
        pattern.append(peer.spun > 0)
    assert pattern == [True, False, True, False, False, True] + [False] * 4 + [True]
    for _ in range(protocol.SPIN_BACKOFF_MAX + 1):  # the next spin catches its answer
        peer = _Peer(zeros=0)
        spin.poll(peer, 1000)
        if peer.spun:
            break
    assert peer.slept == 0 and spin.skip == 0 and spin.backoff == 0
    peer = _Peer(zeros=0)
    spin.poll(peer, 1000)
    assert peer.spun == 1 and peer.slept == 0  # spinning at every wait again


def test_the_back_off_is_capped():
    spin = protocol.Spin()
    for _ in range(400):
        spin.poll(_Peer(zeros=None), 1000)
    assert spin.backoff == protocol.SPIN_BACKOFF_MAX
