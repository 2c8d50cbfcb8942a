"""Decoding a frame from a jail costs at most a fixed multiple
of its size, and the largest frame follows the policy's value limit."""

import time
import tracemalloc

import msgpack
import pytest
from fakejail import fake_jail, run_on

from lackjail import protocol


def _result_body(value) -> bytes:
    return msgpack.packb(
        {
            "t": "result",
            "id": "x" * 16,
            "status": "ok",
            "value": value,
            "errors": [],
            "cpu_ms": 1.0,
            "max_rss_kb": 1,
        },
        use_bin_type=True,
    )


@pytest.mark.parametrize("element", [{}, []])
def test_a_frame_of_a_million_empty_containers_is_refused_cheaply(element):
    body = _result_body([element] * 1_000_000)
    # CPU time, measured without tracemalloc (which slows every allocation ~10x): ~0.3 s
    # here, so the bound holds on a loaded machine
    started = time.process_time()
    with pytest.raises(protocol.ProtocolError, match="times its size"):
        protocol.decode(body)
    took = time.process_time() - started
    tracemalloc.start()
    try:
        with pytest.raises(protocol.ProtocolError, match="times its size"):
            protocol.decode(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # nothing was built
    assert took < 5, took


@pytest.mark.parametrize(
    "value",
    [
        [[1, 2]] * 10_000,
        [{"name": "ab", "id": 1}] * 10_000,
        ["ab"] * 10_000,
        [1.5] * 10_000,
        [None] * 10_000,
        {"k" + str(i): i for i in range(10_000)},
    ],
)
def test_ordinary_values_decode_within_the_budget(value):
    body = _result_body(value)
    tracemalloc.start()
    try:
        assert protocol.decode(body)["value"] == value
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= protocol.COST_PER_BYTE * len(body) + protocol.COST_BASE


def test_the_controller_refuses_frames_beyond_the_policys_limit(tmp_path):
    big = protocol.encode(protocol.make_output("x" * (3 << 20))).hex()
    steps = [["spawn", 1], ["ready", 1], ["read_run", 1], ["late", [1, big]]]
    with fake_jail(tmp_path, steps, max_frame=protocol.max_frame(1 << 20)) as jail:
        outcome = run_on(jail)
    assert outcome.status == "error" and "outside 1.." in outcome.errors[0]["message"]
    assert outcome.retire


def test_a_jail_sending_a_million_empty_maps_fails_only_its_run(tmp_path):
    body = _result_body([{}] * 1_000_000)
    frame = (len(body).to_bytes(4, "big") + body).hex()
    steps = [["spawn", 1], ["ready", 1], ["read_run", 1], ["late", [1, frame]]]
    with fake_jail(tmp_path, steps) as jail:
        outcome = run_on(jail, wall_s=10.0)
    assert outcome.status == "error" and "times its size" in outcome.errors[0]["message"]
