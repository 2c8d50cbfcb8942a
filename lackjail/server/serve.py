"""The user's server: lackjail imported once, a jail started ahead, one forked process per
`lackjail run`.

The server process imports what a run needs, then keeps one forked *waiting* process. While no
command runs, that process warms up (`warm_up`: the jail the last command's plan names, started
as `pool.early` does, its own child). The one that accepts a client tells the server, which
forks the next, and becomes that command: it checks the peer (our uid, else it hangs up before
reading anything), reads the request (strict, size-capped, no descriptors), declines it when
the client's install or process is not the server's (`place.identity`, `code_files`) or the
user's config turns the server off, else takes the client's environment, umask and arguments
and says it is ready; on the client's COMMIT it takes the descriptors that came with it (stdin,
stdout, stderr, working folder: exactly those), runs `lackjail.cli.command` as the console
command does, reports the exit code and exits. A client that hangs up or is gone, a SIGTERM or
SIGHUP: the command's jails (its children) are killed before it exits.

The server ends after IDLE_S seconds without a command (LACKJAIL_SERVER_IDLE_S), on `lackjail
server stop`, and when a client's install is not its own or a file of its code or data has
changed since it started (that client runs the command itself and starts a new server). One
server per folder and install: a lock held while it lives.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

from lackjail.server import client, place, wire
from lackjail.workspace.hostdir import open_at

IDLE_S = 600.0  # ten minutes without a command
REQUEST_S = 30.0  # a client that connects and says nothing is dropped after this
# what a `lackjail run` imports, imported once here (the rest loads on first use, as ever)
PRELOAD = (
    "lackjail.cli",
    "lackjail.cli.run",
    "lackjail.cli.jail",
    "lackjail.cli.approve",
    "lackjail.infer.sanitize",
    "lackjail.api",
    "lackjail.checker",
    "lackjail.pool.pool",
    "lackjail.pool.jail_process",
    "lackjail.pool.run",
    "lackjail.pool.image",
    "lackjail.pool.syscall_filter",
    "lackjail.pool.session",
    "lackjail.workspace.hostfs",
    "lackjail.workspace.protect",
    "lackjail.kit.assembly.kit",
    "lackjail.userconfig",
)
# from a waiting process to the server: it took a client, it runs a command (RAN), it asks
# how many commands the server ran (COUNT: answered with 4 bytes), the server must end
ACCEPTED, RAN, COUNT, QUIT = b"A", b"R", b"C", b"Q"
WARM, NUMBER = b"W", b"N"  # from the server to a process it forked
MADV_POPULATE_WRITE = 23
PR_SET_CHILD_SUBREAPER = 36
FAILED_STARTS = 3  # waiting processes that died in a row before the server gives up
DATA = ("images", "policies")  # the package's folders of data a run reads (`code_files`)


def start_if_wanted() -> None:
    """Start the server for the next command unless the user's config turns it off, there is
    no folder of the user's alone to serve in (`place.open_folder`), or a server holds it:
    detached
    (a session of its own, stdio on /dev/null, the root folder as its working folder), through
    this console command."""
    if not _server_wanted():
        return
    folder = place.open_folder(create=True)
    if folder is None:  # no folder of ours alone to serve in: a server would only give up
        return
    try:
        lock = open_at(folder, place.LOCK, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(lock)
    except OSError:  # a server lives (one this command would not talk to, or one ending)
        return
    finally:
        os.close(folder)
    script = os.path.abspath(sys.argv[0])
    try:
        subprocess.Popen(
            [sys.executable, script, "server", "serve"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
        )
    except OSError:
        pass  # the next command runs without one, as this one did


def idle_s() -> float:
    try:
        value = float(os.environ.get("LACKJAIL_SERVER_IDLE_S", IDLE_S))
    except ValueError:
        return IDLE_S
    return value if value > 0 else IDLE_S


def serve() -> int:
    """Serve until idle, stopped or stale; 0, or 1 when there is no folder of ours to serve in.
    Returns at once (0) when another server holds the folder's lock."""
    folder = place.open_folder(create=True)
    if folder is None:
        return 1
    try:
        lock = open_at(folder, place.LOCK, os.O_RDWR | os.O_CREAT)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0
    for name in PRELOAD:
        importlib.import_module(name)
    files = code_files()
    try:
        os.unlink(place.SOCKET, dir_fd=folder)  # a dead server's: we hold the lock
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)  # the socket srw------- (its folder is ours alone anyway)
    try:
        listener.bind(place.named(folder, place.SOCKET))
    finally:
        os.umask(umask)
    listener.listen(64)
    try:
        _loop(listener, lock, files)
    finally:
        os.unlink(place.SOCKET, dir_fd=folder)  # still ours: the lock is held until we exit
        listener.close()
    return 0


