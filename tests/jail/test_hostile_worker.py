"""A fake worker that sends garbage, oversized or out-of-order frames: the
controller fails only that run, with a clear error, and never raises."""

import sys
import textwrap

import pytest

from lackjail.pool.worker import Worker

LIMITS = {"output_bytes": 1000, "cpu_s": 1, "memory_mb": 64}

FAKE = textwrap.dedent("""
    import os, struct, sys, time
    sys.path[:0] = {paths!r}
    import msgpack

    def raw(body):
        return struct.pack('>I', len(body)) + body

    def frame(obj):
        return raw(msgpack.packb(obj, use_bin_type=True))

    os.write(1, frame({{'t': 'ready', 'gen': 1}}))
    os.read(3, struct.unpack('>I', os.read(3, 4))[0])
    result = {{'t': 'result', 'id': 'r1', 'status': 'ok', 'value': 1, 'errors': [], 'cpu_ms': 0.0, 'max_rss_kb': 0}}
    scenario = sys.argv[1]
    if scenario == 'exit':
        sys.exit(0)
    if scenario.startswith('signal'):
        done = {{'t': 'done', 'gen': 1, 'code': None, 'signal': int(scenario[6:]), 'cpu_ms': 1.0, 'max_rss_kb': 1}}
        os.write(1, frame(done))
        time.sleep(30)
    out = {{
        'garbage': raw(b'\\xc1' * 5),
        'oversized': struct.pack('>I', 0xFFFFFFFF) + b'x' * 100,
        'zero_length': struct.pack('>I', 0),
        'not_a_map': frame([1, 2, 3]),
        'unknown_type': frame({{'t': 'exec', 'code': 'x'}}),
        'out_of_order': frame({{'t': 'ready', 'gen': 2}}),
        'wrong_id': frame({{**result, 'id': 'not-this-run'}}),
        'bad_status': frame({{**result, 'status': 'pwned'}}),
        'extra_key': frame({{'t': 'output', 'text': 'x', 'evil': 1}}),
        'deep': raw(b'\\x82\\xa1t\\xa6output\\xa4text' + b'\\x91' * 500 + b'\\xc0'),
        'ext': raw(b'\\x82\\xa1t\\xa6output\\xa4text\\xd4\\x05\\x00'),
        'stall': b'',
    }}[scenario]
    os.write(4, out)
    time.sleep(30)
""")

RUN = {
    "t": "run",
    "id": "r1",
    "src": "1",
    "params": {},
    "tools": [],
    "jail_tools": {},
    "language": "lackpy",
}


def _fake(tmp_path, scenario):
    import msgpack

    script = tmp_path / "fake.py"
    script.write_text(
        FAKE.format(paths=[str(__import__("pathlib").Path(msgpack.__file__).parents[1])])
    )
    return Worker([sys.executable, "-I", str(script), scenario], {}, LIMITS, 1, 1)


@pytest.mark.parametrize(
    "scenario,status,text",
    [
        ("garbage", "error", "protocol"),
        ("oversized", "error", "protocol"),
        ("zero_length", "error", "protocol"),
        ("not_a_map", "error", "protocol"),
        ("unknown_type", "error", "protocol"),
        ("out_of_order", "error", "protocol"),
        ("extra_key", "error", "protocol"),
        ("deep", "error", "protocol"),
        ("ext", "error", "protocol"),
        ("wrong_id", "error", "malformed result"),
        ("bad_status", "error", "malformed result"),
        ("stall", "timeout", "wall-clock"),
        ("exit", "killed", "ended"),
        ("signal31", "denied", "seccomp"),
        ("signal24", "timeout", "CPU time limit of 1 s"),
        ("signal9", "killed", "signal 9"),
    ],
)
def test_hostile_frames_fail_only_that_run(tmp_path, scenario, status, text):
    worker = _fake(tmp_path, scenario)
    try:
        worker.wait_ready(10)
        outcome = worker.execute(
            dict(RUN),
            wall_s=1.0,
            kill_grace=0.2,
            on_call=lambda f: pytest.fail("no call expected"),
            on_output=lambda t: None,
        )
        assert outcome.status == status, outcome
        assert text in outcome.errors[0]["message"]
        assert outcome.retire
    finally:
        worker.kill()
