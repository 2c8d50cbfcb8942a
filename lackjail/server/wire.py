"""What the `lackjail run` client and the user's server say to each other over the server's
socket. Plain length-prefixed bytes (no pickle, no msgpack or json: the client imports neither),
decoded strictly with a size cap.

A request: MAGIC, its kind (RUN, STOP, PING), then the body's length (4 bytes) and the body: a
list of fields, each its length (4 bytes) and bytes; no descriptors. A RUN's fields: the
client's install `identity`, umask, the three streams' text settings, the argument count and
the arguments, then the environment's `NAME=value` entries.

Then the two send 5-byte messages (a letter, a signed 4-byte number). The server: RUNNING (it
is ready to run the command), DECLINED (it will not; the number says why), then EXITED (the
exit code) or KILLED (the signal that ended the command). The client: COMMIT after RUNNING,
with its stdin, stdout, stderr and working folder as descriptors (SCM_RIGHTS: none is in
flight before, so a server that never answers holds none of them), which hands the command
over (the server runs it only now, and from now on its outcome is the server's; a client that
hangs up instead has it run nowhere), then SIGNAL for each signal it is sent while the
command runs.
"""

MAGIC = b"LJS1"
RUN, STOP, PING = b"r", b"s", b"p"
RUNNING, DECLINED, EXITED, KILLED = b"R", b"D", b"X", b"K"  # from the server
COMMIT, SIGNAL = b"C", b"G"  # from the client
# why a request was declined
STALE, OFF, BAD = 1, 2, 3
MAX_BODY = 4 << 20  # argv and environment together; Linux's own limit is 2 MiB by default
MAX_FIELDS = 1 << 16
HEADER = len(MAGIC) + 1 + 4
MESSAGE = 5
FDS = 4  # stdin, stdout, stderr, the working folder


class BadRequest(ValueError):
    """A request that is not one this server reads; nothing of it is used."""


def message(kind: bytes, number: int = 0) -> bytes:
    return kind + number.to_bytes(4, "big", signed=True)


def parse_message(data: bytes) -> tuple[bytes, int]:
    return data[:1], int.from_bytes(data[1:MESSAGE], "big", signed=True)


def request(kind: bytes, fields: list[bytes]) -> bytes:
    body = b"".join(len(f).to_bytes(4, "big") + f for f in fields)
    return MAGIC + kind + len(body).to_bytes(4, "big") + body


def run_fields(
    identity: str, umask: int, streams: list[str], argv: list[str], environ: dict
) -> list[bytes]:
    """The fields of a RUN request (see the module's docstring)."""
    enc = [s.encode("utf-8", "surrogateescape") for s in streams]
    env = [k + b"=" + v for k, v in environ.items()]
    return [
        identity.encode("utf-8", "surrogateescape"),
        str(umask).encode(),
        *enc,
        str(len(argv)).encode(),
        *(a.encode("utf-8", "surrogateescape") for a in argv),
        *env,
    ]


def parse_header(header: bytes) -> tuple[bytes, int]:
    """(kind, body length) of a request's first HEADER bytes; BadRequest."""
    if len(header) != HEADER or header[:4] != MAGIC or header[4:5] not in (RUN, STOP, PING):
        raise BadRequest("not a lackjail request")
    size = int.from_bytes(header[5:], "big")
    if size > MAX_BODY:
        raise BadRequest(f"a request of {size} bytes (at most {MAX_BODY})")
    return header[4:5], size


def parse_fields(body: bytes) -> list[bytes]:
    """The fields of BODY, which must hold exactly them; BadRequest."""
    fields, at = [], 0
    while at < len(body):
        if len(fields) >= MAX_FIELDS or at + 4 > len(body):
            raise BadRequest("a request's fields are cut or too many")
        size = int.from_bytes(body[at : at + 4], "big")
        at += 4
        if at + size > len(body):
            raise BadRequest("a request's field runs past its end")
        fields.append(body[at : at + size])
        at += size
    return fields


class Run:
    """A RUN request's fields, checked: identity, umask, streams (three `encoding\\0errors\\0
    flags` texts), argv (list of str), environ (bytes -> bytes)."""

    __slots__ = ("identity", "umask", "streams", "argv", "environ")

    def __init__(self, fields: list[bytes]):
        if len(fields) < 6:
            raise BadRequest("a run request without its fields")
        self.identity = _text(fields[0])
        self.umask = _number(fields[1], 0o777)
        self.streams = [_text(f) for f in fields[2:5]]
        count = _number(fields[5], len(fields) - 6)
        self.argv = [_text(f) for f in fields[6 : 6 + count]]
        self.environ = {}
        for entry in fields[6 + count :]:
            name, eq, value = entry.partition(b"=")
            if not eq or not name or b"\0" in entry:
                raise BadRequest("an environment entry that is not NAME=value")
            self.environ[name] = value
        if any("\0" in a for a in self.argv):
            raise BadRequest("an argument holds a NUL byte")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _number(data: bytes, most: int) -> int:
    if not data.isdigit() or len(data) > 10 or int(data) > most:
        raise BadRequest("a number field out of range")
    return int(data)
