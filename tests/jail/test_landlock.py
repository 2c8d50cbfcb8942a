"""The landlock level, for hosts where namespaces cannot be made: each of its blocks
fires, as root and as an ordinary user; under a simulated unprivileged container the
default policy runs there and says so, doctor names the cause, and a policy demanding
nsjail refuses with a clear error.

The probe is raw Python (not through the validator) run by the landlock launcher's own
bootstrap in place of the zygote's main(): confined exactly as a zygote is, it tries to
read and list outside the allowed tree, write outside its private folder, run a program
it wrote there, bind and connect TCP to a loopback listener, signal and ptrace the
controller (its parent), and forks a child that loads the children's seccomp filter and
opens a socket. The same
probe run unconfined shows each attempt succeeds without the confinement.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from others import ordinary_user, reachable, run_as

from lackjail.worker import landlock

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < 4,
    reason="needs Landlock ABI 4 or later (TCP rules); this kernel has "
    f"{landlock.abi_version() or 'no Landlock'}",
)

PROBE = r"""
import json, os, socket, sys
from lackjail.worker import confine, landlock, libc
spec = json.loads(sys.argv[1])
controller = os.getppid()
out = {}

def attempt(name, fn):
    try:
        fn()
        out[name] = "done"
    except OSError as exc:
        out[name] = errno_name(exc.errno)

def errno_name(number):
    return {1: "EPERM", 13: "EACCES"}.get(number, str(number))

def trace():
    ptrace = libc.function("ptrace")
    args = [landlock.c_long(v) for v in (16, controller, 0, 0)]  # PTRACE_ATTACH
    if ptrace(*args) != 0:
        raise OSError(libc.get_errno(), "ptrace")
    args[0] = landlock.c_long(17)  # PTRACE_DETACH
    ptrace(*args)

def connect():
    with socket.create_connection(("127.0.0.1", spec["port"]), timeout=10):
        pass

def bind():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))

attempt("read_outside", lambda: open(spec["outside_file"]).read())
attempt("list_checkout", lambda: os.listdir(spec["checkout"]))
attempt("read_stdlib", lambda: open(os.__file__).read())
attempt("write_outside", lambda: open(os.path.join(spec["outside_dir"], "planted"), "w").close())
attempt("write_private", lambda: open(os.path.join(os.environ["TMPDIR"], "mine"), "w").close())
attempt("connect", connect)
attempt("bind", bind)
attempt("signal", lambda: os.kill(controller, 0))

def exec_private():
    copy = os.path.join(os.environ["TMPDIR"], "python-copy")
    with open(sys.executable, "rb") as src, open(copy, "wb") as dst:
        dst.write(src.read())
    os.chmod(copy, 0o755)
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(copy, [copy, "-c", "pass"])
        except OSError as exc:
            os._exit(100 + exc.errno)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)  # the copy ran (whatever it then did): < 100
    if code >= 100:
        raise OSError(code - 100, "exec")

attempt("exec_written", exec_private)
attempt("setgroups", lambda: os.setgroups([]))
if not spec["control"]:
    attempt("ptrace", trace)
    pid = os.fork()
    if pid == 0:
        confine.set_limits(256, 5)
        confine.install_filter(confine.prepare_filter(bytes.fromhex(spec["bpf"])))
        socket.socket()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    out["child_socket"] = os.WTERMSIG(status) if os.WIFSIGNALED(status) else status
print(json.dumps(out))
"""

# Run by the controller under test (root, or the ordinary user): it starts the probe
# through the landlock launcher (or, for the control, through a plain interpreter).
DRIVER = r"""
import json, os, socket, subprocess, sys
from lackjail.pool import isolation
from lackjail.pool.syscall_filter import child_filter
spec = json.loads(sys.argv[1])
listener = socket.create_server(("127.0.0.1", 0))
spec["port"] = listener.getsockname()[1]
spec["bpf"] = child_filter().hex()
if spec["control"]:
    head = f"import os, sys; sys.path[:0] = {isolation._import_roots()!r}\n"
    head += f"os.environ['TMPDIR'] = {spec['outside_dir']!r}\n"
    argv = [sys.executable, "-I", "-S", "-c", head + spec["probe"], ""]
    env = isolation._env()
else:
    launcher = isolation.landlock_launcher("", code=spec["probe"])
    argv, env = launcher.argv, launcher.env
del spec["probe"]
argv[-1] = json.dumps(spec)
try:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
finally:
    if not spec["control"]:
        launcher.close()