def _loop(listener: socket.socket, lock: int, files: dict) -> None:
    """Keep one process waiting for a client; hear from each (ACCEPTED, QUIT, or its end) until
    one asks to quit, IDLE_S pass without a command, or waiting processes keep dying. The
    waiting one warms up (starts its jail) only while no command runs, so that it never takes
    a CPU from one on a small machine; one that takes a client first starts its jail then."""
    idle, failures, served = idle_s(), 0, 0
    deadline = time.monotonic() + idle
    waiting: socket.socket | None = None
    pid, warmed = 0, False
    busy: set[socket.socket] = set()  # the processes running a command (one may ask to quit)
    try:
        while failures < FAILED_STARTS:
            if waiting is None:
                (waiting, pid), warmed = _fork_waiting(listener, lock, files), False
            if not busy and not warmed:
                warmed = _tell(waiting, WARM)
            timeout = max(0.0, min(deadline - time.monotonic(), 5.0))
            ready = select.select([waiting, *busy], [], [], timeout)[0]
            _reap()
            if not ready and time.monotonic() >= deadline:
                return
            asked = []  # answered once every note that came with them is counted
            for pair in ready:
                note = _hear(pair)
                if note == QUIT:
                    return
                if pair in busy and note in (RAN, COUNT):
                    served += note == RAN
                    if note == COUNT:
                        asked.append(pair)
                    continue
                if pair is waiting:
                    waiting = None
                    if note == ACCEPTED:
                        busy.add(pair)
                        failures, deadline = 0, time.monotonic() + idle
                        continue
                    failures += 1  # it died before it took a command
                busy.discard(pair)
                pair.close()
            for pair in asked:
                _tell(pair, NUMBER + served.to_bytes(4, "big"))
    finally:
        for pair in busy:
            pair.close()
        if waiting is not None:
            waiting.close()  # it ends its jail and exits: waited for, so none is left behind
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped already
                pass


def _tell(pair: socket.socket, data: bytes) -> bool:
    try:
        pair.sendall(data)
        return True
    except OSError:  # it has ended: its end of the pair says so next
        return False


