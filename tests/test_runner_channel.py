"""The child's end of its run channel (`runner.Channel`): whole frames however the bytes
arrive, end of file and bad frames reported, never a frame mixed up with the next; and the
output it sends (`runner.Output`) is never lost on the way."""

import os
import threading

import pytest

from lackjail import protocol
from lackjail.worker import runner
from lackjail.worker.runner import Channel


@pytest.fixture
def channel():
    """A Channel on a pipe (non-blocking, as the child's is) and the pipe's write end."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    yield Channel(read_end, os.open(os.devnull, os.O_WRONLY)), write_end
    for fd in (read_end, write_end):
        try:
            os.close(fd)
        except OSError:
            pass


def _run(run_id: str) -> bytes:
    return protocol.encode(protocol.make_run(run_id, "x = 1\nx", {"a": [1, 2]}, [], {}, "lackpy"))


def test_a_frame_written_in_pieces_is_read_whole(channel):
    chan, w = channel
    data = _run("7")
    pieces = [data[:2], data[2:5], data[5:-1], data[-1:]]

    def write():  # each piece after the reader has had the chance to see the one before
        for piece in pieces:
            os.write(w, piece)

    writer = threading.Thread(target=write)
    writer.start()
    frame = chan.recv(("run",))
    writer.join()
    assert frame["id"] == "7" and frame["params"] == {"a": [1, 2]}


@pytest.mark.parametrize("spin", [False, True])
def test_frames_that_arrive_together_come_out_one_at_a_time_in_order(channel, spin):
    chan, w = channel
    reply = protocol.encode(protocol.make_return(1, True, "v", None, None))
    os.write(w, _run("1") + reply + _run("2")[:3])
    assert chan.recv(("run",), spin=spin)["id"] == "1"
    assert chan.recv(("return",), spin=spin)["value"] == "v"
    os.write(w, _run("2")[3:])
    assert chan.recv(("run",), spin=spin)["id"] == "2"


def test_end_of_file_between_frames_and_inside_one(channel):
    chan, w = channel
    os.write(w, _run("1") + _run("2")[:6])
    os.close(w)
    assert chan.recv(("run",))["id"] == "1"
    with pytest.raises(EOFError, match="mid-frame"):
        chan.recv(("run",))


def test_end_of_file_with_nothing_pending(channel):
    chan, w = channel
    os.close(w)
    with pytest.raises(EOFError, match="^channel closed$"):
        chan.recv(("run",))


@pytest.mark.parametrize(
    "data,text",
    [
        (b"\0\0\0\0", "outside"),  # a zero length
        (b"\xff\xff\xff\xff", "outside"),  # beyond the frame cap
        # more items than the frame holds (the child does not scan what the controller wrote:
        # msgpack finds the frame cut short)
        (b"\0\0\0\x03\x93\x01\x02", "incomplete input"),
        (protocol.encode(protocol.make_ready(1)), "unexpected"),  # not a frame the child takes
    ],
)
def test_bad_frames_are_protocol_errors(channel, data, text):
    chan, w = channel
    os.write(w, data + b"\0" * 8)
    with pytest.raises(protocol.ProtocolError, match=text):
        chan.recv(("run",))


class _DeepChannel:
    """A channel whose first sends fail as they would deep in a program's recursion."""

    def __init__(self, failures):
        self.failures, self.sent = failures, []

    def send(self, msg):
        if self.failures:
            self.failures -= 1
            raise RecursionError("maximum recursion depth exceeded")
        self.sent.append(msg["text"])


def test_output_that_could_not_be_sent_goes_with_the_next_batch():
    channel = _DeepChannel(failures=3)
    out = runner.Output(channel, 1000)
    assert out.write("a\n") == 2  # due at once (nothing was sent yet): its send fails
    assert out.write("b\n") == 2 and channel.sent == []  # still due: fails again
    with pytest.raises(RecursionError):  # a tool call's flush: the program's own depth
        out.flush()
    out.flush()
    assert channel.sent == ["a\nb\n"] and out.parts == [] and out.pending == 0
    with pytest.raises(TypeError, match=r"^write\(\) argument must be str, not int$"):
        out.write(1)