print(proc.stdout)
print(proc.stderr, file=sys.stderr)
"""


@pytest.fixture(params=["this user", "an ordinary user"])
def who(request):
    """None (this process's user: root here) or an ordinary user's name."""
    if request.param == "this user":
        return None
    user = ordinary_user()
    if user is None:
        pytest.skip("needs root to run as another user (run as one, 'this user' is that case)")
    return user.pw_name


@pytest.fixture
def outside(who):
    """A folder the controller's user may read and write, outside the allowed tree."""
    folder = Path(tempfile.mkdtemp(prefix="lackjail-outside-"))
    os.chmod(folder, 0o755)
    (folder / "secret.txt").write_text("the controller's\n")
    if who is not None:
        user = ordinary_user()
        os.chown(folder, user.pw_uid, user.pw_gid)
        os.chown(folder / "secret.txt", user.pw_uid, user.pw_gid)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def probe(who, outside, control: bool) -> dict:
    python = reachable()
    spec = {
        "probe": PROBE,
        "control": control,
        "outside_file": str(outside / "secret.txt"),
        "outside_dir": str(outside),
        "checkout": python.path[0],
    }
    proc = run_as(who, python, DRIVER, json.dumps(spec))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, f"no probe output: {proc.stdout!r} {proc.stderr[-3000:]}"
    return json.loads(lines[-1])


def test_each_block_fires(who, outside):
    got = probe(who, outside, control=False)
    assert got == {
        "read_outside": "EACCES",
        "list_checkout": "EACCES",
        "read_stdlib": "done",
        "write_outside": "EACCES",
        "write_private": "done",
        "connect": "EACCES",
        "bind": "EACCES",
        "signal": "EPERM",
        "exec_written": "EACCES",
        "setgroups": "EPERM",
        "ptrace": "EPERM",
        "child_socket": signal.SIGSYS,
    }
    assert not (outside / "planted").exists()


def test_without_the_confinement_each_attempt_succeeds(who, outside):
    """The control: the same attempts, unconfined, all work (setgroups only as root)."""
    got = probe(who, outside, control=True)
    expected = dict.fromkeys(
        ["read_outside", "list_checkout", "read_stdlib", "write_outside", "write_private"],
        "done",
    )
    expected |= {"connect": "done", "bind": "done", "signal": "done", "exec_written": "done"}
    expected["setgroups"] = "done" if who is None and os.geteuid() == 0 else "EPERM"
    assert got == expected
    assert (outside / "planted").exists()


RUN = r"""
import json, subprocess, sys
head = f"import sys; sys.path[:0] = {json.loads(sys.argv[1])!r}\n"
argv = [sys.executable, "-I", "-c", head + "from lackjail.cli import main; main()"]
def cli(*args, stdin=""):
    proc = subprocess.run([*argv, *args], input=stdin, capture_output=True, text=True, timeout=120)
    return {"code": proc.returncode, "out": proc.stdout, "err": proc.stderr}
print(json.dumps({
    "run": cli("run", "-", "--json", stdin="sorted([3, 1, 2])"),
    "strict": cli("run", "-", "--json", "--policy", "strict", stdin="1"),
    "doctor": cli("doctor"),
}))
"""


@pytest.mark.nsjail
def test_in_an_unprivileged_container_the_default_policy_runs_at_the_landlock_level(
    who, outside, require_nsjail
):
    python = reachable()
    proc = run_as(who, python, RUN, json.dumps(python.path), container=True, cwd=outside)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    run = json.loads(got["run"]["out"])
    assert (got["run"]["code"], run["status"], run["value"], run["isolation"]) == (
        0,
        "ok",
        [1, 2, 3],
        "landlock",
    )
    strict = got["strict"]
    assert strict["code"] == 2 and "Traceback" not in strict["err"]
    message = strict["out"] + strict["err"]
    assert "requires nsjail isolation" in message and "namespaces refused" in message
    doctor = got["doctor"]["out"]
    assert "namespaces refused" in doctor and "isolation level: landlock" in doctor
    assert f"Landlock ABI {landlock.abi_version()}" in doctor


@pytest.mark.nsjail
def test_outside_a_container_the_same_user_gets_nsjail(who, outside, require_nsjail):
    """The ordinary user's run goes through the reachable copy and a user namespace."""
    python = reachable()
    proc = run_as(who, python, RUN, json.dumps(python.path), cwd=outside)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(json.loads(proc.stdout)["run"]["out"])
    assert (run["status"], run["isolation"]) == ("ok", "nsjail")


def test_root_without_cap_setpcap_still_gets_the_landlock_level(tmp_path):
    """A container may drop CAP_SETPCAP: root's zygote cannot lock its securebits then, and
    still drops every capability and confines itself (no_new_privs keeps them dropped)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to drop CAP_SETPCAP")
    python = reachable()
    code = (
        "from lackjail.api import Jail\n"
        "with Jail(workers=1, isolation='landlock') as jail:\n"
        "    r = jail.run('1 + 1')\n"
        "print(r.status, r.value, r.isolation)\n"
    )
    proc = subprocess.run(
        ["setpriv", "--bounding-set=-setpcap", *python.argv(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", **python.env},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["ok", "2", "landlock"]
