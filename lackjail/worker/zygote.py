"""The zygote: a jail's first process. It never runs untrusted code.

Glossary (the same words everywhere in lackjail):
  jail    one sandbox: a zygote and its children, as the controller sees it
          (`lackjail.pool.jail_process.JailProcess`); `lackjail.Jail` is the
          library's entry point, holding a policy, a kit and a pool of jails;
  pool    the N jails of one policy, kept by one supervisor thread;
  zygote  this process: it forks children, never runs a program;
  child   a forked, confined process that runs programs (one run, or several
          in reuse mode), then exits;
  worker  the code that runs inside a jail (this package), nothing else.

The zygote keeps SPARES children forked ahead. Each child gets a run channel
of its own (two fresh pipes), whose controller ends travel to the controller
with the `spawned` frame (SCM_RIGHTS); the zygote keeps no end, so nothing a
child writes can reach another child's run, and the controller sees end of
file when the child is gone. When a child ends the zygote reports how
(`done`, sent with the next child's `spawned`: one message, one read for the
controller) and forks the next. On the control channel it answers `ping`, kills
a child on `cancel`, loads the python level's facade modules on `load` (the
children forked before are retired: each `spawned` says how many loads its
child's modules reflect), and exits on `stop` or end of file.

Descriptors: 0 and 1 the control socket, 2 the jail's log. A child keeps
only 3 and 4, its run channel; it closes the rest before any program runs.
"""

import _ast  # the node classes: ast.py would bring re, enum and contextlib
import _frozen_importlib_external  # importlib.machinery would bring importlib and warnings
import _signal as signal  # signal.py would add its enums: only its constants are used here
import _socket  # socket.py would add selectors, array and enum's extras to every child
import gc
import os
import resource
import select
import struct
import sys
import time

from lackjail import lang, protocol  # noqa: F401 - imported before the filter goes on
from lackjail.worker import (  # noqa: F401 - jail tools
    confine,
    facades,
    libc,
    puretools,
    runner,
    textcodecs,
)

WARM_UPS = 3  # runs of our own warm-up program in the zygote (share_heap)
FIRST_RUN_S = 0.1  # how long share_heap waits for the first child to serve its run

CTRL = 0
RUN_IN, RUN_OUT = 3, 4  # a child's run channel


def child(cfg, flt, gen, run_in, run_out):
    """Confine this freshly forked process, then serve runs; never returns.

    A failure before the program's turn exits with code 70, saying why on stderr
    (the jail's log) where it still can; untrusted code never runs unconfined.
    """
    try:
        # through two numbers above both ends, so that neither is closed under the other
        top = max(run_in, run_out) + 1
        os.dup2(run_in, top)
        os.dup2(run_out, top + 1)
        os.dup2(top, RUN_IN)
        os.dup2(top + 1, RUN_OUT)
        os.closerange(RUN_OUT + 1, 1 << 16)  # siblings' pipes, pidfds: one close_range(2)
        os.close(0)  # the control socket is the zygote's alone
        os.close(1)
        if not run_waiting():
            runner.warm_up(cfg, runner.CHILD_WARM_UP)
        facades.reseed()
        no_lazy_imports()
        no_file_opens()
        confine.set_limits(cfg["memory_mb"], cfg["cpu_s"] * cfg["runs_per_child"] + 1)
        if flt is not None:
            confine.install_filter(flt)
    except BaseException as exc:
        try:
            say_why(exc)
        finally:  # nothing may carry this process on into the zygote's own code
            os._exit(70)
    os.close(2)
    try:
        runner.serve(RUN_IN, RUN_OUT, cfg, gen)
    except BaseException:
        os._exit(71)
    os._exit(0)


def run_waiting() -> bool:
    """Is a run in the channel already? The controller writes one to a child that has not
    said `ready` when it has none ready (runs queue): the warm-up, which only readies a
    spare for a run to come, would then hold that run back. The run is read, as always,
    only once the child is confined."""
    poller = select.poll()
    poller.register(RUN_IN, select.POLLIN)
    return bool(poller.poll(0))


