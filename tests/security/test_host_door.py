"""The workspace is opened once, by descriptor, and never through a symlink.

Run as root with an ordinary user as the attacker: the user owns the folder
that holds the workspace, so may rename it and put a symlink in its place at
any moment. A Jail keeps the descriptor it opened; a run after the swap acts
in the folder the Jail opened (or refuses), never in what the symlink names.
The same holds for the kit, template and init writers, which once resolved the
workspace path again for every operation.
"""

import os
import pathlib
import shutil
import signal
import tempfile
import threading
from types import SimpleNamespace

import pytest
from host_support import ordinary_user, run_as, session

from lackjail.errors import KitError

pytestmark = pytest.mark.usefixtures("private_state")


@pytest.fixture
def user():
    found = ordinary_user()
    if found is None:
        pytest.skip("needs root: the attacker is another user who owns the workspace's folder")
    return found


@pytest.fixture
def home(user):
    """A folder the user owns (their home, say), every user may enter, holding their workspace
    `ws` (with a file) and, beside it, a folder of root's with a secret."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="lackjail-door-"))
    os.chmod(top, 0o755)
    folder = top / "home"
    (folder / "ws").mkdir(parents=True)
    (folder / "ws" / "notes.txt").write_text("the user's notes\n")
    for path in (folder, folder / "ws", folder / "ws" / "notes.txt"):
        os.chown(path, user.pw_uid, user.pw_gid)
    victim = top / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("root's secret\n")
    os.chmod(victim / "secret.txt", 0o600)
    yield SimpleNamespace(folder=folder, ws=folder / "ws", victim=victim)
    shutil.rmtree(top, ignore_errors=True)


def swap_for_symlink(user, ws: pathlib.Path, target: pathlib.Path) -> None:
    """As USER: move WS aside (to ws.old) and put a symlink to TARGET in its place."""
    done = run_as(
        user.pw_name,
        f"import os; os.rename({str(ws)!r}, {str(ws) + '.old'!r}); "
        f"os.symlink({str(target)!r}, {str(ws)!r})",
    )
    assert done.returncode == 0, done.stderr
    assert ws.is_symlink()


class ScriptedPool:
    """A pool that starts no jail: each run makes CALLS through the run's tool callback, as a
    program would, and answers whether each call succeeded."""

    calls: list = []

    def __init__(self, *args, **kwargs):
        self.mode, self.isolation, self.size = "fresh", "none", 1

    def execute(self, request, call, on_output=None, limits=None):
        outcomes = [call(name, args, {}, None) for name, args in self.calls]
        value = [[o.ok, o.value if o.ok else o.error] for o in outcomes]
        return SimpleNamespace(status="ok", value=value, errors=[], cpu_ms=0.0, max_rss_kb=0)

    def close(self):
        pass


PROGRAM = 'write_file("pwned.txt", "written by the run")\nread_file("secret.txt")\n'


def test_a_workspace_swapped_for_a_symlink_after_the_jail_opened_it_is_never_followed(
    home, user, monkeypatch
):
    """The Jail kept the workspace as a path and each run resolved it again: the owner of the
    folder above it swapped it for a symlink to a folder of root's, and the next run of a root
    controller read and wrote there as root. The run acts in the folder the Jail opened."""
    from lackjail import api

    monkeypatch.setattr(api, "Pool", ScriptedPool)
    monkeypatch.setattr(ScriptedPool, "calls", [("write_file", ["pwned.txt", "x"]),
                                                ("read_file", ["secret.txt"])])  # fmt: skip
    with api.Jail(kit="files", workspace=home.ws) as jail:
        swap_for_symlink(user, home.ws, home.victim)
        result = jail.run(PROGRAM)
    assert sorted(os.listdir(home.victim)) == ["secret.txt"]
    (wrote, _), (read, answer) = result.value
    assert wrote and not read and "secret" not in answer.replace("secret.txt", "")
    moved = home.folder / "ws.old"
    assert (moved / "pwned.txt").read_text() == "x"
    assert os.stat(moved / "pwned.txt").st_uid == user.pw_uid  # made as the owner it opened


@pytest.mark.nsjail
def test_the_real_jail_acts_in_the_folder_it_opened_after_the_swap(require_nsjail, home, user):
    """The same as above with a real jail: the program's calls cross the wire to the session
    the Jail made on its descriptor."""
    from lackjail.api import Jail

    with Jail(kit="files", workspace=home.ws, workers=1) as jail:
        swap_for_symlink(user, home.ws, home.victim)
        result = jail.run('write_file("pwned.txt", "x")\nread_file("notes.txt")')
        secret = jail.run('read_file("secret.txt")')
    assert result.status == "ok" and result.value == "the user's notes\n", result.errors
    assert secret.status == "error" and "root's secret" not in str(secret.to_dict())
    assert sorted(os.listdir(home.victim)) == ["secret.txt"]
    assert (home.folder / "ws.old" / "pwned.txt").read_text() == "x"


def test_a_workspace_that_is_a_symlink_is_refused(home, user):
    """A one-shot `sudo lackjail run --workspace ~u/ws` needs no race: the path the admin
    names is already the user's symlink to a folder of root's."""
    from click.testing import CliRunner

    from lackjail.api import Jail
    from lackjail.cli import cli
    from lackjail.workspace import Root, Workspace

    swap_for_symlink(user, home.ws, home.victim)
    for opener in (Root, Workspace, lambda path: Jail(kit="files", workspace=path)):
        with pytest.raises(KitError, match="is a symlink"):
            opener(home.ws)
    done = CliRunner().invoke(cli, ["run", "--workspace", str(home.ws), "-"], input="1\n")
    assert done.exit_code == 2 and "symlink" in done.output, done.output


def test_a_jail_without_tools_opens_no_workspace(monkeypatch):
    """A Jail with no kit never touches a workspace, so it runs where none could be one (a
    container's `/`); with a kit, `/` is refused when the Jail opens it, not at a run."""
    from lackjail import api

    monkeypatch.setattr(api, "Pool", ScriptedPool)
    monkeypatch.setattr(ScriptedPool, "calls", [])
    monkeypatch.chdir("/")
    with api.Jail() as jail:
        assert jail.run("1 + 1").status == "ok"
    with pytest.raises(KitError, match="whole system"):
        api.Jail(kit="files")


def test_a_symlink_of_another_user_on_the_way_to_the_workspace_is_refused(home, user):
    """Not only the last component: a folder on the way that is a user's symlink could name
    any folder; only root's (or the controller's own) symlinks are followed."""
    from lackjail.workspace import Root

    (home.victim / "sub").mkdir()
    link = home.folder / "link"
    link.symlink_to(home.victim)
    os.lchown(link, user.pw_uid, user.pw_gid)
    with pytest.raises(KitError, match="another user owns"):
        Root(link / "sub")
    os.lchown(link, 0, 0)  # root's own link: the admin's layout, followed
    assert Root(link / "sub").path == str(home.victim / "sub")


def test_kits_templates_and_init_write_beneath_the_workspace_they_opened(home, user):
    """write_kit, the template store and init resolved the workspace path for every write;
    given a symlink they refuse, given a Root they write beneath its descriptor."""
    from click.testing import CliRunner

    from lackjail.cli import cli
    from lackjail.infer.templates import TemplateError, TemplateStore
    from lackjail.kit import write_kit
    from lackjail.workspace import Root

    root = Root(home.ws)
    swap_for_symlink(user, home.ws, home.victim)
    write_kit(root, "mine", "read_file\n")
    TemplateStore.at(root).create("t", "go {x}", "x = {x}\nx")
    assert sorted(os.listdir(home.victim)) == ["secret.txt"]
    moved = home.folder / "ws.old" / ".lackjail"
    assert sorted(os.listdir(moved)) == ["kits", "templates"]
    with pytest.raises(KitError, match="symlink"):
        write_kit(home.ws, "other", "read_file\n")
    with pytest.raises(TemplateError, match="symlink"):
        TemplateStore.at(home.ws).create("u", "do {x}", "x = {x}\nx")
    assert TemplateStore.at(home.ws).record("t", True) is False
    done = CliRunner().invoke(cli, ["init", "--workspace", str(home.ws)])
    assert done.exit_code == 2 and "symlink" in done.output, done.output
    assert sorted(os.listdir(home.victim)) == ["secret.txt"]


def test_a_file_written_in_a_run_reads_back_as_root_with_a_user_s_workspace(home):
    """As root with a non-root owner, a file written earlier in the same run could not be read
    (read_file, edit_file: EACCES): the staged copy lives in the controller's private 0700
    folder and was read with the owner's filesystem identity."""
    s = session(home.ws)
    assert s.call("write_file", ["new.txt", "one\n"], {}).ok
    assert s.call("read_file", ["new.txt"], {}).value == "one\n"
    edited = s.call("edit_file", ["new.txt", "one", "two"], {})
    assert edited.ok, edited.error
    assert s.call("read_file", ["new.txt"], {}).value == "two\n"
    assert s.commit() == ["new.txt"]
    assert (home.ws / "new.txt").read_text() == "two\n"


def test_a_held_template_lock_makes_a_save_or_count_fail_after_a_bounded_wait(
    home, user, monkeypatch
):
    """Any user who can read `.lackjail/templates` can flock it: `delegate` (counting a
    template's run) and `template create` waited forever. They wait LOCK_WAIT_S and fail."""
    import subprocess

    from lackjail.infer import templates
    from lackjail.infer.templates import TemplateError, TemplateStore

    TemplateStore.at(home.ws).create("t", "go {x}", "x = {x}\nx")
    folder = home.ws / ".lackjail" / "templates"
    import others

    python = others.reachable()
    hold = (
        "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)"
    )
    holder = subprocess.Popen(
        ["runuser", "-u", user.pw_name, "--", *python.argv(hold, str(folder))],
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **python.env},
        start_new_session=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(templates, "LOCK_WAIT_S", 0.3)
        answers = []
        worker = threading.Thread(
            target=lambda: answers.append(TemplateStore.at(home.ws).record("t", True)),
            daemon=True,
        )
        worker.start()
        worker.join(60)  # far beyond the wait: before, it never came back
        assert answers == [False]
        with pytest.raises(TemplateError, match="stayed locked"):
            TemplateStore.at(home.ws).create("u", "do {x}", "x = {x}\nx")
    finally:
        os.killpg(holder.pid, signal.SIGKILL)  # runuser and the python it started
        holder.wait()
    assert TemplateStore.at(home.ws).record("t", True) is True


def test_own_config_files_may_be_symlinks_of_ours_but_not_of_another_user(home, user):
    """The user's own config (dotfiles managed by symlinks) is read through the controller's
    own symlinks; a symlink another user owns, in the file's path or as the file, is refused."""
    from lackjail.workspace.hostfs import read_file

    target = home.victim / "config.toml"
    target.write_text("[defaults]\n")
    ours = home.folder / "ours.toml"
    ours.symlink_to(target)
    assert read_file(ours, own_links=True) == b"[defaults]\n"
    with pytest.raises(OSError, match="symlink"):
        read_file(ours)  # a file a user names: no symlink at all
    theirs = home.folder / "theirs.toml"
    theirs.symlink_to(target)
    os.lchown(theirs, user.pw_uid, user.pw_gid)
    with pytest.raises(OSError, match="another user owns"):
        read_file(theirs, own_links=True)
    relative = home.folder / "up"
    relative.symlink_to("../victim")  # a relative target, walked from the link's folder
    assert read_file(relative / "config.toml", own_links=True) == b"[defaults]\n"


def test_a_server_s_kit_list_and_its_other_level_s_jail_stay_in_the_folder_it_opened(
    home, user, monkeypatch
):
    """A root MCP server kept its workspace as a path for list_kits, kit_info and the jail of
    another language level: after the owner swapped the workspace for a symlink to a folder of
    root's, list_kits named root's kit files, and a new level's jail opened the path again."""
    import asyncio

    pytest.importorskip("mcp", reason="the MCP SDK is an optional extra")
    from lackjail import api
    from lackjail.mcp import Served, build_server

    (home.victim / ".lackjail" / "kits").mkdir(parents=True)
    (home.victim / ".lackjail" / "kits" / "roots-only.kit").write_text("read_file\n")
    monkeypatch.setattr(api, "Pool", ScriptedPool)
    monkeypatch.setattr(ScriptedPool, "calls", [("write_file", ["pwned.txt", "x"])])
    with api.Jail(kit="files", workspace=home.ws, language="lackpy") as jail:
        served = Served.ready(jail)
        server = build_server(served)
        swap_for_symlink(user, home.ws, home.victim)
        listed = asyncio.run(server.call_tool("list_kits", {}))
        assert "files" in str(listed) and "roots-only" not in str(listed)
        other = served.jail_for("python")
        try:
            other.run("1")
        finally:
            other.close()
    assert sorted(os.listdir(home.victim)) == [".lackjail", "secret.txt"]
    assert (home.folder / "ws.old" / "pwned.txt").read_text() == "x"
