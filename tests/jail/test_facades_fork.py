"""What a child forked after `facades.load()` inherits: the at-fork handlers load holds back
(random's reseed, threading's reset of the threads a fork leaves behind: the child reseeds
random itself, and the zygote has one thread) and the ones it keeps (any other module's).
Run in a fresh interpreter, as a zygote starts: neither module imported before load."""

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """\
import os
RAN = []
os.register_at_fork(after_in_child=lambda: RAN.append("child"))
"""

ZYGOTE = textwrap.dedent(
    """\
    import json, os, sys
    sys.path[:0] = sys.argv[1:]
    assert "random" not in sys.modules and "threading" not in sys.modules
    from lackjail.worker import facades
    facades.FACADES = {**facades.FACADES, "atfork_probe": ()}
    facades.load()
    import queue, random, threading
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        inherited = random.random()
        facades.reseed()
        q = queue.PriorityQueue()
        q.put(2)
        q.put(1)
        report = {
            "inherited": inherited,
            "reseeded": random.random(),
            "probe": sys.modules["atfork_probe"].RAN,
            "main_thread": threading.current_thread() is threading.main_thread(),
            "queue": [q.get(), q.get(), q.empty()],
        }
        os.write(w, json.dumps(report).encode())
        os._exit(0)
    os.close(w)
    child = json.loads(os.read(r, 1 << 16))
    os.waitpid(pid, 0)
    print(json.dumps({"child": child, "parent": [random.random(), random.random()]}))
    """
)


def test_a_child_after_load_runs_only_the_handlers_load_kept(tmp_path):
    (tmp_path / "atfork_probe.py").write_text(PROBE)
    site = [p for p in sys.path if p.endswith("site-packages")]
    proc = subprocess.run(
        [sys.executable, "-S", "-B", "-c", ZYGOTE, str(ROOT), str(tmp_path), *site],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    child, parent = out["child"], out["parent"]
    # random's at-fork reseed was held back: the child draws what the zygote draws next ...
    assert child["inherited"] == parent[0]
    # ... until it reseeds itself, as every child does before its filter goes on
    assert child["reseeded"] != parent[1]
    assert child["probe"] == ["child"]  # another module's handler still runs
    assert child["main_thread"] and child["queue"] == [1, 2, True]


def test_the_worker_starts_no_thread():
    """What holding back threading's at-fork reset rests on: the zygote has one thread. A
    thread started in the worker (a reaper, say) needs that handler back (facades.py)."""
    for path in (ROOT / "lackjail" / "worker").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not {"threading", "_thread"} & set(names), path.name
