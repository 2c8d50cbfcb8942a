"""The zygote: the jail's first process. It never runs untrusted code.

It keeps one child forked ahead of time, already confined (rlimits and
seccomp), waiting on the run channel; when that child ends it reports how
(`done`) and forks the next. On the control channel it answers `ping`,
kills the child on `cancel`, and exits on `stop` or end of file.

Descriptors: 0/1 control channel (controller <-> zygote), 3/4 run channel
(controller <-> child). The child closes 0, 1 and 2: it can only speak on
the run channel.
"""

import ast
import gc
import os
import resource
import select
import signal
import sys

from lackjail import lang, protocol  # noqa: F401 - imported before the filter goes on
from lackjail.worker import confine, puretools, runner  # noqa: F401 - preloaded for jail tools

CTRL_IN, CTRL_OUT, RUN_IN, RUN_OUT = 0, 1, 3, 4


def send(msg):
    data = memoryview(protocol.encode(msg))
    while data:
        data = data[os.write(CTRL_OUT, data) :]


def child(cfg, flt):
    """Confine this freshly forked process, then serve runs; never returns.

    A failure before the program's turn exits with code 70 and a traceback
    on stderr (the jail's log); untrusted code never runs unconfined.
    """
    try:
        runner.warm_up(cfg)
        confine.set_limits(cfg["memory_mb"], cfg["cpu_s"])
        os.closerange(RUN_OUT + 1, 1 << 16)  # one close_range(2) call, before the filter forbids it
        os.set_blocking(RUN_IN, False)  # the runner polls (see runner.Channel)
        if flt is not None:
            confine.install_filter(flt)
    except BaseException:
        import traceback

        traceback.print_exc()
        os._exit(70)
    for fd in (CTRL_IN, CTRL_OUT, 2):
        os.close(fd)
    try:
        runner.serve(RUN_IN, RUN_OUT, cfg, cfg["runs_per_child"])
    except BaseException:
        os._exit(71)
    os._exit(0)


def wait_child(pid, pidfd, gen):
    """Serve the control channel until the child ends; False when the zygote must exit."""
    poller = select.poll()
    poller.register(CTRL_IN, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd == pidfd:
                _, status, usage = os.wait4(pid, 0)
                send(
                    protocol.make_done(
                        gen,
                        os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                        os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                        round((usage.ru_utime + usage.ru_stime) * 1000, 3),
                        usage.ru_maxrss,
                    )
                )
                return True
            try:
                msg = protocol.read_frame(lambda n: os.read(CTRL_IN, n), ("ping", "cancel", "stop"))
            except (EOFError, protocol.ProtocolError):
                msg = protocol.make_stop()
            if msg["t"] == "ping":
                send(protocol.make_pong(msg["id"]))
            elif msg["t"] == "cancel":
                if msg["gen"] == gen:
                    os.kill(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return False


def main():
    cfg = ast.literal_eval(sys.argv[1])  # a dict literal of numbers and booleans
    flt = confine.prepare_filter(confine.build_filter()) if cfg["seccomp"] else None
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    gc.collect()
    gc.freeze()  # keep the collector from touching (and copying) inherited pages
    gen = 0
    while True:
        gen += 1
        pid = os.fork()
        if pid == 0:
            child(cfg, flt)
        pidfd = os.pidfd_open(pid)
        send(protocol.make_ready(gen))
        alive = wait_child(pid, pidfd, gen)
        os.close(pidfd)
        if not alive:
            return


if __name__ == "__main__":
    main()