def _hear(pair: socket.socket) -> bytes:
    """One note from a forked process; b"" when it has ended (also with a note of ours
    unread: ECONNRESET)."""
    try:
        return pair.recv(1)
    except OSError:
        return b""


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _fork_waiting(listener: socket.socket, lock: int, files: dict) -> tuple[socket.socket, int]:
    """Fork the process that waits for the next client: our end of a pair to hear it, its pid."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid:
        theirs.close()
        return ours, pid
    try:
        ours.close()
        os.close(lock)
        _wait_and_run(listener, theirs, files)
    finally:
        os._exit(1)


def code_files() -> dict:
    """path -> identity (device, inode, size, mtime) of every module file this process
    imported, but the standard library's, and of the package's data a run's cached values
    follow from (images, bundled policies): an edit to any of them makes the server stale."""
    stdlib = os.path.dirname(os.__file__) + os.sep
    paths = [getattr(module, "__file__", None) for module in list(sys.modules.values())]
    package = os.path.dirname(place.HERE)
    for folder in DATA:
        try:
            paths += [os.path.join(package, folder, name) for name in os.listdir(
                os.path.join(package, folder))]  # fmt: skip
        except OSError:
            continue
    return {
        path: _file_identity(path)
        for path in paths
        if isinstance(path, str) and not path.startswith(stdlib)
    }


def _file_identity(path: str):
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _wait_and_run(listener: socket.socket, server: socket.socket, files: dict) -> None:
    """The waiting process: warm up when the server says so (`warm_up`), take one client, run
    its command."""
    from lackjail.pool import early

    for signum in client.FORWARDED:
        signal.signal(signum, signal.SIG_DFL)
    # a jail process whose nsjail has ended comes to us, and `end_children` ends it too
    _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    warmed = False
    while True:
        ready = select.select([listener, server], [], [])[0]
        if listener in ready:
            break
        if server.recv(1) != WARM:  # the server is ending (or gone)
            early.discard()
            os._exit(0)
        if not warmed:
            warm_up()
            warmed = True
            # what the warm-up imported is checked too, from how it was then
            files = {**code_files(), **files}
    conn, _ = listener.accept()
    listener.close()
    server.sendall(ACCEPTED)
    if not warmed:  # a command runs already: this one's jail starts now, as in its own process
        early.begin()
    Request(conn, server, files).serve()
    os._exit(1)


def warm_up() -> None:
    """Start the jail of the last command's plan (`pool.early`), and take our own copy of the
    memory we share with the server (MADV_POPULATE_WRITE: Linux 5.14 and later) so that the
    command meets no copy-on-write faults: ~5 ms of a command's time, spent here instead."""
    import ctypes

    from lackjail.pool import early

    early.begin()
    _fill_caches()
    madvise = _libc().madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return
    for line in lines:
        parts = line.split()
        private_rw = parts[1][:2] == "rw" and parts[1][3:] == "p"
        special = len(parts) > 5 and parts[5].startswith("[") and parts[5] != "[heap]"
        if private_rw and not special:
            low, high = (int(x, 16) for x in parts[0].split("-"))
            madvise(low, high - low, MADV_POPULATE_WRITE)  # an older kernel: EINVAL, no harm


