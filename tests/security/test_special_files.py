"""Device nodes and FIFOs in a workspace are looked at, never opened.

Opening a device acts (a watchdog starts its countdown, a tape rewinds, a
modem dials); opening a FIFO wakes its writer. A root-extracted archive can
hold device nodes, anyone can make a FIFO. The controller refused them after
an open for reading; it now decides from an O_PATH descriptor and opens only
regular files. inotify tells an open (IN_OPEN) from an O_PATH look (none).
"""

import ctypes
import os
import struct

import pytest
from host_support import session

from lackjail.gate.judge import ReadError, read_program

pytestmark = pytest.mark.usefixtures("private_state")
IN_OPEN = 0x20


class OpenWatch:
    """The names in FOLDER that something opened (inotify IN_OPEN), read without waiting."""

    def __init__(self, folder):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0
        assert self.libc.inotify_add_watch(self.fd, os.fsencode(folder), IN_OPEN) >= 0

    def opened(self) -> set[str]:
        names = set()
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return names
        while data:
            _, _, _, size = struct.unpack_from("iIII", data)
            names.add(data[16 : 16 + size].rstrip(b"\0").decode())
            data = data[16 + size :]
        return names

    def close(self):
        os.close(self.fd)


@pytest.fixture
def specials(tmp_path):
    """A workspace with a FIFO and (as root) a character device like /dev/null, watched."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "fifo")
    names = ["fifo"]
    if os.geteuid() == 0:
        os.mknod(ws / "device", 0o644 | 0o020000, os.makedev(1, 3))
        names.append("device")
    watch = OpenWatch(ws)
    yield ws, names, watch
    watch.close()


def test_tools_never_open_a_device_or_fifo(specials):
    ws, names, watch = specials
    s = session(ws, dry_run=True)
    for name in names:
        out = s.call("read_file", [name], {})
        assert not out.ok and "not a regular file" in out.error
        out = s.call("grep", ["x", name], {})
        assert out.ok and out.value == []
    (ws / "plain.txt").write_text("x\n")
    assert s.call("read_file", ["plain.txt"], {}).ok  # the watch sees real opens
    assert watch.opened() - {""} == {"plain.txt"}  # "": grep listed the workspace folder


def test_counting_a_template_outcome_never_opens_a_planted_lock(tmp_path):
    """Template counts were serialised by opening `.lackjail/templates/.lock` (O_CREAT, no
    O_EXCL): a FIFO or device planted under that name was opened. The folder itself is locked."""
    from lackjail.infer.templates import TemplateStore

    store = TemplateStore.at(tmp_path)
    store.create("t", "go {x}", "x = {x}\nx")
    os.mkfifo(store.directory / ".lock")
    watch = OpenWatch(store.directory)
    try:
        assert store.record("t", True) is True
        assert ".lock" not in watch.opened()
    finally:
        watch.close()
    assert store.load()[0][0].success_count == 1


def test_the_gate_never_opens_a_device_or_fifo(specials):
    ws, names, watch = specials
    for name in names:
        with pytest.raises(ReadError, match="not a regular file"):
            read_program(str(ws / name), 1000, str(ws))
    assert watch.opened() == set()
