"""What the zygote does before its first fork: the codecs it loads (and the clear
error for the others), the heap it hands its children (immortal, so shared), and the
order of its start: the first child is forked before that heap work, the others after."""

import ast
import py_compile
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import psutil
import pytest

from lackjail.api import Jail
from lackjail.worker import textcodecs

ROOT = str(Path(__file__).resolve().parents[2])

HEAP = """
import gc, sys
sys.path.insert(0, ROOT)
from lackjail.worker import zygote
def old(): return 1.5 * 2
TEXT = "".join(["not ", "interned"])
marked = zygote.immortalize_heap()
young = [object() for _ in range(3)]
assert marked > 1000, marked
assert sys.getrefcount(old) == 0xFFFFFFFF, sys.getrefcount(old)
assert sys.getrefcount(zygote.Zygote) == 0xFFFFFFFF
assert sys.getrefcount(old.__code__) == 0xFFFFFFFF  # untracked, reached from a function
assert sys.getrefcount(TEXT) == 0xFFFFFFFF  # untracked, a module global
assert sys.getrefcount(young) < 10 and sys.getrefcount(young[0]) < 10
refs = [old] * 1000  # increments on an immortal object store nothing
del refs
assert sys.getrefcount(old) == 0xFFFFFFFF and old() == 3.0
gc.collect()
print("ok")
""".replace("ROOT", repr(ROOT))


def _fresh(code: str) -> list:
    """What CODE prints, one Python literal a line, run by a fresh `-I -S -B` interpreter
    that finds this checkout's package and msgpack (as the jail's does)."""
    path = [ROOT, str(Path(msgpack.__file__).parents[1])]
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", f"import sys; sys.path[:0] = {path!r}\n" + code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [ast.literal_eval(line) for line in proc.stdout.splitlines()]


# what the jail's start no longer imports: ast.py and re bring enum, functools, contextlib
NOT_AT_START = (
    "ast",
    "re",
    "enum",
    "functools",
    "contextlib",
    "importlib",
    "stringprep",
    "ctypes",
    "types",
    # extension modules: five mappings each, which every fresh child's fork and exit copy
    # and tear down again (~3 us a mapping)
    "math",
    "fcntl",
)


def test_the_zygote_starts_without_ast_re_or_enum():
    """Every module here costs every jail's start; re, enum and functools alone ~5 ms,
    ctypes ~1.2 ms (the worker's C calls take what they need from _ctypes), types ~0.3 ms."""
    (loaded,) = _fresh(
        "from lackjail.worker import textcodecs, zygote\n"
        "textcodecs.preload()\n"
        f"print([m for m in {NOT_AT_START!r} if m in sys.modules])"
    )
    assert loaded == []


READ_AHEAD = """
from lackjail.worker import textcodecs, zygote
textcodecs.preload()
print([f"encodings.{n}" in sys.modules for n in ("idna", "cp1252", "shift_jis")])
zygote.no_lazy_imports()
zygote.no_file_opens()  # an open now raises PermissionError, as in a confined child
print([n for n in textcodecs.LOADED if "cafe".encode(n).decode(n) != "cafe"])
print(["b\u00fccher.example".encode("idna"), b"xn--bcher-kva.example".decode("idna")])
print([f"encodings.{n}" in sys.modules for n in ("idna", "cp1252", "shift_jis")])
"""


def test_codecs_are_read_at_start_and_run_on_first_use_without_opening_a_file():
    """The zygote reads the codecs' code (IDNA's with re and enum: ~6 ms of every start
    when run there); a child runs a codec's code when a program first uses it, with no
    file opened then (its filter would kill the openat)."""
    before, round_trips, idna, after = _fresh(READ_AHEAD)
    assert before == [False, False, False]
    assert round_trips == []
    assert idna == [b"xn--bcher-kva.example", "b\u00fccher.example"]
    assert after == [True, True, True]


def test_a_stale_bytecode_file_is_not_read_ahead(tmp_path):
    """Code is read from a module's bytecode file only when the import system would use it
    (its source unchanged); else it is compiled from the source, which wins."""
    (tmp_path / "mod.py").write_text("X = 1\n")
    py_compile.compile(str(tmp_path / "mod.py"), doraise=True)
    (tmp_path / "mod.py").write_text("X = 22\n")  # another size: the bytecode is stale
    (tmp_path / "fresh.py").write_text("X = 3\n")
    py_compile.compile(str(tmp_path / "fresh.py"), doraise=True)
    found = _fresh(
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from lackjail.worker.textcodecs import ReadAhead\n"
        "finder = ReadAhead(['mod', 'fresh'])\n"
        "print([type(finder.code[n]).__name__ for n in ('mod', 'fresh')])\n"
        "sys.meta_path.insert(0, finder)\n"
        "import mod, fresh\n"
        "print([mod.X, fresh.X, mod.__loader__ is finder, fresh.__file__.endswith('fresh.py')])"
    )
    assert found == [["code", "bytes"], [22, 3, True, True]]


