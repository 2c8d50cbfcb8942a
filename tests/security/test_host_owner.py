"""The controller acts as the workspace's owner; commits make no set-id file.

Run as root, a workspace owned by an ordinary user is accessed with that
user's filesystem identity: the kernel refuses what the owner could not do,
a replaced file keeps its owner and group, new files get their folder's
owner, and set-id or sticky bits are never written. The same suite also runs
as that ordinary user (runuser) where root is not needed.
"""

import ctypes
import os
import pathlib
import pwd
import shutil
import stat
import tempfile

import pytest
from host_support import SYS_RENAMEAT2, ordinary_user, run_as, session

from lackjail.errors import CommitError

pytestmark = pytest.mark.usefixtures("private_state")


# The head of the scripts below: a Workspace and budgets that never stop a read or write.
WORKSPACE = """from lackjail.workspace import Workspace

class Budget:
    max_read = 1 << 30
    def read_allowance(self): return 1 << 30
    def charge_read(self, n): pass
    def check_write(self, n): pass
    def charge_write(self, n): pass
"""


@pytest.fixture
def user():
    found = ordinary_user()
    if found is None:
        pytest.skip("needs root: it makes a workspace owned by another user")
    return found


@pytest.fixture
def reachable(tmp_path):
    """A folder every user may enter (pytest's own tmp folders are private to root)."""
    folder = tempfile.mkdtemp(prefix="lackjail-owner-")
    os.chmod(folder, 0o755)
    yield pathlib.Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def users_ws(reachable, user):
    """A workspace owned by the test user."""
    root = reachable / "ws"
    root.mkdir()
    (root / "tool").write_text("#!/bin/sh\necho hi\n")
    for path in (root, root / "tool"):
        os.chown(path, user.pw_uid, user.pw_gid)
    os.chmod(root / "tool", 0o4755)  # set-uid, owned by the user
    return root


def test_edit_of_a_setuid_file_keeps_its_owner_and_drops_set_id(users_ws, user):
    s = session(users_ws)
    assert s.call("edit_file", ["tool", "hi", "bye"], {}).ok
    assert s.commit() == ["tool"]
    info = os.stat(users_ws / "tool")
    assert (info.st_uid, info.st_gid) == (user.pw_uid, user.pw_gid)
    assert stat.S_IMODE(info.st_mode) == 0o755  # no set-uid, no root-owned set-uid binary
    assert (users_ws / "tool").read_text() == "#!/bin/sh\necho bye\n"


def test_new_files_and_folders_get_the_folder_owner_and_plain_modes(users_ws, user):
    s = session(users_ws)
    assert s.call("write_file", ["new/deep/file.txt", "x"], {}).ok
    assert s.commit() == ["new/deep/file.txt"]
    for path, mode in (
        (users_ws / "new", 0o755),
        (users_ws / "new" / "deep", 0o755),
        (users_ws / "new" / "deep" / "file.txt", 0o644),
    ):
        info = os.stat(path)
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (
            user.pw_uid,
            user.pw_gid,
            mode,
        ), path


def test_kits_and_templates_are_saved_as_the_workspace_owner(users_ws, user):
    """`lackjail kit create` and `lackjail template create` run as root made `.lackjail/kits`,
    `.lackjail/templates` and the files in them owned by root in the user's workspace (the
    user could then no longer change them), and saved templates as root in a root-owned
    `.lackjail/templates`; they are made as the workspace's owner, like a commit's files."""
    from lackjail.infer.templates import TemplateError, TemplateStore
    from lackjail.kit import write_kit

    write_kit(users_ws, "mine", "read_file\n")
    store = TemplateStore.at(users_ws)
    store.create("t", "go {x}", "x = {x}\nx")
    made = [".lackjail", ".lackjail/kits", ".lackjail/kits/mine.kit", ".lackjail/templates"]
    made += [".lackjail/templates/t.tmpl"]
    for rel in made:
        info = os.stat(users_ws / rel)
        assert (info.st_uid, info.st_gid) == (user.pw_uid, user.pw_gid), rel
    locked = users_ws / ".lackjail" / "templates"
    os.chown(locked, 0, 0)  # a folder root owns in the user's workspace
    with pytest.raises(TemplateError, match="Permission denied"):
        TemplateStore.at(users_ws).create("u", "do {x}", "x = {x}\nx")
    assert not (locked / "u.tmpl").exists()


def test_a_folder_swapped_in_while_a_commit_makes_one_is_never_given_away(
    users_ws, user, monkeypatch
):
    """A folder of another user (nobody) in the workspace holds the owner's private folder; a
    program writes a file in a new folder there. The commit made the folder, then opened it by
    name and gave it the parent's owner: a process that swapped the new folder with the private
    one in between (renameat2 RENAME_EXCHANGE; nobody owns their parent, so may) had the private
    folder, and what is in it, chowned to nobody. The swap is made here right after the mkdir;
    only a folder as mkdir makes it (empty, the owner's) is given away."""
    nobody = pwd.getpwnam("nobody")
    shared = users_ws / "shared"
    (shared / "private").mkdir(parents=True)
    (shared / "private" / "diary.txt").write_text("the owner's diary\n")
    os.chown(shared, nobody.pw_uid, nobody.pw_gid)
    os.chmod(shared, 0o777)
    for path in (shared / "private", shared / "private" / "diary.txt"):
        os.chown(path, user.pw_uid, user.pw_gid)
    os.chmod(shared / "private", 0o700)
    real_mkdir, libc = os.mkdir, ctypes.CDLL(None, use_errno=True)

    def mkdir_then_swap(name, mode=0o777, *, dir_fd=None):
        real_mkdir(name, mode, dir_fd=dir_fd)
        if name == "new":  # the other process wins the race
            assert libc.syscall(SYS_RENAMEAT2, dir_fd, b"new", dir_fd, b"private", 2) == 0

    s = session(users_ws)
    assert s.call("write_file", ["shared/new/f.txt", "x"], {}).ok
    monkeypatch.setattr(os, "mkdir", mkdir_then_swap)
    with pytest.raises(CommitError) as caught:
        s.commit()
    monkeypatch.undo()
    for name in ("new", "private"):
        if (shared / name / "diary.txt").exists():
            assert os.stat(shared / name).st_uid == user.pw_uid, "given away"
    assert "changed while it was made" in str(caught.value)


