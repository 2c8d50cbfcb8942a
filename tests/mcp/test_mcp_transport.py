"""The MCP server's transports: malformed lines get JSON-RPC errors, one log line on start, and the
streamable HTTP transport (loopback only unless forced), with the real mcp client."""

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import click
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from lackjail.cli.serve import http_address

ROOT = Path(__file__).resolve().parents[2]
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def env() -> dict:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def serve(*args, cwd, state=None):
    """`lackjail serve ARGS`; STATE: its XDG_STATE_HOME (where the HTTP token is kept)."""
    extra = {"XDG_STATE_HOME": str(state)} if state else {}
    return subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", "serve", "--workers", "1", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**env(), **extra},
    )


def test_malformed_lines_get_json_rpc_errors_and_serving_goes_on(tmp_path, require_nsjail):
    proc = serve(cwd=tmp_path)
    try:
        lines = [
            json.dumps(INIT),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            "this is not json",
            '{"no": "jsonrpc"}',
            json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
        ]
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        replies = [json.loads(proc.stdout.readline()) for _ in range(4)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        err = proc.stderr.read()
    assert replies[0]["id"] == 0 and "capabilities" in replies[0]["result"]
    assert replies[1] == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the line is not valid JSON"},
    }
    assert replies[2]["id"] is None and replies[2]["error"]["code"] == -32600
    assert replies[3] == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert proc.returncode == 0
    logged = err.splitlines()
    assert len(logged) == 1 and logged[0].startswith("lackjail ") and "on stdio" in logged[0]
    assert "kit none, policy default" in logged[0] and "isolation nsjail" in logged[0]


@pytest.mark.parametrize(
    "value, allow, expected",
    [
        ("8765", False, ("127.0.0.1", 8765)),
        ("127.0.0.1:8765", False, ("127.0.0.1", 8765)),
        ("[::1]:8765", False, ("::1", 8765)),
        ("localhost:1", False, ("localhost", 1)),
        ("192.168.1.2:8765", True, ("192.168.1.2", 8765)),
    ],
)
def test_http_addresses(value, allow, expected):
    assert http_address(value, allow) == expected


@pytest.mark.parametrize(
    "value, says",
    [
        ("192.168.1.2:80", "not a loopback address"),
        ("example.com:80", "not an IP address"),
        ("127.0.0.1:0", "not HOST:PORT"),
        ("127.0.0.1:x", "not HOST:PORT"),
    ],
)
def test_http_refuses_non_loopback_and_bad_addresses(value, says):
    with pytest.raises(click.BadParameter, match=says):
        http_address(value, False)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, proc) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the server never listened")


def test_streamable_http_with_the_real_client(tmp_path, require_nsjail):
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    port = _free_port()
    state = tmp_path / "state"
    proc = serve("--kit", "readonly", "--http", f"127.0.0.1:{port}", cwd=tmp_path, state=state)
    try:
        _wait_listening(port, proc)
        token = (state / "lackjail" / "mcp" / "token").read_text().strip()

        async def main():
            url = f"http://127.0.0.1:{port}/mcp"
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
            async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    with anyio.fail_after(120):
                        tools = {t.name for t in (await client.list_tools()).tools}
                        ran = await client.call_tool(
                            "run_program", {"program": 'len(read_file("notes.txt").splitlines())'}
                        )
                        checked = await client.call_tool("check_program", {"program": "import os"})
                        return tools, ran, checked

        tools, ran, checked = anyio.run(main)
        statuses = {}
        for host in ("evil.example", f"127.0.0.1:{port}"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            headers = {
                "Host": host,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {token}",
            }
            conn.request("POST", "/mcp", body=json.dumps(INIT), headers=headers)
            statuses[host] = conn.getresponse().status
            conn.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert {"run_program", "check_program", "kit_info"} <= tools
    assert not ran.is_error and ran.structured_content["value"] == 2
    assert ran.structured_content["trace"][0]["args"] == ["notes.txt"]
    assert checked.structured_content["valid"] is False
    # DNS rebinding: a request naming another host is refused, the same one naming ours is served
    assert statuses["evil.example"] in (403, 421) and statuses[f"127.0.0.1:{port}"] == 200
    assert f"serving MCP on http://127.0.0.1:{port}/mcp" in err.splitlines()[0]
