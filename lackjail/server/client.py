"""The thin `lackjail run`: hands the command to the user's server, which has lackjail imported
and a jail started, and exits as the command did there.

It sends its arguments, environment, umask, the text settings of its streams, and its stdin,
stdout, stderr and working folder as descriptors, so the command reads, writes and resolves
paths exactly as it would in this process; it forwards SIGINT, SIGTERM and SIGHUP while the
command runs. A server of another uid, or with other rights than this process (`place.context`:
capabilities, seccomp, namespaces, cgroups, rlimits), is refused. Nothing is run twice:
`hand_over` returns (the caller then runs the command itself) only when the server never took
the command; once the server said it runs it, its outcome is this command's, a lost server an
error.

Imports: the standard library's C modules and `os`, nothing that costs start-up time.
"""

import _signal
import _socket
import os
import sys

from lackjail.server import place, wire

FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
EXIT_FAILED = 1
# `hand_over`'s answers when it did not hand the command over
NONE, DECLINED, OFF = "none", "declined", "off"


def enabled() -> bool:
    """False when LACKJAIL_SERVER turns the server off (0, no, off, false)."""
    return os.environ.get("LACKJAIL_SERVER", "").strip().lower() not in ("0", "no", "off", "false")


def connect() -> _socket.socket | None:
    """A connection to this user's server, checked to be of our uid; None when there is none."""
    folder = place.open_folder()
    if folder is None:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        sock.connect(place.named(folder, place.SOCKET))
        if peer_uid(sock) != os.geteuid():
            raise OSError("the server is another user's")
        if place.peer_context(sock) != place.context():
            raise OSError("the server has other rights than this process")
    except OSError:
        sock.close()
        return None
    finally:
        os.close(folder)
    return sock


def peer_uid(sock: _socket.socket) -> int:
    """The uid of the process at the other end of SOCK (SO_PEERCRED: pid, uid, gid)."""
    cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(cred[4:8], sys.byteorder)


def stream_settings(stream) -> str:
    """How this interpreter set up STREAM: encoding, errors, line buffering, write-through and
    an unbuffered binary layer (-u), for the server to set the descriptor up alike."""
    flags = f"{int(stream.line_buffering)}{int(stream.write_through)}"
    raw = int(type(stream.buffer).__name__ == "FileIO")
    return f"{stream.encoding}\0{stream.errors}\0{flags}{raw}"


def hand_over(args: list[str]) -> str:
    """Run the command ARGS in the user's server and exit as it did; when no server took it,
    return why: NONE (no server answered), DECLINED (one answered but serves another install,
    and is ending), OFF (the user's config turns the server off)."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    if any(s is None or s.fileno() != i for i, s in enumerate(streams)):
        return NONE  # a closed stdin or the like: only the command's own process has it right
    try:
        cwd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return NONE  # a folder gone: the command's own process says so
    sock = connect()
    if sock is None:
        os.close(cwd)
        return NONE
    umask = os.umask(0)
    os.umask(umask)
    fields = wire.run_fields(
        place.identity(),
        umask,
        [stream_settings(s) for s in streams],
        [sys.argv[0], *args],
        dict(os.environb),
    )
    data = wire.request(wire.RUN, fields)
    rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2, cwd))
    caught = _forward_signals(sock)  # the server reads them once it runs the command
    try:
        sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        sock.sendall(data[sent:])
        kind, number = wire.parse_message(_receive(sock))
    except OSError:
        kind, number = b"", 0
    finally:
        os.close(cwd)
    if kind == wire.RUNNING:
        _follow(sock)
    sock.close()
    for signum in FORWARDED:
        _signal.signal(signum, _signal.default_int_handler if signum == _signal.SIGINT else 0)
    if caught:  # a signal came while the server had not taken the command: end as it asked
        _end_by(caught[0], "interrupted\n")
    return OFF if (kind, number) == (wire.DECLINED, wire.OFF) else DECLINED if kind else NONE


def _receive(sock: _socket.socket) -> bytes:
    """One whole message (OSError when the server hung up before it)."""
    data = b""
    while len(data) < wire.MESSAGE:
        chunk = sock.recv(wire.MESSAGE - len(data))
        if not chunk:
            raise OSError("the server hung up")
        data += chunk
    return data


def _forward_signals(sock: _socket.socket) -> list[int]:
    """Send the server every signal of FORWARDED this process is sent from now on; the list
    returned collects them."""
    caught = []

    def forward(signum, frame):
        caught.append(signum)
        try:
            sock.sendall(wire.message(wire.SIGNAL, signum))
        except OSError:
            pass

    for signum in FORWARDED:
        _signal.signal(signum, forward)
    return caught


def _end_by(signum: int, note: str = ""):
    """End as a process that SIGNUM ended does (SIGINT: as the command's Ctrl-C does)."""
    if signum == _signal.SIGINT:
        os.write(2, note.encode())
        os._exit(130)
    _signal.signal(signum, _signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)


def _follow(sock: _socket.socket):
    """Wait until the server says how the command ended, then end alike."""
    try:
        kind, number = wire.parse_message(_receive(sock))
    except OSError:
        kind, number = b"", 0
    if kind == wire.EXITED and 0 <= number <= 255:
        os._exit(number)
    if kind == wire.KILLED and number in FORWARDED:
        _end_by(number)
    os.write(
        2,
        b"lackjail: the server ended before the command did; the program may have run in part "
        b"(LACKJAIL_SERVER=0 runs commands without a server)\n",
    )
    os._exit(EXIT_FAILED)


def ask(kind: bytes) -> list[int] | None:
    """Send the server a STOP or PING; the numbers it answers (STOP: [0]; PING: [its pid, the
    commands it has run]), None when no server answers."""
    sock = connect()
    if sock is None:
        return None
    try:
        sock.sendall(wire.request(kind, []))
        answers = [wire.parse_message(_receive(sock)) for _ in range(2 if kind == wire.PING else 1)]
    except OSError:
        return None
    finally:
        sock.close()
    return [number for answer, number in answers if answer == wire.EXITED] or None
