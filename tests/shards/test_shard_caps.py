"""What a shard sends its Jail is checked as the Jail decodes it: a value that passes the
jail's own frame but not the shard's (whose other fields are smaller: a number for the run's
id, no run id text) fails its run with a clear error, never the shard and every run on it."""

import msgpack
import pytest

from lackjail import protocol
from lackjail.api import Jail
from lackjail.shards import wire

RUN_ID = f"{7:016x}"  # a child's run id, as pool/run.py makes it


def _result(value) -> dict:
    return {"t": "result", "id": RUN_ID, "status": "ok", "value": value, "errors": [],
            "cpu_ms": 1.5, "max_rss_kb": 30000}  # fmt: skip


def _done(value) -> dict:
    return {"t": "done", "id": 3, "status": "ok", "value": value, "output": "", "errors": [],
            "cpu_ms": 1.5, "max_rss_kb": 30000}  # fmt: skip


def _between() -> list[int]:
    """The counts N of empty maps whose list passes in the jail's result frame (the shard
    decodes it) and breaks the cost cap in the shard's done frame."""
    found = []
    for n in range(5000, 9000):
        try:
            protocol.scan(msgpack.packb(_result([{}] * n)))
        except protocol.ProtocolError:
            continue
        try:
            protocol.scan(msgpack.packb(_done([{}] * n)))
        except protocol.ProtocolError:
            found.append(n)
    assert found, "the frames' sizes changed: no value lies between their caps any more"
    return found


def test_a_shard_encodes_only_what_the_jail_decodes():
    n = _between()[0]
    with pytest.raises(protocol.ProtocolError, match="60 times its size"):
        wire.encode(_done([{}] * n))
    deep: list = []
    for _ in range(protocol.MAX_DEPTH + 2):
        deep = [deep]
    answer = {"t": "answer", "id": 1, "ok": True, "value": deep, "error": None, "verdict": None}
    with pytest.raises(protocol.ProtocolError, match="deeper"):
        wire.encode(answer)  # a tool's result the shard would refuse: the call's error instead
    frame = wire.encode(_done([{}] * 10))
    assert protocol.decode(frame[4:], None, wire.SCHEMAS)["value"] == [{}] * 10


@pytest.mark.nsjail
def test_a_value_between_the_caps_fails_its_run_not_its_controller_process(require_nsjail):
    window = _between()
    n = window[len(window) // 2]
    with Jail(workers=2, processes=2) as jail:
        pids = jail.pool.pids()
        result = jail.run(f"[{{}} for _ in range({n})]")
        assert result.status == "error", result
        assert "cannot be sent" in result.errors[0]["message"]
        assert jail.pool.pids() == pids  # no controller process was killed
        assert [r.value for r in jail.map([f"{i} * 2" for i in range(6)])] == [0, 2, 4, 6, 8, 10]


@pytest.mark.nsjail
def test_a_tool_result_the_shard_would_refuse_fails_the_call_not_the_shard(require_nsjail):
    """A host tool's result that breaks the wire's cost cap (many empty maps) is that call's
    error, as in one process; the shard that asked for it serves on."""

    def many(n: int) -> list:
        """N empty maps."""
        return [{} for _ in range(n)]

    with Jail(workers=2, processes=2, tools=[many]) as jail:
        pids = jail.pool.pids()
        result = jail.run("many(20000)")
        assert result.status == "error", result
        assert "cannot be sent" in result.errors[0]["message"], result.errors
        assert jail.pool.pids() == pids
        assert [r.value for r in jail.map(["len(many(3))", "1", "2", "3"])] == [3, 1, 2, 3]
