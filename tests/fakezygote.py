"""A hostile stand-in for the zygote, run as a plain process by the tests.

It speaks the control protocol (a `spawned` frame with the child's run
channel attached), then plays the "child" itself from a script of steps given
as a JSON file: what to write on the run channel and when. The controller
must hold against anything it does.

    python fakezygote.py ROOT SCRIPT.json
    python fakezygote.py ROOT DIRECTORY    (each zygote started plays the next script
                                            there, by name, and removes it)

Steps (a list of [action, argument]):
  ["spawn", gen]         send `spawned` for a new child with fresh pipes
  ["ready", gen]         write `ready` on that child's run channel
  ["spawn_ready", gen]   both, `ready` first: it is there when `spawned` arrives
  ["read_run", gen]      read one frame from that child's run channel
  ["write", [gen, hex]]  write raw bytes on that child's run channel
  ["write_run", [gen, hex, placeholder]]  the same, PLACEHOLDER replaced by the run's id
  ["result", gen]        write an `ok` result for the run last read from it (value: gen)
  ["result_status", [gen, status]]  the same with another status
  ["result_errors", [gen, errors]]  an `error` result carrying ERRORS as they are
  ["result_of", [gen, other, n]]  an `ok` result on GEN's channel carrying the id of run N
                         (0 the first, -1 the last) read from child OTHER
  ["late", [gen, hex]]   like write, but the channel may be closed already
  ["ctrl", hex]          write raw bytes on the control socket
  ["done", [gen, sig]]   send `done` for that child (signal SIG, or exit code 0)
  ["close", gen]         close that child's end of its run channel
  ["sleep", seconds]
  ["wait_file", path]    wait (up to 30 s) until PATH exists: the test says when
  ["exit", code]
"""

import json
import os
import socket
import sys
import time

sys.path.insert(0, sys.argv[1])
from lackjail import protocol  # noqa: E402

ctrl = socket.socket(fileno=0)
children = {}  # gen -> [run_in (read end), run_out (write end), last run id]
run_ids = {}  # gen -> the ids of every run read from that child, in order


def _script(path: str) -> list:
    if not os.path.isdir(path):
        return json.loads(open(path).read())
    for name in sorted(n for n in os.listdir(path) if not n.endswith(".taken")):
        taken = os.path.join(path, name + ".taken")
        try:
            os.rename(os.path.join(path, name), taken)
        except FileNotFoundError:  # another zygote took it
            continue
        return json.loads(open(taken).read())
    return [["sleep", 30]]


for action, arg in _script(sys.argv[2]):
    if action in ("spawn", "spawn_ready"):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        if action == "spawn_ready":
            os.write(out_w, protocol.encode(protocol.make_ready(arg)))
        socket.send_fds(ctrl, [protocol.encode(protocol.make_spawned(arg))], [in_w, out_r])
        os.close(in_w)
        os.close(out_r)
        children[arg] = [in_r, out_w, None]
    elif action == "ready":
        os.write(children[arg][1], protocol.encode(protocol.make_ready(arg)))
    elif action == "read_run":
        frame = protocol.read_frame(lambda n, fd=children[arg][0]: os.read(fd, n))
        children[arg][2] = frame["id"]
        run_ids.setdefault(arg, []).append(frame["id"])
    elif action == "write":
        os.write(children[arg[0]][1], bytes.fromhex(arg[1]))
    elif action == "write_run":  # the same, with a placeholder id replaced by the run's
        gen, data, placeholder = arg
        data = bytes.fromhex(data).replace(placeholder.encode(), children[gen][2].encode())
        os.write(children[gen][1], data)
    elif action == "result":
        result = protocol.make_result(children[arg][2], "ok", arg, [], 1.0, 1)
        os.write(children[arg][1], protocol.encode(result))
    elif action == "result_status":
        gen, status = arg
        result = protocol.make_result(children[gen][2], status, gen, [], 1.0, 1)
        os.write(children[gen][1], protocol.encode(result))
    elif action == "result_errors":
        gen, errors = arg
        result = protocol.make_result(children[gen][2], "error", None, errors, 1.0, 1)
        os.write(children[gen][1], protocol.encode(result))
    elif action == "result_of":
        gen, other, n = arg
        result = protocol.make_result(run_ids[other][n], "ok", gen, [], 1.0, 1)
        os.write(children[gen][1], protocol.encode(result))
    elif action == "late":  # raw bytes on a run channel the controller may have closed
        try:
            os.write(children[arg[0]][1], bytes.fromhex(arg[1]))
        except BrokenPipeError:
            pass
    elif action == "ctrl":
        ctrl.sendall(bytes.fromhex(arg))
    elif action == "done":
        gen, sig = arg
        ctrl.sendall(
            protocol.encode(protocol.make_done(gen, None if sig else 0, sig or None, 1.0, 1))
        )
    elif action == "close":
        os.close(children[arg][1])
    elif action == "sleep":
        time.sleep(arg)
    elif action == "wait_file":
        deadline = time.monotonic() + 30
        while not os.path.exists(arg) and time.monotonic() < deadline:
            time.sleep(0.01)
    elif action == "exit":
        sys.exit(arg)
time.sleep(30)