def test_the_c_calls_work_as_through_ctypes():
    import ctypes
    import errno

    from lackjail.worker import confine, libc

    pr_get_no_new_privs = 39
    by_ctypes = ctypes.CDLL(None, use_errno=True).prctl(pr_get_no_new_privs, 0, 0, 0, 0)
    assert libc.prctl(pr_get_no_new_privs, 0, 0, 0, 0) == by_ctypes in (0, 1)
    assert libc.prctl(-1, 0, 0, 0, 0) == -1 and libc.get_errno() == errno.EINVAL
    bpf = bytes(range(16))
    buf, prog, ref = confine.prepare_filter(bpf)
    assert bytes(buf) == bpf and prog.len == 2 and prog.filter == libc.addressof(buf)
    assert ctypes.string_at(prog.filter, len(bpf)) == bpf
    number = 1234567
    assert libc.c_uint32.from_address(id(number)).value == sys.getrefcount(number) - 1


def test_the_zygote_reads_its_settings_without_evaluating_them():
    from lackjail.worker.zygote import read_config

    text = repr({"memory_mb": 256, "seccomp": True, "bpf": b"\x06\0\0\0", "spares": 2})
    assert read_config(text) == {
        "memory_mb": 256,
        "seccomp": True,
        "bpf": b"\x06\0\0\0",
        "spares": 2,
    }
    for bad in ("[1]", "{'a': len('x')}", "{**{}}", "__import__('os')", "{'a': -1}", "{'a': x}"):
        with pytest.raises(ValueError, match="dict literal of constants"):
            read_config(bad)


