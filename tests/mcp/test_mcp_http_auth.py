"""`lackjail serve --http`: every request needs the bearer token from a 0600 file, and a Host
(and Origin) naming the bound address, whatever that address is. Loopback traffic only."""

import http.client
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest

from lackjail.httpguard import Guard, host_forms
from lackjail.mcptoken import TokenError, load_or_create

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


async def ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"served"})


def status(guard, headers) -> int:
    async def main():
        transport = httpx2.ASGITransport(app=guard)
        async with httpx2.AsyncClient(transport=transport) as client:
            reply = await client.post("http://ignored/mcp", headers=headers, content=b"{}")
            return reply.status_code

    return anyio.run(main)


@pytest.mark.parametrize(
    "host, named",
    [
        ("127.0.0.2", "127.0.0.2:8765"),
        ("127.0.1.1", "127.0.1.1:8765"),
        ("::1", "[::1]:8765"),
        ("192.168.1.2", "192.168.1.2:8765"),
    ],
)
def test_host_origin_and_token_are_checked_for_any_bound_address(host, named):
    guard = Guard(ok_app, "t" * 43, host, 8765)
    good = {"Host": named, "Authorization": "Bearer " + "t" * 43}
    assert status(guard, good) == 200
    assert status(guard, {**good, "Origin": f"http://{named}"}) == 200
    assert status(guard, {**good, "Host": "evil.example:8765"}) == 421  # DNS rebinding
    assert status(guard, {**good, "Host": "127.0.0.1:8765" if host != "::1" else "x"}) == 421
    assert status(guard, {**good, "Origin": "http://evil.example"}) == 403
    assert status(guard, {"Host": named}) == 401
    assert status(guard, {**good, "Authorization": "Bearer " + "t" * 42 + "u"}) == 401
    assert status(guard, {**good, "Authorization": "t" * 43}) == 401


def test_a_loopback_bind_may_be_named_localhost():
    assert set(host_forms("127.0.0.2", 80)) == {"127.0.0.2:80", "localhost:80"}
    assert "localhost:80" not in host_forms("192.168.1.2", 80)


def test_the_token_file_is_made_once_private_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    token = load_or_create()
    path = tmp_path / "state" / "lackjail" / "mcp" / "token"
    info = os.stat(path)
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert len(token) >= 40 and load_or_create() == token
    os.chmod(path, 0o644)
    with pytest.raises(TokenError, match="may be read by others"):
        load_or_create()
    path.unlink()
    os.symlink(tmp_path / "elsewhere", path)
    with pytest.raises(TokenError, match="cannot read"):
        load_or_create()
    assert not (tmp_path / "elsewhere").exists()


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def post(host: str, port: int, headers: dict) -> int:
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        conn.request("POST", "/mcp", body=json.dumps(INIT), headers={**base, **headers})
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.nsjail
def test_a_server_on_127_0_0_2_needs_the_token_and_its_own_host(tmp_path, require_nsjail):
    host, state = "127.0.0.2", tmp_path / "state"
    port = _free_port(host)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(state)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lackjail.cli", "serve", "--workers", "1", "--kit", "readonly",
         "--http", f"{host}:{port}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            try:
                socket.create_connection((host, port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        config = subprocess.run(
            [sys.executable, "-m", "lackjail.cli", "mcp-config", "--http", f"{host}:{port}"],
            capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
        block = json.loads(config.stdout)["mcpServers"]["lackjail"]
        assert block["url"] == f"http://{host}:{port}/mcp" and block["type"] == "http"
        auth = block["headers"]["Authorization"]
        token = (state / "lackjail" / "mcp" / "token").read_text().strip()
        assert auth == f"Bearer {token}"
        named = f"{host}:{port}"
        got = {
            "no token": post(host, port, {"Host": named}),
            "wrong token": post(host, port, {"Host": named, "Authorization": "Bearer nope"}),
            "rebinding": post(host, port, {"Host": "evil.example", "Authorization": auth}),
            "served": post(host, port, {"Host": named, "Authorization": auth}),
        }
        other = as_another_user(host, port, state / "lackjail" / "mcp" / "token")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert got == {"no token": 401, "wrong token": 401, "rebinding": 421, "served": 200}
    if other is not None:  # as root: another local account can neither drive it nor read it
        assert other == "401 PermissionError", other
    assert str(state / "lackjail" / "mcp" / "token") in err.splitlines()[0]


ATTACKER = """
import http.client, sys
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conn = http.client.HTTPConnection(host, port, timeout=60)
conn.request("POST", "/mcp", body="{}", headers={"Host": f"{host}:{port}",
             "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
code = conn.getresponse().status
try:
    open(path).read()
    print(code, "read the token")
except OSError as exc:
    print(code, type(exc).__name__)
"""


def as_another_user(host, port, token_file) -> str | None:
    """What an ordinary local account gets from the server (root only; None otherwise)."""
    if os.geteuid() != 0:
        return None
    user = "lackjail-test"
    if subprocess.run(["id", "-u", user], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", user], check=True)  # fmt: skip
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable
    proc = subprocess.run(
        ["runuser", "-u", user, "--", python, "-c", ATTACKER, host, str(port), str(token_file)],
        capture_output=True, text=True, timeout=120, cwd="/",
    )  # fmt: skip
    return proc.stdout.strip() or proc.stderr


def test_an_unspecified_bind_address_is_refused():
    from click import BadParameter

    from lackjail.cli.serve import http_address

    for value in ("0.0.0.0:8765", "[::]:8765"):
        with pytest.raises(BadParameter, match="every address"):
            http_address(value, True)
