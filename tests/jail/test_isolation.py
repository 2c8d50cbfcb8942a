"""From inside the real jail, with a test-only probe (not through lackpy): what the
image shows, and what the child's seccomp filter (built on the host) stops."""

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from lackjail.pool import image as images
from lackjail.pool import isolation
from lackjail.pool.syscall_filter import child_filter

CHECKOUT = str(Path(__file__).resolve().parents[2])

PROBE = r"""
import json, os, signal, socket, sys
sys.path.insert(0, '/opt/lackjail')
from lackjail.worker import confine
out = {"uid": os.getuid(), "gid": os.getgid()}
paths = [
    "/root", "/home", "/etc/shadow", "/etc/passwd", "/proc/self", CHECKOUT,
    "/opt/lackjail/lackjail/pool", "/opt/lackjail/lackjail/api.py",
]
out["exists"] = {p: os.path.exists(p) for p in paths}
try:
    out["interfaces"] = [name for _, name in socket.if_nameindex()]
except OSError as exc:
    out["interfaces"] = "socket refused: " + exc.strerror
cache = "/opt/lackjail/lackjail/__pycache__"
out["pycache"] = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
import lackjail.protocol
out["protocol_pyc_fresh"] = None
if os.path.exists(lackjail.protocol.__cached__):
    with open(lackjail.protocol.__cached__, "rb") as fh:  # the header Python checks the source by
        header = fh.read(16)
    source = os.stat(lackjail.protocol.__file__)
    out["protocol_pyc_fresh"] = header[4:16] == (
        bytes(4) + (int(source.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (source.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    )
bpf = confine.prepare_filter(BPF)
tries = {
    "open": "os.open('/dev/null', os.O_RDONLY)",
    "socket": "socket.socket()",
    "execve": "os.execv('/opt/python/bin/python3.12', ['python3.12', '-c', 'pass'])",
    "fork": "os.fork()",
    "compute": "sum(range(1000))",
}
out["after_filter"] = {}
for name, code in tries.items():
    pid = os.fork()
    if pid == 0:
        confine.set_limits(256, 5)
        confine.install_filter(bpf)
        try:
            eval(code)
            os._exit(0)
        except OSError:
            os._exit(13)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        out["after_filter"][name] = "signal %d" % os.WTERMSIG(status)
    else:
        out["after_filter"][name] = "exit %d" % os.WEXITSTATUS(status)
print(json.dumps(out))
""".replace("CHECKOUT", repr(CHECKOUT)).replace("BPF", repr(child_filter()))


@pytest.fixture(scope="module")
def probe(require_nsjail):
    image = images.load_image()
    cfg = images.nsjail_config(image, ["-c", PROBE], isolation.use_user_namespace())
    cfg.pass_fd = []
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as fh:
        fh.write(images.render(cfg))
    try:
        proc = subprocess.run(
            [isolation.nsjail_binary(), "--config", fh.name],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    finally:
        Path(fh.name).unlink()
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_runs_as_nobody(probe):
    assert probe["uid"] == 65534 and probe["gid"] == 65534


def test_host_files_are_absent(probe):
    exists = probe["exists"]
    for path in ("/root", "/home", "/etc/shadow", "/etc/passwd", "/proc/self", CHECKOUT):
        assert exists[path] is False, path
    # only the worker's own files of the package are mounted
    assert exists["/opt/lackjail/lackjail/pool"] is False
    assert exists["/opt/lackjail/lackjail/api.py"] is False


def test_the_jail_holds_the_bytecode_of_its_top_level_modules_and_no_other(probe):
    """Without it the jail, which cannot write, compiles them at every zygote's start."""
    names = ("__init__", "plain", "protocol")
    cache = Path(images.PACKAGE_DIR) / "__pycache__"
    host = sorted(
        f"{n}.cpython-312.pyc" for n in names if (cache / f"{n}.cpython-312.pyc").exists()
    )
    assert probe["pycache"] == host  # not api's, bench's, ...: only what the jail imports
    if "protocol.cpython-312.pyc" in host:
        assert probe["protocol_pyc_fresh"] is True  # so the jail uses it, not the source


def test_no_network_interface(probe):
    interfaces = probe["interfaces"]
    assert isinstance(interfaces, str) and "refused" in interfaces or interfaces in ([], ["lo"])


@pytest.mark.parametrize("call", ["open", "socket", "execve", "fork"])
def test_seccomp_kills_forbidden_calls(probe, call):
    assert probe["after_filter"][call] == "signal 31"  # SIGSYS


def test_seccomp_still_computes(probe):
    assert probe["after_filter"]["compute"] == "exit 0"