def test_the_zygote_heap_is_immortal_and_still_works():
    proc = subprocess.run(
        [sys.executable, "-I", "-B", "-c", HEAP], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


# zygote.main() in a plain process with the zygote's process work recorded instead of
# done: what it calls, in which order, and whether the heap is immortal at each step.
START = """
import gc, sys
sys.path.insert(0, ROOT)
from lackjail.worker import runner, zygote
calls = []
def immortal():
    return sys.getrefcount(zygote.child) == 0xFFFFFFFF
class Zygote:
    def __init__(self, cfg, flt):
        self.children = {}
    def fork(self):
        calls.append(("fork", immortal(), gc.get_freeze_count() > 0, "signal" in sys.modules))
        self.children[len(calls)] = (0, len(calls))
    def answer(self, timeout):
        calls.append(("answer", timeout <= zygote.FIRST_RUN_S))
        if WHEN == "ends":
            self.children.clear()  # the first child served its run and was reaped
        return WHEN != "stop"
    def serve(self):
        calls.append(("serve", immortal(), gc.get_freeze_count() > 0))
        print(repr(calls), flush=True)
warm_up = runner.warm_up
runner.warm_up = lambda cfg: calls.append(("warm_up",)) or warm_up(cfg)
zygote.Zygote = Zygote
zygote.FIRST_RUN_S = 0.05
sys.argv[1:] = [repr({"memory_mb": 512, "cpu_s": 5, "output_bytes": 1 << 20,
    "value_bytes": 1 << 20, "runs_per_child": 1, "spares": 2, "seccomp": False, "bpf": b""})]
zygote.main()
""".replace("ROOT", repr(ROOT))


def _start(when: str) -> list:
    proc = subprocess.run(
        [sys.executable, "-I", "-B", "-c", START.replace("WHEN", repr(when))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return eval(proc.stdout) if proc.stdout else []


def test_the_first_child_is_forked_before_the_heap_work_and_the_rest_after():
    calls = _start("ends")
    # the first child: a frozen heap (its collector leaves it alone), not yet immortal; and
    # no signal.py (its enums; the zygote and the runner use _signal)
    assert calls[0] == ("fork", False, True, False)
    # its run ends it; then the warm-ups and the immortal heap, then the spares
    assert calls[1:] == [("answer", True), *[("warm_up",)] * 3, ("serve", True, True)]


def test_a_first_child_left_unused_delays_the_heap_work_only_so_long():
    calls = _start("waits")  # answer() returns with the child still there, until the deadline
    assert calls[0] == ("fork", False, True, False) and calls[-1] == ("serve", True, True)
    assert {c for c in calls[1:-4]} == {("answer", True)} and calls[-4:-1] == [("warm_up",)] * 3


def test_a_stop_while_the_first_child_waits_ends_the_zygote_there():
    assert _start("stop") == []  # exit code 0 (asserted), and no heap work, no serve


@pytest.fixture(scope="module")
def jail(require_nsjail):
    with Jail(workers=1) as j:
        yield j


@pytest.mark.parametrize("name", ["gbk", "cp1250", "mac_roman", "CP437"])
def test_a_codec_not_loaded_says_which_are(jail, name):
    r = jail.run(f"'x'.encode({name!r})")
    assert r.status == "error", r
    message = r.errors[0]["message"]
    assert message.startswith("LookupError:") and "not available in the jail" in message
    assert all(codec in message for codec in textcodecs.LOADED)


@pytest.mark.parametrize("name", ["base64", "hex", "rot13", "zlib", "bz2_codec", "uu"])
def test_bytes_codecs_are_not_text_encodings(jail, name):
    r = jail.run(f"b'x'.decode({name!r})")
    assert r.status == "error" and "is not a text encoding" in r.errors[0]["message"], r


@pytest.mark.parametrize("name", textcodecs.LOADED)
def test_every_loaded_codec_round_trips(jail, name):
    text = "caf\u00e9" if name not in ("ascii", "idna", "koi8_r", "cp1251", "shift_jis") else "cafe"
    r = jail.run(f"t = {text!r}\nt.encode({name!r}).decode({name!r}) == t")
    assert r.status == "ok" and r.value is True, (name, r)


def _minflt(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[7])  # field 10, minflt


def test_the_first_child_is_confined_and_the_later_ones_share_the_readied_heap(require_nsjail):
    """The first child says `ready` before the zygote readies its heap, and is confined as
    any other; the spares forked after it copy fewer pages than it did (the warm-ups and
    the immortal reference counts spare them ~120 here)."""
    with Jail(workers=1) as jail:
        (zygote,) = psutil.Process(jail.pool.pids()[0]).children()
        first = min(zygote.children(), key=lambda p: p.pid)  # forked before any other
        with open(f"/proc/{first.pid}/status") as fh:
            status = dict(line.split(":", 1) for line in fh)
        with open(f"/proc/{zygote.pid}/status") as fh:
            filters = int(dict(line.split(":", 1) for line in fh)["Seccomp_filters"])
        assert status["NoNewPrivs"].strip() == "1"
        assert int(status["Seccomp_filters"]) == filters + 1  # nsjail's, and the child's own
        first_faults = _minflt(first.pid)
        deadline = time.monotonic() + 30
        while True:  # the spares the zygote forks after its heap work, each ready
            with jail.pool._cond:
                ready = sum(j.ready_count() for j in jail.pool._idle)
            later = [c for c in zygote.children() if c.pid != first.pid]
            if ready == jail.policy.pool.spares and len(later) == ready - 1:
                break
            assert time.monotonic() < deadline, "the spares never became ready"
            time.sleep(0.02)
        assert later and all(_minflt(c.pid) < first_faults - 50 for c in later), (
            first_faults,
            [_minflt(c.pid) for c in later],
        )
        assert jail.run("x = len([1, 2, 3])\nx").value == 3


FILL = """
import os, sys
from lackjail.worker import zygote
junk = [bytes(100) for _ in range(5000)]  # 133 bytes each: the 144-byte class
del junk[::2]  # every other block free again: holes in pools that stay in use
before = zygote._free_blocks()
print(before.get(144, 0))
filled = zygote.fill_pools()
print(filled >= before[144] // 2 and filled == len(zygote._FILLED))
after = zygote._free_blocks()
# the holes are gone: the 144-byte class has free blocks only in a pool it started afresh
print(after.get(144, 0) <= (16384 - 48) // 144 < before[144])
os.write(2, b"the log is descriptor 2 again")
sys._debugmallocstats = lambda: os.write(2, b"statistics of another shape")
print(zygote.fill_pools(), len(zygote._FILLED) == filled)
def flood():  # more than the pipe holds: a write fails rather than waits for a reader
    try:
        while True:
            os.write(2, b"x" * 65536)
    except BlockingIOError:
        print("would block")
sys._debugmallocstats = flood
print(zygote.fill_pools())
"""


def test_the_heaps_holes_are_filled_and_the_log_keeps_its_descriptor():
    """fill_pools reads the allocator's statistics through a pipe it reads afterwards: the
    holes of a freed list are filled, descriptor 2 is the log again, and statistics it cannot
    read or that overflow the pipe fill nothing and never hang the zygote."""
    path = [ROOT, str(Path(msgpack.__file__).parents[1])]
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", f"import sys; sys.path[:0] = {path!r}\n" + FILL],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    holes, filled, none_left, unread, flooded, after_flood = proc.stdout.splitlines()
    assert int(holes) >= 2500 and filled == "True" and none_left == "True"
    assert unread == "0 True"  # statistics it cannot read: nothing filled, nothing broken
    assert (flooded, after_flood) == ("would block", "0")  # never waits on its own pipe
    # the statistics went through the pipe, never into the jail's log
    assert proc.stderr == "the log is descriptor 2 again"