class Request:
    """One client's command, in the process that accepted it."""

    def __init__(self, conn: socket.socket, server: socket.socket, files: dict):
        self.conn, self.server, self.files = conn, server, files

    def serve(self) -> None:
        from lackjail.pool import early

        try:
            if client.peer_uid(self.conn) != os.geteuid():
                raise wire.BadRequest("a peer of another user")
            if place.peer_context(self.conn) != place.context():
                raise wire.BadRequest("a peer with other rights (it runs the command itself)")
            self.conn.settimeout(REQUEST_S)
            kind, fields = self._read()
        except (OSError, wire.BadRequest):
            early.discard()
            os._exit(0)  # hang up, nothing read further
        if kind == wire.STOP:
            self._quit()
            self._send(wire.EXITED, 0)
        elif kind == wire.PING:
            self._send(wire.EXITED, os.getppid())
            self._send(wire.EXITED, self._served())
        else:
            self._run(wire.Run(fields))
        early.discard()
        os._exit(0)

    def _read(self) -> tuple[bytes, list[bytes]]:
        """The request: its kind and fields (a request carries no descriptors)."""
        header, fds = self._receive_with_fds(wire.HEADER)
        if fds:
            for fd in fds:
                os.close(fd)
            raise wire.BadRequest("descriptors before the command was handed over")
        kind, size = wire.parse_header(header + self._exactly(wire.HEADER - len(header)))
        return kind, wire.parse_fields(self._exactly(size))

    def _receive_with_fds(self, size: int) -> tuple[bytes, list[int]]:
        """Up to SIZE bytes and the descriptors that came with them (all of them, closed again
        and refused when the set was cut short)."""
        data, ancillary, flags, _ = self.conn.recvmsg(
            size, socket.CMSG_SPACE(8 * 4), socket.MSG_CMSG_CLOEXEC
        )
        fds = []
        for level, kind, payload in ancillary:
            if (level, kind) == (socket.SOL_SOCKET, socket.SCM_RIGHTS):
                whole = len(payload) - len(payload) % 4
                fds += [
                    int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, whole, 4)
                ]
        if flags & socket.MSG_CTRUNC:
            for fd in fds:
                os.close(fd)
            raise wire.BadRequest("more descriptors than a request carries")
        return data, fds

    def _committed(self) -> list[int] | None:
        """The client's COMMIT and, with it, its stdin, stdout, stderr and working folder; None
        (nothing run) when it hangs up or sends anything else."""
        try:
            data, fds = self._receive_with_fds(wire.MESSAGE)
            if len(data) < wire.MESSAGE:
                data += self._exactly(wire.MESSAGE - len(data))
        except (OSError, wire.BadRequest):
            return None
        if data == wire.message(wire.COMMIT) and len(fds) == wire.FDS and _kinds_ok(fds):
            return fds
        for fd in fds:
            os.close(fd)
        return None

    def _exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self.conn.recv(min(left, 1 << 20))
            if not chunk:
                raise wire.BadRequest("the request was cut short")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _unchanged(self) -> bool:
        """Every file of the server's code and data is as it was when the server started
        (modules imported since were read from disk then)."""
        return all(_file_identity(path) == known for path, known in self.files.items())

    def _send(self, kind: bytes, number: int) -> None:
        try:
            self.conn.sendall(wire.message(kind, number))
        except OSError:
            pass

    def _note(self, note: bytes) -> None:
        try:
            self.server.sendall(note)
        except OSError:
            pass

    def _quit(self) -> None:
        """Tell the server to end (it serves no more commands)."""
        self._note(QUIT)

    def _served(self) -> int:
        """How many commands the server has run (-1 when it does not say)."""
        self._note(COUNT)
        try:
            while (kind := self.server.recv(1)) == WARM:  # sent before it heard we are busy
                continue
            data = self.server.recv(4, socket.MSG_WAITALL)
        except OSError:
            return -1
        return int.from_bytes(data, "big") if kind == NUMBER and len(data) == 4 else -1

    def _decline(self, why: int) -> None:
        self._quit()
        self._send(wire.DECLINED, why)

    def _run(self, run: wire.Run) -> None:
        if run.identity != place.identity() or not self._unchanged():
            return self._decline(wire.STALE)
        self.conn.settimeout(None)
        _adopt(run)
        if not _server_wanted():
            return self._decline(wire.OFF)
        self._send(wire.RUNNING, 0)
        fds = self._committed()
        if fds is None:  # it runs the command itself, or not at all
            return None
        _adopt_descriptors(fds, run.streams)
        self._note(RAN)
        threading.Thread(target=self._watch, daemon=True).start()
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self._killed)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from lackjail.cli import command
        from lackjail.pool import early

        code = client.EXIT_FAILED  # what escapes `command` (it lets nothing ordinary go)
        try:
            code = command(run.argv[1:])
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            early.discard()
            for thread in threading.enumerate():  # what the interpreter's exit would wait for
                if thread is not threading.current_thread() and not thread.daemon:
                    thread.join()
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (BrokenPipeError, ValueError):
                code = code or client.EXIT_FAILED
        finally:
            end_children()
            _let_go_of_stdio()  # a reader of the client's output sees its end with the client's
            self._send(wire.EXITED, code)
            os._exit(code)

    def _watch(self) -> None:
        """Deliver the client's signals; when it hangs up, end the command and its jails."""
        while True:
            try:
                data = self.conn.recv(wire.MESSAGE, socket.MSG_WAITALL)
            except OSError:
                data = b""
            kind, number = wire.parse_message(data)
            if len(data) != wire.MESSAGE or kind != wire.SIGNAL or number not in client.FORWARDED:
                end_children()
                os._exit(client.EXIT_FAILED)
            os.kill(os.getpid(), number)

    def _killed(self, signum, frame) -> None:
        """SIGTERM or SIGHUP: the command ends at once, as it would in its own process, its
        jails first."""
        end_children()
        self._send(wire.KILLED, signum)
        os._exit(128 + signum)