def say_why(exc: BaseException) -> None:
    """Why a child gave up, on descriptor 2 (the jail's log), where it still can: nothing
    is imported (lazy imports may be off by now), and once the child's rlimits are set a
    log that is a file takes no more bytes (the write fails; exit code 70 still tells)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else ""
    os.write(2, f"lackjail child: {type(exc).__name__}: {exc}{where}\n".encode(errors="replace"))


class Zygote:
    """The children forked ahead and the control socket that reports on them."""

    def __init__(self, cfg, flt):
        self.cfg, self.flt = cfg, flt
        self.ctrl = _socket.socket(fileno=CTRL)
        self.children = {}  # pidfd -> (pid, gen)
        self.gen = 0
        self.ended = []  # `done` frames not sent yet: they go with the next `spawned`
        self.loads = 0  # loads that added facade modules: a child's module set, by number
        self.poller = select.poll()
        self.poller.register(CTRL, select.POLLIN)

    def send(self, msg, fds=()):
        data = b"".join([*self.ended, protocol.encode(msg)])
        self.ended = []
        if fds:
            rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]
            sent = self.ctrl.sendmsg([data], rights)
            data = data[sent:]
        if data:
            self.ctrl.sendall(data)

    def fork(self):
        """One more child, and its run channel's controller ends sent with `spawned`."""
        self.gen += 1
        # The controller's ends go non-blocking (the child's RUN_IN too: it polls), so the
        # controller need not change them; the child's RUN_OUT blocks while the pipe is full.
        in_r, in_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        out_r, out_w = os.pipe()
        os.set_blocking(out_r, False)
        pid = os.fork()
        if pid == 0:
            child(self.cfg, self.flt, self.gen, in_r, out_w)
        for fd in (in_r, out_w):
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pidfd] = (pid, self.gen)
        self.poller.register(pidfd, select.POLLIN)
        self.send(protocol.make_spawned(self.gen, self.loads), (in_w, out_r))
        for fd in (in_w, out_r):
            os.close(fd)

    def reap(self, pidfd):
        pid, gen = self.children.pop(pidfd)
        self.poller.unregister(pidfd)
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        self.ended.append(
            protocol.encode(
                protocol.make_done(
                    gen,
                    os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                    os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                    round((usage.ru_utime + usage.ru_stime) * 1000, 3),
                    usage.ru_maxrss,
                )
            )
        )

    def flush(self):
        """Send the `done` frames no `spawned` took along (before the zygote sleeps)."""
        if self.ended:
            data = b"".join(self.ended)
            self.ended = []
            self.ctrl.sendall(data)

    def command(self):
        """Answer one control frame; False when the zygote must exit."""
        try:
            msg = protocol.read_frame(self.ctrl.recv, ("ping", "cancel", "limit", "load", "stop"))
        except (EOFError, OSError, protocol.ProtocolError):
            msg = protocol.make_stop()
        if msg["t"] == "ping":
            self.send(protocol.make_pong(msg["id"]))
        elif msg["t"] == "cancel":
            for pid, gen in self.children.values():
                if gen == msg["gen"]:
                    os.kill(pid, signal.SIGKILL)
        elif msg["t"] == "limit":
            self.limit(msg["gen"], msg["memory_mb"])
        elif msg["t"] == "load":
            error = self.load(msg["modules"])
            self.send(protocol.make_loaded(msg["id"], self.loads, error))
        else:
            for pid, _ in self.children.values():
                os.kill(pid, signal.SIGKILL)
            for pid, _ in self.children.values():
                os.waitpid(pid, 0)
            return False
        return True

    def load(self, names) -> str | None:
        """Load the facade modules NAMES (a list from the controller) that are not loaded
        yet, and retire the children forked before (the serve loop forks new ones, which
        have them); returns why not (None: done). A name outside the table is refused
        before anything is imported; a module that fails to load is reported, not fatal."""
        if not self.cfg.get("python"):
            return "this jail does not serve the python level"
        bad = [n for n in names if type(n) is not str or n not in facades.FACADES]
        if bad:
            return f"not a module of the python level: {bad[0]!r}"[:200]
        new = [n for n in names if n not in facades.MODULES]
        if not new:
            return None
        for pidfd, (pid, _) in list(self.children.items()):  # their module set is older
            os.kill(pid, signal.SIGKILL)
            self.reap(pidfd)
        try:
            facades.load(new)
        except Exception as exc:  # a module missing from this Python, say
            freeze_heap()  # what was loaded, half of it, is shared as the rest
            return f"cannot load {', '.join(new)}: {type(exc).__name__}: {exc}"[:500]
        program = "".join(f"import {name}\n" for name in new if "." not in name) + "1"
        for _ in range(WARM_UPS):
            runner.warm_up(self.cfg, program, "python")
        freeze_heap()
        self.loads += 1
        return None

    def limit(self, gen, memory_mb):
        """Lower the address space of child GEN to MEMORY_MB for its next run (0: back to the
        configured limit), and say whether it was done. A confined child cannot change its own
        rlimits (its filter kills setrlimit); only the soft limit moves, never above the hard."""
        hard = self.cfg["memory_mb"] << 20
        ok = False
        for pid, child_gen in self.children.values():
            if child_gen == gen:
                try:
                    resource.prlimit(
                        pid, resource.RLIMIT_AS, (min(memory_mb << 20 or hard, hard), hard)
                    )
                    ok = True
                except OSError:
                    pass
        self.send(protocol.make_limited(gen, memory_mb, ok))

    def serve(self):
        """Keep SPARES children forked ahead; until `stop` or the control socket closes."""
        while True:
            while len(self.children) < self.cfg["spares"]:
                self.fork()
            if not self.answer():
                return

    def answer(self, timeout=None) -> bool:
        """Reap the children that ended and answer control frames, waiting for one up to
        TIMEOUT seconds (None: for ever); False when the zygote must exit. A child reaped
        here is reported with the next `spawned` (the serve loop forks at once), or before
        the next wait."""
        self.flush()
        for fd, _ in self.poller.poll(None if timeout is None else timeout * 1000):
            if fd in self.children:
                self.reap(fd)
            elif fd == CTRL and not self.command():
                return False
            # else: a child a `load` ended and reaped after this poll
        return True


