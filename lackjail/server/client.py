"""The thin `lackjail run`: hands the command to the user's server, which has lackjail imported
and a jail started, and exits as the command did there.

It sends its arguments, environment, umask and the text settings of its streams, then (once
the server is ready) its stdin, stdout, stderr and working folder as descriptors, so the
command reads, writes and resolves paths exactly as it would in this process; it forwards
SIGINT, SIGTERM and SIGHUP while the command runs. A server of another uid, or with other
rights than this process (`place.context`: capabilities, seccomp, namespaces, cgroups,
rlimits), is refused. Nothing is run twice: the server runs the command only once this
process has said COMMIT, after the server said it is ready to; before that (a decline, no
answer within READY_S, a signal) `hand_over` returns and the caller runs the command itself;
after it the server's outcome is this command's, a lost server an error.

Imports: the standard library's C modules and `os`, nothing that costs start-up time.
"""

import _signal
import _socket
import os
import sys

from lackjail.server import place, wire

FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
EXIT_FAILED = 1
READY_S = 10.0  # how long a server may take to say it runs the command before we run it here
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
    forwarder = Forwarder(sock)
    try:
        sock.settimeout(READY_S)
        sock.sendall(data)
        kind, number = wire.parse_message(_receive(sock))
        sock.settimeout(None)
    except OSError:  # no answer in time, or none at all: nothing runs there without COMMIT
        kind, number = b"", 0
    try:
        if kind == wire.RUNNING and forwarder.commit((0, 1, 2, cwd)):
            _follow(sock)
    finally:
        os.close(cwd)
    sock.close()
    forwarder.restore()
    if forwarder.caught:  # a signal came before the command was handed over: end as it asks
        _end_by(forwarder.caught[0], "interrupted\n")
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


class Forwarder:
    """The signals of FORWARDED this process is sent, from now on: kept while the command is
    not handed over, sent to the server once it is (`commit`)."""

    def __init__(self, sock: _socket.socket):
        self.sock, self.caught, self.committed = sock, [], False
        for signum in FORWARDED:
            _signal.signal(signum, self._forward)

    def _forward(self, signum, frame) -> None:
        self.caught.append(signum)
        if self.committed:
            try:
                self.sock.sendall(wire.message(wire.SIGNAL, signum))
            except OSError:
                pass

    def commit(self, fds: tuple) -> bool:
        """Hand the command over (COMMIT, with FDS: stdin, stdout, stderr, the working folder)
        unless a signal came first; True when handed over. Signals are held meanwhile, so none
        is sent before COMMIT."""
        rights = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        _signal.pthread_sigmask(_signal.SIG_BLOCK, FORWARDED)
        try:
            if self.caught:
                return False
            message = wire.message(wire.COMMIT)
            ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)]
            if self.sock.sendmsg([message], ancillary) != len(message):
                return False  # 5 bytes into an empty socket: whole, or the server is gone
            self.committed = True
            return True
        except OSError:
            return False
        finally:
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, FORWARDED)

    def restore(self) -> None:
        for signum in FORWARDED:
            default = _signal.default_int_handler if signum == _signal.SIGINT else _signal.SIG_DFL
            _signal.signal(signum, default)


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