def _fill_caches() -> None:
    """Fill the caches a run consults whose values follow from their arguments alone: the
    read rules' regex of a workspace's config read, and the nsjail configuration of a command
    with the user's default policy and language. A command with the same
    arguments finds them made; another computes its own, as it would anyway. The data files
    they read are part of the server's identity (`code_files`). A failure leaves them empty."""
    from lackjail.checker import Checker
    from lackjail.policy import load_policy
    from lackjail.pool import isolation
    from lackjail.userconfig import user_defaults
    from lackjail.workspace.protect import Protection

    try:
        Protection()
        user = user_defaults()
        policy = load_policy(user.policy or "default")
        args = isolation.zygote_config(
            policy.limits,
            policy.pool.mode,
            policy.pool.recycle_after,
            policy.pool.spares,
            python_level=Checker(policy, None, user.language).language == "python",
        )
        isolation.nsjail_launcher(args).close()
    except Exception:  # noqa: BLE001 - only a cache: the command computes what it needs
        pass


def _let_go_of_stdio() -> None:
    """Close our copies of the client's stdin, stdout and stderr (onto /dev/null), so that
    only the client holds them: this process's own exit (~2-5 ms of unmapping its memory) is
    then no longer between the client's exit and the end of its output."""
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _kinds_ok(fds: list[int]) -> bool:
    """A run's stdin, stdout and stderr are no folders, its working folder is one."""
    try:
        kinds = [stat.S_ISDIR(os.fstat(fd).st_mode) for fd in fds]
    except OSError:
        return False
    return kinds == [False, False, False, True]


def _adopt(run: wire.Run) -> None:
    """Take the client's environment, umask and arguments."""
    os.environb.clear()
    os.environb.update(run.environ)
    os.umask(run.umask)
    sys.argv = list(run.argv)


def _adopt_descriptors(fds: list[int], streams: list[str]) -> None:
    """Take the client's stdin, stdout, stderr (set up as its own were) and working folder."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.fchdir(fds[3])
    for fd in fds:
        os.close(fd)
    for fd, (name, settings) in enumerate(zip(("stdin", "stdout", "stderr"), streams)):
        stream = _stream(fd, settings)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _stream(fd: int, settings: str):
    """A text stream on FD set up as the client's interpreter set up its own (SETTINGS:
    `client.stream_settings`); an unknown encoding falls back to UTF-8."""
    import codecs
    import io

    encoding, errors, flags = (settings.split("\0") + ["", "", "000"])[:3]
    try:
        codecs.lookup(encoding)
        codecs.lookup_error(errors)
    except LookupError:
        encoding, errors = "utf-8", "strict"
    line, through, raw = (flag == "1" for flag in (flags + "000")[:3])
    layer: io.RawIOBase | io.BufferedIOBase = io.FileIO(
        fd, "rb" if fd == 0 else "wb", closefd=False
    )
    if fd == 0:
        layer = io.BufferedReader(layer)
    elif not raw:
        layer = io.BufferedWriter(layer)
    return io.TextIOWrapper(
        layer, encoding, errors, newline="\n", line_buffering=line, write_through=through
    )


def _server_wanted() -> bool:
    """False when the user's own config turns the server off ([server] enabled = false)."""
    from lackjail.userconfig import ConfigError, server_enabled

    try:
        return server_enabled()
    except ConfigError:
        return False  # the command reports the config's error itself


def end_children() -> None:
    """Kill every child of this process (the command's jails), each one's own children first
    (a jail's zygote, which nsjail puts out of its process group's reach), and reap them."""
    from lackjail.pool.spawn import end_tree

    for pid in _children(os.getpid()):
        end_tree(pid)


def _children(pid: int) -> list[int]:
    """PID's children, from every thread of it (a child belongs to the thread that made it)."""
    found = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                found += [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            continue
    return found
