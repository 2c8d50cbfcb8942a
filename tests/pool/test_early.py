"""A command's early jail (`pool.early`): started from the plan the previous command kept, taken
by the pool only when it is exactly the jail the pool would start, killed otherwise; the plan is
read only when it is the user's own. And what a command keeps for the next: the children's
filter, the shared objects a jail mounts."""

import json
import os
import subprocess
import sys

import pytest

from lackjail.policy import load_policy
from lackjail.pool import Pool, Request, early, isolation, syscall_filter
from lackjail.pool import image as images


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder of our own, and no early state left from another test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    early.discard()
    yield tmp_path / "lackjail"
    early.discard()


@pytest.fixture
def waiter(tmp_path):
    """A binary that takes nsjail's arguments and waits for its stdin (the control socket)."""
    path = tmp_path / "waiter"
    path.write_text("#!/bin/sh\nexec cat\n")
    path.chmod(0o755)
    return str(path)


def plan_path(folder):
    return folder / early.PLAN_FILE


def keep(folder, binary="/bin/true", env=None, config="x"):
    folder.mkdir(mode=0o700, exist_ok=True)
    path = plan_path(folder)
    path.write_text(json.dumps({"binary": binary, "env": env or {}, "config": config}))
    path.chmod(0o600)
    return path


def test_a_plan_of_our_own_is_read(cache):
    keep(cache, config="mounts")
    assert early.read_plan() == ("/bin/true", {}, "mounts")


@pytest.mark.parametrize(
    "spoil",
    [
        lambda f, p: p.chmod(0o622),  # others may write the file
        lambda f, p: f.chmod(0o777),  # others may write the folder
        lambda f, p: (p.unlink(), p.symlink_to(f / "elsewhere.json")),  # the file is a symlink
        lambda f, p: p.write_text("{not json"),
        lambda f, p: p.write_text(json.dumps({"binary": "true", "env": {}, "config": "x"})),
        lambda f, p: p.write_text(json.dumps({"binary": "/bin/true", "env": [1], "config": "x"})),
        lambda f, p: os.chown(p, 65534, 65534),  # another user's file
    ],
    ids=["file-writable", "folder-writable", "symlink", "not-json", "relative", "bad-env", "owner"],
)
def test_a_plan_not_ours_alone_or_malformed_is_no_plan(cache, spoil):
    path = keep(cache)
    (cache / "elsewhere.json").write_text(path.read_text())
    if os.geteuid() != 0 and "chown" in repr(spoil.__code__.co_names):
        pytest.skip("only root can give a file to another user")
    spoil(cache, path)
    assert early.read_plan() is None


def test_a_folder_that_is_a_symlink_is_no_plan(cache, tmp_path):
    real = tmp_path / "real"
    keep(real)
    cache.symlink_to(real)
    assert early.read_plan() is None


def test_the_plan_is_written_ours_alone(cache):
    early.write_plan("/usr/bin/nsjail", {"A": "b"}, "text")
    info = os.stat(plan_path(cache))
    assert (info.st_uid, info.st_mode & 0o777) == (os.geteuid(), 0o600)
    assert os.stat(cache).st_mode & 0o077 == 0
    assert early.read_plan() == ("/usr/bin/nsjail", {"A": "b"}, "text")


def test_a_folder_another_could_write_is_not_written(cache):
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    early.write_plan("/usr/bin/nsjail", {}, "text")
    assert not plan_path(cache).exists()