def test_init_sets_a_project_up_as_the_workspace_owner(users_ws, user, tmp_path, monkeypatch):
    """`lackjail init` run as root made `.lackjail/`, its config, kit and template owned by root
    in the user's project (the user could not edit them), writing by path after a symlink check:
    a `.lackjail` swapped for a symlink after the check sent root's writes elsewhere."""
    from click.testing import CliRunner

    from lackjail.cli import cli

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    made = CliRunner().invoke(cli, ["init", "--workspace", str(users_ws)])
    assert made.exit_code == 0, made.output
    for rel in (".lackjail", ".lackjail/config.toml", ".lackjail/kits/project.kit"):
        info = os.stat(users_ws / rel)
        assert (info.st_uid, info.st_gid) == (user.pw_uid, user.pw_gid), rel
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(users_ws / ".lackjail")
    (users_ws / ".lackjail").symlink_to(elsewhere)
    monkeypatch.setattr(os.path, "islink", lambda path: False)  # swapped in after the check
    swapped = CliRunner().invoke(cli, ["init", "--workspace", str(users_ws)])
    monkeypatch.undo()
    assert swapped.exit_code == 2 and "cannot set up" in swapped.output
    assert list(elsewhere.iterdir()) == []


def test_kernel_permission_checks_apply_as_the_owner(users_ws):
    (users_ws / "root-only.txt").write_text("root's secret\n")
    os.chmod(users_ws / "root-only.txt", 0o600)  # owned by root
    locked = users_ws / "locked"
    locked.mkdir()
    os.chmod(locked, 0o755)  # owned by root: the workspace owner may not create files in it
    s = session(users_ws)
    out = s.call("read_file", ["root-only.txt"], {})
    assert not out.ok and "permission denied" in out.error
    assert s.call(
        "write_file", ["locked/new.txt", "x"], {}
    ).ok  # staged; the commit asks the kernel
    with pytest.raises(Exception, match="Permission denied|permission denied"):
        s.commit()
    assert os.listdir(locked) == []
    assert os.geteuid() == 0 and os.getuid() == 0  # the controller itself stayed root


def test_root_s_supplementary_groups_do_not_lend_access(users_ws, tmp_path):
    """Root usually has supplementary groups (a container's root: 0, 1, 2, 3, 4, 6, 10, ...);
    setfsuid/setfsgid left them in place, so a file of group root, mode 0640 or 0660, in the
    workspace was read through them though its owner may not. The thread acting as the owner
    takes the owner's groups too."""
    import subprocess
    import sys

    (users_ws / "group-root.txt").write_text("root group's secret\n")
    os.chmod(users_ws / "group-root.txt", 0o660)  # root:root
    code = f"""
import os
os.setgroups([0, 4])
{WORKSPACE}
ws = Workspace({str(users_ws)!r})
view = ws.view(Budget(), writable=True)
try:
    print(view.read_bytes("group-root.txt"))
except Exception as exc:
    print(exc)
view.write_bytes("group-root.txt", b"overwritten")
ws.merge(view)
try:
    ws.commit()
except Exception as exc:
    print(exc)
assert os.getgroups() == [0, 4]  # the controller's own groups are back
"""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "secret" not in proc.stdout and "permission denied" in proc.stdout
    assert (users_ws / "group-root.txt").read_text() == "root group's secret\n"


def test_the_same_rules_hold_run_as_an_ordinary_user(users_ws, user, reachable):
    (users_ws / "root-only.txt").write_text("root's secret\n")
    os.chmod(users_ws / "root-only.txt", 0o600)
    state = reachable / "user-state"
    state.mkdir()
    os.chown(state, user.pw_uid, user.pw_gid)
    code = f"""
import os
{WORKSPACE}
ws = Workspace({str(users_ws)!r})
view = ws.view(Budget(), writable=True)
try:
    view.read_bytes("root-only.txt")
    raise SystemExit("read a file its owner may not read")
except Exception as exc:
    assert "permission denied" in str(exc), exc
data = view.read_bytes("tool").replace(b"hi", b"bye")
view.write_bytes("tool", data)
view.write_bytes("sub/new.txt", b"x")
ws.merge(view)
assert ws.commit() == ["sub/new.txt", "tool"]
print(oct(os.stat({str(users_ws / "tool")!r}).st_mode & 0o7777))
"""
    proc = run_as(user.pw_name, code, env={"XDG_STATE_HOME": str(state)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0o755"
    assert os.stat(users_ws / "sub" / "new.txt").st_uid == user.pw_uid
