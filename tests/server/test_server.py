"""The user's resident server: `lackjail run` through it does what it does in its own process
(output, exit codes, --json, stdin, the working folder as workspace, exactly one run), with the
real jail; it refuses other users, stale installs and bad requests; a client that hangs up or
is killed leaves no jail behind; it ends when idle, stopped or turned off.

Every test has folders of its own (XDG_RUNTIME_DIR, XDG_CACHE_HOME, XDG_CONFIG_HOME), so it
never reaches the developer's server, and stops what it started."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time

import others
import psutil
import pytest

from lackjail.server import place, wire

CONSOLE = os.path.join(os.path.dirname(sys.executable), "lackjail")
PATIENCE_S = 120.0  # how long a wait for something that must happen may take on a loaded host
LONG = 'print("started")\nsum(range(1000000000000))\n'  # runs until it is ended
LONG_POLICY = 'name = "long"\n[limits]\nwall_s = 3600.0\ncpu_s = 3600\n'  # and is not by itself


class Server:
    """The folders of one test's server, and commands run with them."""

    def __init__(self, tmp_path):
        self.runtime = tmp_path / "run"
        self.runtime.mkdir(mode=0o700)
        self.env = {
            **os.environ,
            "LACKJAIL_SERVER": "1",
            "XDG_RUNTIME_DIR": str(self.runtime),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        }
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.folder = self.runtime / "lackjail"
        self.work = tmp_path / "work"
        self.work.mkdir()
        self.clients: list[subprocess.Popen] = []  # killed at the end, if a test failed

    def run(self, *args, stdin: str = "", env=None, cwd=None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [CONSOLE, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=cwd or self.work,
            timeout=PATIENCE_S,
        )

    def status(self) -> tuple[int, int] | None:
        """(server pid, commands it ran), or None when none answers."""
        done = self.run("server", "status")
        if done.returncode != 0:
            return None
        words = done.stdout.split()
        return int(words[1]), int(words[-3])

    def start(self) -> int:
        """Run a first command (in its own process; it starts the server); the server's pid."""
        assert self.run("run", "-", stdin="1").stdout == "1\n"
        return self.wait_for(self.status)[0]

    def wait_for(self, check):
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"{check} never held")

    def processes(self) -> list[psutil.Process]:
        """The live processes whose environment names this test's runtime folder (its
        servers, their waiting and running processes)."""
        found = []
        for proc in psutil.process_iter():
            try:
                if proc.environ().get("XDG_RUNTIME_DIR") == str(self.runtime):
                    if proc.status() != psutil.STATUS_ZOMBIE:
                        found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return found

    def unlocked(self) -> bool:
        """No server holds the folder's lock."""
        try:
            fd = os.open(self.folder / place.LOCK, os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
        return True

    def gone(self) -> bool:
        """No server, and none of its processes left."""
        return self.unlocked() and not self.processes()

    def stop(self) -> None:
        """Stop the server; kill what a failed test left running."""
        for client in self.clients:
            client.kill()
            client.wait()
        # a server a command started may still be on its way to its socket: stop until none
        self.wait_for(lambda: self.run("server", "stop") and self.unlocked())
        for proc in self.processes():
            proc.kill()
        self.wait_for(self.gone)


@pytest.fixture
def server(tmp_path, require_nsjail):
    s = Server(tmp_path)
    yield s
    s.stop()


def comparable(done: subprocess.CompletedProcess, as_json: bool) -> tuple:
    """What a command showed, less what differs from run to run (timings)."""
    out = done.stdout
    if as_json:
        shown = json.loads(out)
        shown.pop("stats", None)
        for call in shown.get("trace", []):
            call.pop("duration_ms", None)
        out = shown
    return done.returncode, out, done.stderr


CASES = [
    ("value and output", ["run", "-"], 'print("hi")\n6 * 7\n'),
    ("a runtime error", ["run", "-"], "1 / 0\n"),
    ("an invalid program", ["run", "-"], "import os\n"),
    ("a policy refusal", ["run", "-", "--kit", "readonly"], 'read_file("/etc/passwd")\n'),
    ("--json", ["run", "-", "--json"], 'print("x")\n[1, 2]\n'),
    ("--json, invalid", ["run", "-", "--json"], "x = (\n"),
    ("a bad flag", ["run", "-", "--no-such-flag"], "1\n"),
    ("a missing file", ["run", "missing.lackpy"], ""),
    ("a file", ["run", "prog.lackpy", "--param", "n=5"], ""),
]


def test_a_command_through_the_server_shows_what_it_shows_in_its_own_process(server):
    (server.work / "prog.lackpy").write_text("n * 2\n")
    server.start()
    for name, args, stdin in CASES:
        before = server.status()[1]
        served = server.run(*args, stdin=stdin)
        assert server.status() is not None, (served, server.processes())
        assert server.status()[1] == before + 1, name  # it ran in the server
        alone = server.run(*args, stdin=stdin, env={"LACKJAIL_SERVER": "0"})
        assert server.status()[1] == before + 1, name  # and this one did not
        as_json = "--json" in args and served.stdout.startswith("{")
        assert comparable(served, as_json) == comparable(alone, as_json), name
    codes = {name: server.run(*args, stdin=stdin).returncode for name, args, stdin in CASES}
    assert codes["value and output"] == 0 and codes["a runtime error"] == 1
    assert codes["an invalid program"] == 2 and codes["a bad flag"] == 2


def test_the_workspace_is_the_clients_folder_and_the_program_runs_once(server, tmp_path):
    """A program that counts its runs in a file of the working folder (the files kit's
    workspace is the folder the command was typed in, here not the server's)."""
    server.start()
    here = tmp_path / "elsewhere"
    here.mkdir()
    (here / "count.txt").write_text("0")
    program = 'write_file("count.txt", str(int(read_file("count.txt")) + 1))\n"done"\n'
    before = server.status()[1]
    for n in range(1, 4):
        done = server.run("run", "-", "--kit", "files", stdin=program, cwd=here)
        assert (done.returncode, done.stdout) == (0, '"done"\n'), done.stderr
        assert (here / "count.txt").read_text() == str(n)
    assert server.status()[1] == before + 3
    assert not (server.work / "count.txt").exists()


def test_the_workspace_config_is_found_from_the_clients_folder(server):
    """The workspace's `.lackjail/config.toml` (here: the files kit) is read from the folder
    the command was typed in, and the file written is the same as in the command's own
    process."""
    server.start()
    before = server.status()[1]
    (server.work / ".lackjail").mkdir()
    (server.work / ".lackjail" / "config.toml").write_text('[defaults]\nkit = "files"\n')
    modes = []
    for env in ({}, {"LACKJAIL_SERVER": "0"}):
        done = server.run("run", "-", stdin='write_file("new.txt", "x")\n"ok"\n', env=env)
        assert (done.returncode, done.stdout) == (0, '"ok"\n'), done.stderr
        modes.append((server.work / "new.txt").stat().st_mode)
        (server.work / "new.txt").unlink()
    assert modes[0] == modes[1]
    assert server.status()[1] == before + 1


def test_back_to_back_commands_of_two_workspaces_each_get_their_own_config(server, tmp_path):
    """Two workspaces whose `.lackjail/config.toml` choose different kits (files: the program
    may write; readonly: it may not), run in turn through one server: each command reads its
    own workspace's, none gets what the command before it read, and each shows what it shows
    in its own process."""
    server.start()
    before = server.status()[1]
    places = {}
    for name, kit in (("writes", "files"), ("reads", "readonly")):
        places[name] = tmp_path / name
        (places[name] / ".lackjail").mkdir(parents=True)
        (places[name] / ".lackjail" / "config.toml").write_text(f'[defaults]\nkit = "{kit}"\n')
    program = 'write_file("new.txt", "x")\n"wrote"\n'
    for name in ("writes", "reads", "writes", "reads"):
        served = server.run("run", "-", "--json", stdin=program, cwd=places[name])
        wrote = (places[name] / "new.txt").exists()
        (places[name] / "new.txt").unlink(missing_ok=True)
        alone = server.run(
            "run", "-", "--json", stdin=program, cwd=places[name], env={"LACKJAIL_SERVER": "0"}
        )
        assert comparable(served, True) == comparable(alone, True), name
        assert (served.returncode, wrote) == ((0, True) if name == "writes" else (2, False))
        (places[name] / "new.txt").unlink(missing_ok=True)
    assert server.status()[1] == before + 4


def test_the_clients_environment_is_the_commands(server, tmp_path):
    """A user config home the server was not started with ([defaults] kit = "files"): the
    command finds it from the client's environment."""
    server.start()
    before = server.status()[1]
    config = tmp_path / "other-config" / "lackjail"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[defaults]\nkit = "files"\n')
    program = 'write_file("from-env.txt", "x")\n"ok"\n'
    done = server.run("run", "-", stdin=program, env={"XDG_CONFIG_HOME": str(config.parent)})
    assert (done.returncode, done.stdout) == (0, '"ok"\n'), done.stderr
    assert (server.work / "from-env.txt").read_text() == "x"
    assert server.status()[1] == before + 1
    assert server.run("run", "-", stdin=program).returncode == 2  # not without it


def test_concurrent_clients_each_get_their_own_outcome(server):
    server.start()
    procs = [
        subprocess.Popen(
            [CONSOLE, "run", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=server.env,
            cwd=server.work,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(f"{i} * 10\n", timeout=PATIENCE_S) for i, p in enumerate(procs)]
    assert [out for out, _ in outs] == ["0\n", "10\n", "20\n"]
    assert [p.returncode for p in procs] == [0, 0, 0]


def _running(server, sig: int | None):
    """Start LONG through the server; once it printed, send the client SIG (None: SIGKILL the
    busy server process instead). The client, and the jail processes of the command."""
    pid = server.start()
    (server.work / "long.toml").write_text(LONG_POLICY)
    client = subprocess.Popen(
        [CONSOLE, "run", "-", "--policy", "long.toml"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server.env,
        cwd=server.work,
        preexec_fn=lambda: os.umask(0o027),
    )
    server.clients.append(client)
    client.stdin.write(LONG)
    client.stdin.close()
    client.stdin = None  # for communicate()
    assert client.stdout.readline() == "started\n"
    busy = [
        p for p in psutil.Process(pid).children() if any(c.name() == "nsjail" for c in p.children())
    ]
    assert len(busy) == 1  # the waiting one has no jail while a command runs
    # it runs as the client: its folder and umask
    assert busy[0].cwd() == str(server.work)
    with open(f"/proc/{busy[0].pid}/status") as status:
        assert "Umask:\t0027\n" in status.read()
    jail = busy[0].children(recursive=True)
    assert jail
    if sig is None:
        busy[0].kill()
    else:
        client.send_signal(sig)
    return client, [busy[0], *jail]


def _alive(procs) -> list | None:
    """PROCS when exactly one of them is alive (not a zombie), else None."""
    alive = [p for p in procs if not _ended([p])]
    return alive if len(alive) == 1 else None


def _ended(procs) -> bool:
    for proc in procs:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def test_a_client_killed_mid_run_leaves_no_jail_behind(server):
    client, procs = _running(server, signal.SIGKILL)
    client.wait(PATIENCE_S)
    server.wait_for(lambda: _ended(procs))
    assert server.run("run", "-", stdin="2").stdout == "2\n"  # the server serves on


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_client_ends_the_command_and_its_jail_first(server, sig):
    client, procs = _running(server, sig)
    assert client.wait(PATIENCE_S) == -sig  # ended by the signal, as in its own process
    assert _ended(procs[1:])  # the command's process killed its jails before it answered
    server.wait_for(lambda: _ended(procs))


def test_ctrl_c_interrupts_the_command_as_in_its_own_process(server):
    client, procs = _running(server, signal.SIGINT)
    _, err = client.communicate(timeout=PATIENCE_S)
    assert client.returncode == 130 and "interrupted" in err
    assert _ended(procs[1:])  # its jails ended before it answered
    server.wait_for(lambda: _ended(procs))


def test_a_server_lost_mid_run_is_an_error_not_a_second_run(server):
    client, procs = _running(server, None)
    _, err = client.communicate(timeout=PATIENCE_S)
    assert client.returncode == 1
    assert "the server ended before the command did" in err
    server.wait_for(lambda: _ended(procs))


def test_a_stale_server_declines_and_the_command_runs_here_once(server):
    """An edited file of the server's code (its time changed), or another import path: the
    server declines before anything runs, ends, and the command runs in its own process."""
    first = server.start()
    (server.work / "count.txt").write_text("0")
    program = 'write_file("count.txt", str(int(read_file("count.txt")) + 1))\n"done"\n'
    edited = os.path.join(os.path.dirname(place.__file__), "wire.py")
    info = os.stat(edited)
    os.utime(edited, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    try:
        done = server.run("run", "-", "--kit", "files", stdin=program)
        assert (done.returncode, done.stdout) == (0, '"done"\n'), done.stderr
        assert (server.work / "count.txt").read_text() == "1"
        server.wait_for(lambda: not psutil.pid_exists(first) or _ended([psutil.Process(first)]))
    finally:
        os.utime(edited, ns=(info.st_atime_ns, info.st_mtime_ns))
    server.stop()
    second = server.start()
    done = server.run("run", "-", "--kit", "files", stdin=program, env={"PYTHONPATH": "/nowhere"})
    assert (done.returncode, done.stdout) == (0, '"done"\n'), done.stderr
    assert (server.work / "count.txt").read_text() == "2"
    server.wait_for(lambda: not psutil.pid_exists(second) or _ended([psutil.Process(second)]))


def test_the_server_ends_when_idle(server):
    """Started in the foreground with one second of patience, it serves, then ends by itself:
    exit 0, its socket gone, no process of it (nor of its waiting jail) left."""
    proc = subprocess.Popen(
        [CONSOLE, "server", "serve"],
        env={**server.env, "LACKJAIL_SERVER_IDLE_S": "1"},
        cwd="/",
    )
    try:
        assert proc.wait(PATIENCE_S) == 0
    finally:
        proc.kill()
    assert (server.folder / place.LOCK).exists()  # it did take the folder
    assert not (server.folder / place.SOCKET).exists()
    server.wait_for(server.gone)


def test_server_stop_ends_it_and_status_says_so(server):
    server.start()
    assert server.run("server", "stop").stdout == "stopped the server\n"
    server.wait_for(server.gone)
    assert server.status() is None


def test_the_off_switch_starts_no_server(server):
    for _ in range(2):
        done = server.run("run", "-", stdin="3", env={"LACKJAIL_SERVER": "0"})
        assert done.stdout == "3\n"
        assert not server.processes()  # it would have been started before the command exited
    (server.work.parent / "config" / "lackjail").mkdir(parents=True)
    (server.work.parent / "config" / "lackjail" / "config.toml").write_text(
        "[server]\nenabled = false\n"
    )
    assert server.run("run", "-", stdin="4").stdout == "4\n"
    assert not server.processes()


def test_the_user_config_turns_a_running_server_off(server):
    server.start()
    config = server.work.parent / "config" / "lackjail"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("[server]\nenabled = false\n")
    assert server.run("run", "-", stdin="5").stdout == "5\n"
    server.wait_for(server.gone)
    assert server.run("run", "-", stdin="6").stdout == "6\n"
    assert not server.processes()


def _connect(server) -> socket.socket:
    folder = os.open(server.folder, os.O_PATH | os.O_DIRECTORY)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(place.named(folder, place.SOCKET))
    finally:
        os.close(folder)
    sock.settimeout(PATIENCE_S)
    return sock


def _send(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    rights = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)] if fds else [])


def _rest(sock: socket.socket) -> bytes:
    """All the server sends until it hangs up."""
    answer = b""
    try:
        while chunk := sock.recv(4096):
            answer += chunk
    except ConnectionResetError:  # it hung up with what we sent unread
        pass
    return answer


# a peer that speaks to the socket itself (argv: the socket, a request in hex) and prints what
# it was answered before the server hung up
PEER_PROBE = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "s.connect(sys.argv[1])\n"
    "s.sendall(bytes.fromhex(sys.argv[2]))\n"
    "s.settimeout(60)\n"
    "try:\n"
    "    print(repr(s.recv(100)))\n"
    "except ConnectionResetError:\n"
    "    print(repr(b''))\n"
)


def _raw_request(server, data: bytes, fds: list[int]) -> bytes:
    """Send DATA (with FDS) to the server as this user; all it answers before it hangs up."""
    with _connect(server) as sock:
        _send(sock, data, fds)
        sock.shutdown(socket.SHUT_WR)
        return _rest(sock)


def _run_request(server, argv: list[str]) -> bytes:
    """A RUN request with the identity of the console command (its import path starts with
    its own folder, as the server's does)."""
    code = (
        f"import sys; sys.path[0] = {os.path.dirname(CONSOLE)!r}\n"
        "from lackjail.server import place; print(place.identity().encode().hex())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=server.env, check=True
    )
    identity = bytes.fromhex(done.stdout.strip()).decode()
    fields = wire.run_fields(identity, 0o22, ["utf-8\x00strict\x00000"] * 3, argv, {})
    return wire.request(wire.RUN, fields)


def test_bad_requests_are_dropped_unread_and_the_server_serves_on(server):
    """Not a request, cut short, too large, a field past its end, descriptors sent with the
    request: the server hangs up with nothing answered. A COMMIT whose descriptors are not a
    run's (one short, one too many, a folder as stdin, no folder as the working folder), or a
    client that says anything but COMMIT: nothing runs."""
    server.start()
    cwd = os.open(server.work, os.O_PATH | os.O_DIRECTORY)
    try:
        good = _run_request(server, ["lackjail", "run", "-"])
        bad = [
            (b"GET / HTTP/1.1\r\n\r\n", []),
            (good[:20], []),
            (wire.MAGIC + wire.RUN + (wire.MAX_BODY + 1).to_bytes(4, "big"), []),
            (good[:-3] + b"\xff\xff\xff", []),
            (good, [0, 1, 2, cwd]),
        ]
        for data, fds in bad:
            assert _raw_request(server, data, fds) == b"", data[:40]
        commits = [
            (wire.message(wire.COMMIT), [0, 1, 2]),
            (wire.message(wire.COMMIT), [0, 1, 2, cwd, cwd]),
            (wire.message(wire.COMMIT), [cwd, 1, 2, cwd]),
            (wire.message(wire.COMMIT), [0, 1, 2, 1]),
            (wire.message(wire.SIGNAL, 2), [0, 1, 2, cwd]),
        ]
        for message, fds in commits:
            with _connect(server) as sock:
                _send(sock, good, [])
                assert _rest_of(sock, wire.MESSAGE) == wire.message(wire.RUNNING)
                _send(sock, message, fds)
                assert _rest(sock) == b"", (message, fds)  # no exit code: nothing ran
    finally:
        os.close(cwd)
    assert server.status()[1] == 0  # none of them ran
    assert server.run("run", "-", stdin="7").stdout == "7\n"


def _rest_of(sock: socket.socket, size: int) -> bytes:
    return sock.recv(size, socket.MSG_WAITALL)


def test_another_user_is_refused_before_anything_is_read(server, tmp_path):
    """A peer of another uid that reached the socket (here: a hard link to it made open to all)
    is hung up on with nothing read or run; the server serves its own user on."""
    user = others.ordinary_user()
    if user is None:
        pytest.skip("needs root to act as a second user")
    server.start()
    public = tmp_path.parent / f"{tmp_path.name}-public"  # on the same file system
    public.mkdir(mode=0o755)
    for above in public.parents:  # reachable for the other user (pytest's folders are 0700)
        if above.stat().st_mode & 0o005 != 0o005 and str(above).startswith("/tmp/"):
            above.chmod(above.stat().st_mode | 0o005)
    os.link(server.folder / place.SOCKET, public / "sock")
    os.chmod(public / "sock", 0o777)
    code = PEER_PROBE
    request = wire.request(wire.PING, []).hex()
    done = subprocess.run(
        ["runuser", "-u", user.pw_name, "--", "/usr/bin/python3", "-c", code,
         str(public / "sock"), request],
        capture_output=True, text=True, timeout=PATIENCE_S,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "b''\n"), done.stderr
    assert server.status()[1] == 0


def test_a_server_of_another_user_is_refused_and_the_command_runs_here(tmp_path, require_nsjail):
    """A socket in our folder that a process of another uid listens on: the client sends it
    nothing and runs the command in its own process."""
    user = others.ordinary_user()
    if user is None:
        pytest.skip("needs root to act as a second user")
    s = Server(tmp_path)
    folder = place_folder(s)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / place.SOCKET))
    code = (
        "import socket, sys\n"
        "s = socket.socket(fileno=int(sys.argv[1]))\n"
        "s.listen()\n"
        "print('ready', flush=True)\n"
        "c, _ = s.accept()\n"
        "c.settimeout(60)\n"
        "print(repr(c.recv(100)), flush=True)\n"
    )
    other = subprocess.Popen(
        ["runuser", "-u", user.pw_name, "--", "/usr/bin/python3", "-c", code,
         str(listener.fileno())],
        stdout=subprocess.PIPE, text=True, pass_fds=(listener.fileno(),),
    )  # fmt: skip
    try:
        assert other.stdout.readline() == "ready\n"
        done = s.run("run", "-", stdin="8", env={"LACKJAIL_SERVER_IDLE_S": "1"})
        assert (done.returncode, done.stdout) == (0, "8\n")
        assert other.stdout.readline() == "b''\n"  # it was sent nothing
    finally:
        other.kill()
        other.wait()
        listener.close()
        s.stop()