def test_nothing_is_written_through_another_users_symlink_or_folder(tmp_path, monkeypatch):
    """As root in someone else's home: a cache folder reached through a symlink another user
    owns, or inside a folder others may change, is not written (it could lead anywhere)."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a symlink or a folder to another user")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    os.lchown(link, 65534, 65534)
    monkeypatch.setenv("XDG_CACHE_HOME", str(link / "cache"))
    early.write_plan("/usr/bin/nsjail", {}, "text")
    assert list(elsewhere.iterdir()) == []
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared / "cache"))
    early.write_plan("/usr/bin/nsjail", {}, "text")
    assert list(shared.iterdir()) == []
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(mine / "cache"))
    early.write_plan("/usr/bin/nsjail", {}, "text")
    assert early.read_plan() == ("/usr/bin/nsjail", {}, "text")


def launcher(binary, config, level="nsjail"):
    return isolation.Launcher(level, [binary, "--config", "/nowhere"], {}, config_text=config)


def test_a_plan_unlike_the_jail_to_start_is_killed_and_replaced(cache, waiter):
    keep(cache, binary=waiter, config="old")
    early.begin()
    started = early._early
    assert started is not None and started.proc.poll() is None  # it waits on its stdin
    assert early.take(launcher(waiter, "new")) is None
    assert started.proc.returncode is not None  # killed and reaped before the pool starts its own
    assert early.read_plan() == (waiter, {}, "new")
    assert early.take(launcher(waiter, "newer")) is None  # only the first start after begin()
    assert early.read_plan() == (waiter, {}, "new")


def test_the_jail_the_plan_names_is_taken(cache, waiter):
    keep(cache, binary=waiter, config="same")
    early.begin()
    started = early._early
    assert early.take(launcher(waiter, "same")) is started
    assert started.proc.poll() is None
    started.kill()


def test_another_level_takes_nothing_and_keeps_no_plan(cache, waiter):
    keep(cache, binary=waiter, config="same")
    early.begin()
    started = early._early
    assert early.take(launcher(waiter, "same", level="landlock")) is None
    assert started.proc.returncode is not None
    assert early.read_plan() == (waiter, {}, "same")


def test_without_begin_nothing_is_started_or_kept(cache, waiter):
    assert early.take(launcher(waiter, "text")) is None
    assert not cache.exists()


def test_a_command_that_starts_no_jail_leaves_no_early_one(cache, waiter):
    keep(cache, binary=waiter, config="x")
    early.begin()
    started = early._early
    early.discard()
    assert started.proc.returncode is not None


def test_the_pool_runs_in_the_early_jail_when_it_is_the_same(cache, require_nsjail):
    """First command: no plan, the pool starts its own jail and keeps the plan; second: the
    early jail is the pool's first jail (same pid), and runs the program."""
    policy = load_policy("default")
    early.begin()
    pool = Pool(policy, workers=1)
    pool.close()
    assert early.read_plan() is not None
    early.begin()
    started = early._early
    assert started is not None
    pool = Pool(policy, workers=1)
    try:
        assert pool.pids() == [started.proc.pid]
        outcome = pool.execute(Request("1 + 1", {}))
        assert (outcome.status, outcome.value) == ("ok", 2)
    finally:
        pool.close()


def test_a_jail_with_other_limits_is_not_taken(cache, require_nsjail):
    early.begin()
    Pool(load_policy("default"), workers=1).close()
    early.begin()
    started = early._early
    pool = Pool(load_policy("strict"), workers=1)
    try:
        assert started.proc.returncode is not None
        assert pool.pids() != [started.proc.pid]
    finally:
        pool.close()


def test_only_lackjail_run_starts_early():
    from lackjail.console import runs_a_program

    assert runs_a_program(["run", "-"])
    assert runs_a_program(["-q", "run", "x.lackpy", "--json"])
    assert not runs_a_program(["run", "--help"])
    assert not runs_a_program(["check", "run"])
    assert not runs_a_program([])


