"""A stand-in shard for the tests of the Jail's side: it speaks the shards' wire and runs no
jail. With FAKE_SHARD=refuse it cannot start; else it answers each run with the program's
text as its value, and the program `malformed` with a frame the wire refuses."""

import os
import socket
import sys

sys.path.insert(0, sys.argv[2])

from lackjail.shards import wire  # noqa: E402

BEHAVIOUR = os.environ.get("FAKE_SHARD", "")


def main():
    sock = socket.socket(fileno=int(sys.argv[1]))
    reader = sock.makefile("rb")
    wire.read(reader, frozenset({"open"}))
    if BEHAVIOUR == "refuse":
        message = "policy 'default' requires nsjail isolation, which this host cannot provide"
        sock.sendall(wire.encode({"t": "failed", "kind": "IsolationError", "message": message}))
        return
    sock.sendall(wire.encode({"t": "opened", "isolation": "nsjail", "mode": "fresh"}))
    while True:
        try:
            frame = wire.read(reader, wire.TO_SHARD)
        except EOFError:
            return
        if frame["t"] != "run":
            continue
        if frame["src"] == "malformed":  # an ext type: refused before anything is built
            sock.sendall(b"\x00\x00\x00\x03\xd4\x01\x00")
        else:  # echo: the program's text as its value
            done = {"t": "done", "id": frame["id"], "status": "ok", "value": frame["src"]}
            done.update(output="", errors=[], cpu_ms=0.0, max_rss_kb=0)
            sock.sendall(wire.encode(done))


main()