def no_lazy_imports():
    """Imports from files end here: a module not loaded yet is a plain ImportError
    (an unknown codec a LookupError), never an `openat` the filter kills."""
    sys.meta_path[:] = [f for f in sys.meta_path if f is not _frozen_importlib_external.PathFinder]


def no_file_opens():
    """Opens from Python end here too: CPython opens a program's "file" to quote the line
    of a SyntaxError it raises while compiling, and any open is an `openat` the filter
    kills (a run then reported as `denied`). An audit hook refuses each with
    PermissionError first, so the run gets the error itself."""
    sys.addaudithook(_refuse_open)


def _refuse_open(event, args):
    if event == "open":
        raise PermissionError(f"a jailed run cannot open files: {args[0]!r}")


def immortalize_heap() -> int:
    """Make the zygote's objects immortal (PEP 683), as CPython 3.12 marks its own: the
    low 32 bits of the reference count all set. A child that uses such an object writes
    no reference count, so the page it lives on stays shared instead of being copied
    (~150 fewer page faults per child). The zygote keeps these objects for its whole life
    anyway. Marked: every object the collector tracks, and of the untracked ones (strings,
    numbers, code) those a run reaches first: functions' code and constants, and the
    values of dicts (module globals, class attributes). Returns how many were marked (0
    where the layout is not 3.12's, 64-bit)."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 12):
        return 0
    if sys.maxsize < 2**32 or sys.byteorder != "little":
        return 0
    function = type(immortalize_heap)  # types.FunctionType: types.py costs every start
    tracked = gc.get_objects()
    untracked = []
    for obj in tracked:
        if type(obj) is dict:
            untracked += [v for v in obj.values() if not gc.is_tracked(v)]
        elif type(obj) is function:
            untracked.append(obj.__code__)
            untracked += [c for c in obj.__code__.co_consts if not gc.is_tracked(c)]
    marked = 0
    for objects in (tracked, untracked):
        for obj in objects:
            refcount = libc.c_uint32.from_address(id(obj))  # ob_refcnt's low half
            if refcount.value != 0xFFFFFFFF:  # static objects are immortal already
                refcount.value = 0xFFFFFFFF
                marked += 1
    return marked


def read_config(text: str) -> dict:
    """The zygote's settings from TEXT, a dict literal of constants (numbers, booleans, the
    BPF bytes): parsed, never evaluated. Not ast.literal_eval: ast.py brings re and enum
    into every jail's start. Raises ValueError for anything else."""
    tree = compile(text, "<config>", "eval", _ast.PyCF_ONLY_AST, dont_inherit=True).body  # type: ignore[attr-defined]
    nodes = (*tree.keys, *tree.values) if type(tree) is _ast.Dict else (None,)
    if not all(type(node) is _ast.Constant for node in nodes):
        raise ValueError("the zygote's configuration must be a dict literal of constants")
    return {key.value: value.value for key, value in zip(tree.keys, tree.values)}