def test_the_console_command_leaves_no_jail_behind(tmp_path, require_nsjail):
    """The console command, with an early jail taken (second run) and one killed (a policy the
    plan is not for), leaves no process of any jail once it has exited, and its run's writes
    are whole on disk by then: a subreaper gets every orphan, and lists what is left alive at
    once."""
    harness = tmp_path / "harness.py"
    harness.write_text(
        "import ctypes, os, subprocess, sys, psutil\n"
        "ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans come to us\n"
        "proc = subprocess.run(sys.argv[1:], input=b'', capture_output=True)\n"
        "left = [c for c in psutil.Process().children(recursive=True)\n"
        "        if c.status() != psutil.STATUS_ZOMBIE]  # a zombie has ended, unreaped\n"
        "print(proc.returncode, [(c.pid, c.name(), c.status()) for c in left])\n"
        "for c in left:\n"
        "    c.kill()\n"
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    program = tmp_path / "write.lackpy"
    program.write_text("write_file('out.txt', 'x' * 100000)\n")
    console = [os.path.join(os.path.dirname(sys.executable), "lackjail")]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = [*console, "run", str(program), "--kit", "files", "--workspace", str(workspace)]
    for argv in (run, run, [*run, "--policy", "strict", "--yes"]):
        (workspace / "out.txt").unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, str(harness), *argv], capture_output=True, text=True, env=env
        )
        assert done.stdout.strip() == "0 []", done.stderr
        assert (workspace / "out.txt").read_text() == "x" * 100000


def test_a_command_takes_the_filter_the_previous_one_compiled_for_the_same_rules(
    cache, monkeypatch
):
    """The children's BPF is kept per rules and machine: a one-shot command takes it as it is;
    another set of rules (or a process that is no one-shot command) compiles its own."""
    allow_all = b"\x06\x00\x00\x00\x00\x00\xff\x7f"  # BPF: return ALLOW
    key = syscall_filter.filter_key(syscall_filter.BINARY_TREE)
    early.remember("child-filter", key, allow_all.hex())
    assert early.remembered("child-filter", key) is None  # not a one-shot command: nothing
    assert not cache.exists()
    early.begin()
    early.remember("child-filter", key, allow_all.hex())
    assert early.remembered("child-filter", key) == allow_all.hex()
    assert early.remembered("child-filter", key + "x") is None
    syscall_filter.child_filter.cache_clear()
    try:
        assert syscall_filter.child_filter() == allow_all
        monkeypatch.setattr(syscall_filter, "ALLOWED", syscall_filter.ALLOWED[1:])
        syscall_filter.child_filter.cache_clear()
        compiled = syscall_filter.child_filter()
        assert compiled != allow_all and len(compiled) % 8 == 0
        new_key = syscall_filter.filter_key(syscall_filter.BINARY_TREE)
        assert early.remembered("child-filter", new_key) == compiled.hex()  # for the next
    finally:
        syscall_filter.child_filter.cache_clear()


def test_a_kept_filter_that_is_not_whole_instructions_is_compiled_again(cache):
    early.begin()
    key = syscall_filter.filter_key(syscall_filter.BINARY_TREE)
    early.remember("child-filter", key, "060000")
    syscall_filter.child_filter.cache_clear()
    try:
        bpf = syscall_filter.child_filter()
        assert len(bpf) > 8 and len(bpf) % 8 == 0
    finally:
        syscall_filter.child_filter.cache_clear()


def test_the_jails_libraries_are_kept_while_every_file_their_search_read_is_the_same(cache):
    """The shared objects a jail mounts follow from the files the loader's search read (and
    those it found missing): a one-shot command takes the kept list while each of them is the
    same file, and searches again when one is not."""
    early.begin()
    image = images.load_image("python312")
    real = images.library_binds(image)
    kept = cache / f"libraries-{early.INSTALL}.json"
    data = json.loads(kept.read_text())
    assert any(path.endswith("ld.so.cache") for path, _ in data["value"]["files"])
    data["value"]["binds"] = [["/marker", "/opt/marker"]]
    kept.write_text(json.dumps(data))
    assert images.library_binds(image) == [images.Bind("/marker", "/opt/marker")]
    data["value"]["files"][-1][1] = [0, 0, 0, 0, 0]  # that file changed since
    kept.write_text(json.dumps(data))
    assert images.library_binds(image) == real
    early.discard()
    data = json.loads(kept.read_text())
    data["value"]["binds"] = [["/marker", "/opt/marker"]]
    kept.write_text(json.dumps(data))
    assert images.library_binds(image) == real  # not a one-shot command: nothing kept is read