def place_folder(s: Server):
    folder = s.folder
    folder.mkdir(mode=0o700)
    return folder


def test_the_folder_must_be_ours_alone_and_no_symlink(tmp_path, monkeypatch):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    folder = place.open_folder(create=True)
    assert folder is not None
    os.close(folder)
    (runtime / "lackjail").chmod(0o755)  # others may enter: not ours alone
    assert place.open_folder() is None
    (runtime / "lackjail").rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (runtime / "lackjail").symlink_to(tmp_path / "elsewhere")  # a symlink: never followed
    assert place.open_folder() is None and place.open_folder(create=True) is None
    runtime.chmod(0o755)  # a runtime folder not ours alone: the cache folder instead
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert place.folder_path() == str(tmp_path / "cache" / "lackjail" / "server")


def test_a_server_that_does_not_answer_in_time_never_runs_the_command(server):
    """The process that would take the command is stopped: the command waits READY_S, then
    runs in its own process; resumed, that process finds no COMMIT and runs nothing."""
    from lackjail.server import client

    pid = server.start()
    (waiting,) = server.wait_for(lambda: _alive(psutil.Process(pid).children()) or None)
    (server.work / "count.txt").write_text("0")
    program = 'write_file("count.txt", str(int(read_file("count.txt")) + 1))\n"done"\n'
    waiting.suspend()
    try:
        began = time.monotonic()
        done = server.run("run", "-", "--kit", "files", stdin=program)
        assert (done.returncode, done.stdout) == (0, '"done"\n'), done.stderr
        assert time.monotonic() - began >= client.READY_S
    finally:
        waiting.resume()
    server.wait_for(lambda: _ended([waiting]))
    assert (server.work / "count.txt").read_text() == "1"