def main():
    cfg = read_config(sys.argv[1])
    bpf = cfg.pop("bpf")
    flt = confine.prepare_filter(bpf) if cfg["seccomp"] else None
    # The zygote never execs: no_new_privs on it too, inherited by every child (which sets
    # it again), and the prctl call path is then warm in pages the children share: their
    # filter step ~150 -> ~115 us, 7 fewer page faults (measured in the jail).
    confine.set_no_new_privs()
    textcodecs.preload()
    if cfg.get("python") and cfg.get("load_all"):
        facades.load()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    zygote = Zygote(cfg, flt)
    # The jail's first run waits for its first child, not for the work below, which only
    # makes the later children cheaper: that child is forked first, and the work waits
    # until it has served its run (or FIRST_RUN_S), so as not to take the CPU from it.
    gc.freeze()  # the first child's collector leaves the inherited heap alone
    zygote.fork()
    gc.unfreeze()  # immortalize_heap must see every object again
    deadline = time.monotonic() + FIRST_RUN_S
    while zygote.children and time.monotonic() < deadline:
        if not zygote.answer(max(0.0, deadline - time.monotonic())):
            os._exit(0)
    share_heap(cfg)
    zygote.serve()
    os._exit(0)  # no interpreter teardown over an immortal heap


def share_heap(cfg) -> None:
    """Ready the heap for the children forked after this: fewer pages each one copies."""
    # Our own fixed program, run here: its bytecode is specialised and the caches it
    # fills are filled once, in pages the children share, not written by every child.
    for _ in range(WARM_UPS):
        runner.warm_up(cfg)
        if cfg.get("python"):
            runner.warm_up(cfg, runner.PYTHON_WARM_UP, "python")
            if set(runner.PYTHON_MODULES_WARM_UP_NEEDS) <= facades.MODULES.keys():
                runner.warm_up(cfg, runner.PYTHON_MODULES_WARM_UP, "python")
    freeze_heap()


def freeze_heap() -> None:
    """Make what the heap holds now shared by the children forked after: immortal objects,
    free pages handed back, the allocator's holes filled, the collector kept off. After
    share_heap, the objects made since (a load's) are the young ones: only they are
    collected, marked and frozen."""
    gc.collect()
    immortalize_heap()
    libc.malloc_trim(0)  # hand free heap pages back: a smaller zygote
    fill_pools()
    gc.freeze()  # keep the collector from touching (and copying) inherited pages


_FILLED: list = []  # what fill_pools put in the heap's holes: kept for the zygote's life


def fill_pools() -> int:
    """Fill the free blocks of the small-object allocator's partly used pools with objects
    kept for good. A child's allocations then carve fresh pools (a page fault per page it
    fills) instead of the holes the zygote's freed objects left all over its heap (a
    copy-on-write fault per hole's page): ~20-30 fewer faults per child, ~10 of them on the
    python level's run path (measured). How many blocks each size class has free comes from
    sys._debugmallocstats, which CPython writes to descriptor 2: read here through a pipe.
    Returns how many blocks were filled (0 where the statistics do not read as 3.12's)."""
    free = _free_blocks()
    _FILLED.extend(_block(size, i) for size, count in free.items() for i in range(count))
    return sum(free.values())


def _free_blocks() -> dict:
    """Size class (bytes) -> free blocks in its used pools, from sys._debugmallocstats. The
    pipe is read only afterwards, so its writes never wait: a pipe held to one page (its
    user over the kernel's pipe limits) cuts the statistics short instead of hanging here."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    saved = os.dup(2)
    try:
        os.dup2(write, 2)
        os.close(write)
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    free, table = {}, False
    for line in b"".join(chunks).decode(errors="replace").splitlines():
        fields = line.split()
        if fields[:2] == ["class", "size"]:
            table = True
        elif table and len(fields) == 5 and all(f.isdigit() for f in fields):
            free[int(fields[1])] = int(fields[4])
        elif table and free:
            break
    return free if all(size % 16 == 0 for size in free) else {}


def _block(size, i):
    """An object that takes exactly one block of SIZE bytes, untracked by the collector."""
    if size == 16:
        return object()
    if size == 32:
        return i + 0.5  # a float
    return bytes(size - 33)  # a bytes object's header is 33 bytes
