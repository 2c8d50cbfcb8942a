"""The user's server serves only a peer with its own rights, and a client talks only to such a
server: a root without capabilities, or a process under no_new_privs, of the server's uid
borrows nothing (the command runs in its own process, as it would without a server)."""

from __future__ import annotations

import os
import subprocess
import sys

import others
import pytest
from test_server import CONSOLE, PATIENCE_S, PEER_PROBE, Server, _raw_request

from lackjail.server import place, wire


@pytest.fixture
def server(tmp_path, require_nsjail):
    s = Server(tmp_path)
    yield s
    s.stop()


SETPRIV = "/usr/bin/setpriv"  # util-linux: runs a command with fewer rights
LESS = [SETPRIV, "--no-new-privs", "--"]  # no_new_privs: what a sandboxed process has set
CAPLESS = [SETPRIV, "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", *LESS]


def _setpriv():
    if not os.access(SETPRIV, os.X_OK):
        pytest.skip("needs util-linux's setpriv to run a process with fewer rights")


def test_a_root_without_capabilities_cannot_borrow_the_servers(server, tmp_path):
    """A root process with no capabilities (a container's or a service's) cannot have the
    server read what only a capable root reads (another user's private folder): the command
    runs in its own process, refused there as it would be."""
    user = others.ordinary_user()
    if user is None:
        pytest.skip("needs root to act as a root without capabilities")
    _setpriv()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("TOP SECRET\n")
    os.chmod(victim / "secret.txt", 0o600)
    os.chown(victim / "secret.txt", user.pw_uid, user.pw_gid)
    os.chown(victim, user.pw_uid, user.pw_gid)
    os.chmod(victim, 0o700)
    prog = server.work / "prog.lackpy"
    prog.write_text('print(read_file("secret.txt"))\n')
    server.start()
    done = subprocess.run(
        [*CAPLESS, CONSOLE, "run", str(prog), "--kit", "readonly", "--workspace", str(victim)],
        capture_output=True, text=True, env=server.env, cwd=server.work, timeout=PATIENCE_S,
    )  # fmt: skip
    assert "TOP SECRET" not in done.stdout + done.stderr
    assert done.returncode != 0 and "not readable" in done.stderr
    assert server.status()[1] == 0  # the server ran nothing


def test_a_peer_with_other_rights_is_hung_up_on_unread(server):
    """A process of our uid under no_new_privs (the kernel's flag a sandbox sets) that speaks to
    the socket directly is hung up on with nothing answered."""
    _setpriv()
    server.start()
    code = PEER_PROBE
    done = subprocess.run(
        [*LESS, sys.executable, "-c", code, str(server.folder / place.SOCKET),
         wire.request(wire.PING, []).hex()],
        capture_output=True, text=True, timeout=PATIENCE_S,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "b''\n"), done.stderr
    assert _raw_request(server, wire.request(wire.PING, []), [])[:1] == wire.EXITED  # ours: yes


def test_a_server_with_other_rights_is_refused_and_the_command_runs_here(server):
    """A server under no_new_privs (one a sandboxed process of ours started): a client without
    it hands it nothing and runs the command in its own process."""
    _setpriv()
    less = subprocess.Popen(
        [*LESS, CONSOLE, "server", "serve"], env=server.env, cwd="/",
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    server.clients.append(less)
    try:
        server.wait_for(lambda: (server.folder / place.SOCKET).exists())
        done = server.run("run", "-", stdin="8")
        assert (done.returncode, done.stdout) == (0, "8\n")
        seen = subprocess.run(
            [*LESS, CONSOLE, "server", "status"], capture_output=True, text=True,
            env=server.env, timeout=PATIENCE_S,
        )  # fmt: skip
        assert seen.returncode == 0 and seen.stdout.split()[-3] == "0", seen.stdout  # it ran none
    finally:
        subprocess.run([*LESS, CONSOLE, "server", "stop"], env=server.env, timeout=PATIENCE_S)
        less.wait(timeout=PATIENCE_S)