def test_no_server_starts_where_the_folder_is_not_ours_alone(server):
    """A server folder that others may enter: the command runs in its own process and starts
    no server that would only give up."""
    server.folder.mkdir(mode=0o755)
    server.folder.chmod(0o755)
    for _ in range(2):
        assert server.run("run", "-", stdin="9").stdout == "9\n"
        assert not server.processes()
    assert not (server.folder / place.SOCKET).exists()


def _on_a_terminal(server, args: list[str], answer: bytes, env=None) -> tuple[int, bytes]:
    """Run the command with a terminal as its stdin and stderr (a pty), ANSWER typed ahead."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [CONSOLE, *args],
        stdin=slave,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env={**server.env, **(env or {})},
        cwd=server.work,
    )
    os.close(slave)
    os.write(master, answer)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal's last holder is gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.wait(PATIENCE_S), shown


def test_approval_asks_on_the_clients_terminal_as_in_its_own_process(server):
    """A tool call that needs approval asks on the client's terminal (its stdin is one, passed
    as a descriptor); without a terminal it is denied; the same as in its own process."""
    server.start()
    before = server.status()[1]
    (server.work / "ask.toml").write_text('name = "ask"\n[tools]\napproval = ["write_file"]\n')
    (server.work / "prog.lackpy").write_text('write_file("asked.txt", "x")\n"ok"\n')
    args = ["run", "prog.lackpy", "--kit", "files", "--policy", "ask.toml"]
    outcomes = []
    for env in ({}, {"LACKJAIL_SERVER": "0"}):
        code, shown = _on_a_terminal(server, args, b"y\n", env)
        assert code == 0 and b"allow write_file" in shown, shown
        assert (server.work / "asked.txt").read_text() == "x"
        (server.work / "asked.txt").unlink()
        piped = server.run(*args, env=env)  # stdin a pipe: no terminal to ask
        assert piped.returncode == 1 and "no terminal to ask" in piped.stderr + piped.stdout
        outcomes.append((code, piped.returncode))
    assert outcomes[0] == outcomes[1]
    assert server.status()[1] == before + 2
