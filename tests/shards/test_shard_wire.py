"""The shards' wire and settings, without a jail: strict frames, a policy and a kit's shape
that cross as plain data and come back equal, the `processes` rule, and bad settings named."""

import msgpack
import pytest

from lackjail import protocol
from lackjail.api import Jail
from lackjail.errors import ArgumentError
from lackjail.kit import resolve_kit
from lackjail.policy import PolicyError, load_policy, policy_from_dict
from lackjail.shards import processes_for, wire


def _body(msg) -> bytes:
    return msgpack.packb(msg, use_bin_type=True)


def test_frames_round_trip_and_anything_else_is_refused():
    done = {
        "t": "done",
        "id": 7,
        "status": "ok",
        "value": [1, b"x", {"k": None}],
        "output": "hé",
        "errors": [],
        "cpu_ms": 0.5,
        "max_rss_kb": 10,
    }
    frame = wire.encode(done)
    assert protocol.decode(frame[4:], wire.FROM_SHARD, wire.SCHEMAS) == done
    refused = [
        {**done, "extra": 1},  # a key the schema lacks
        {k: v for k, v in done.items() if k != "output"},  # a key missing
        {**done, "id": "7"},  # a wrong type
        {**done, "t": "run"},  # a frame of the other direction
        {"t": "ping", "id": 1},  # the jail's wire is not this one
    ]
    for msg in refused:
        with pytest.raises(protocol.ProtocolError):
            protocol.decode(_body(msg), wire.FROM_SHARD, wire.SCHEMAS)
    ext = _body({**done, "value": msgpack.ExtType(1, b"x")})
    with pytest.raises(protocol.ProtocolError, match="ext type"):
        protocol.decode(ext, wire.FROM_SHARD, wire.SCHEMAS)
    with pytest.raises(protocol.ProtocolError, match="cannot encode"):
        wire.encode({"t": "run", "params": {"s": {1, 2}}})


@pytest.mark.parametrize("name", ["default", "strict", "ci"])
def test_a_policy_crosses_as_plain_data_and_comes_back_equal(name):
    policy = load_policy(name)
    data = msgpack.unpackb(_body(wire.policy_data(policy)))
    assert wire.rebuild_policy(data) == policy
    custom = policy_from_dict({"tools": {"deny": ["write_file"], "timeouts": {"x": 2}}})
    assert wire.rebuild_policy(msgpack.unpackb(_body(wire.policy_data(custom)))) == custom


def test_a_kits_shape_is_what_its_checker_reads():
    kit = resolve_kit("readonly")
    shape = wire.rebuild_kit(msgpack.unpackb(_body(wire.kit_data(kit))))
    assert shape.names == kit.names
    assert list(shape.host_tools) == list(kit.host_tools)
    for call, spec in kit.specs.items():
        assert [(a.name, a.type, a.required) for a in shape.specs[call].args] == [
            (a.name, a.type, a.required) for a in spec.args
        ]
    assert wire.rebuild_kit(wire.kit_data(None)) is None


def test_auto_is_one_process_on_a_small_host_and_one_per_two_jails_on_a_big_one():
    assert processes_for("auto", 2, cpus=2) == 1
    assert processes_for("auto", 16, cpus=2) == 1
    assert processes_for("auto", 2, cpus=16) == 1
    assert processes_for("auto", 16, cpus=16) == 8
    assert processes_for(0, 64, cpus=16) == 8
    assert processes_for("auto", 5, cpus=8) == 3
    assert processes_for(3, 4) == 3


@pytest.mark.parametrize("value", [0.5, "many", True, -1])
def test_a_bad_processes_value_names_the_setting(value):
    with pytest.raises(ArgumentError, match="processes must be 'auto' or a whole number"):
        Jail(workers=2, processes=value)


def test_more_processes_than_jails_says_so():
    with pytest.raises(ArgumentError, match=r"processes = 3 is more than the jails \(2\)"):
        Jail(workers=2, processes=3)
    policy = policy_from_dict({"pool": {"processes": 3, "workers": 2}})
    with pytest.raises(ArgumentError, match=r"policy key 'pool.processes' = 3 is more than"):
        Jail(policy=policy)


def test_the_policy_key_is_checked():
    with pytest.raises(PolicyError, match="pool.processes"):
        policy_from_dict({"pool": {"processes": 5000}})
    with pytest.raises(PolicyError, match="pool.processes"):
        policy_from_dict({"pool": {"processes": "auto"}})
