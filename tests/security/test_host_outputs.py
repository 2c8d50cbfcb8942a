"""Files a root controller writes or reads for a user never follow the user's symlinks.

Run as root with an ordinary user as the attacker, who owns the folder the
output goes to (or the program file lies in). `batch --output` created,
appended to and truncated whatever a symlink there named; `gate --output`
chmod'ed its temporary file by path, so a temporary file swapped for a
symlink made any file 0644; `run FILE` and `template create FILE` read a
symlinked program (a token in the error), /dev/zero, or hung on a FIFO.
"""

import os
import pathlib
import shutil
import stat
import tempfile
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from host_support import ordinary_user, run_as

from lackjail.cli import cli

pytestmark = pytest.mark.usefixtures("private_state")

TOKEN = "ghp_rootsTokenThatMustNeverBeShown"


@pytest.fixture
def user():
    found = ordinary_user()
    if found is None:
        pytest.skip("needs root: the attacker is another user who owns the output's folder")
    return found


@pytest.fixture
def place(user):
    """`out/`, a folder the user owns (every user may enter), and root's files beside it: a
    login script the user must not write and a token file the user must not read."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="lackjail-outputs-"))
    os.chmod(top, 0o755)
    out = top / "out"
    out.mkdir()
    os.chown(out, user.pw_uid, user.pw_gid)
    profile = top / "profile.sh"
    profile.write_text("export PATH=/usr/bin\n")
    os.chmod(profile, 0o600)
    token = top / "token"
    token.write_text(TOKEN + "\n")
    os.chmod(token, 0o600)
    yield SimpleNamespace(top=top, out=out, profile=profile, token=token)
    shutil.rmtree(top, ignore_errors=True)


def as_user(user, code: str) -> None:
    done = run_as(user.pw_name, code)
    assert done.returncode == 0, done.stderr


def untouched(path: pathlib.Path, text: str) -> bool:
    info = os.stat(path)
    return path.read_text() == text and stat.S_IMODE(info.st_mode) == 0o600


def test_batch_output_through_a_user_s_symlink_is_refused(place, user):
    """The output names a symlink to root's login script: the results (program output, the
    attacker's text) were appended to it as root; a torn last line was cut off in it."""
    source = place.top / "in.jsonl"
    source.write_text('{"id": 1}\n')  # no program: an `invalid` result, no jail needed
    results = place.out / "results.jsonl"
    as_user(user, f"import os; os.symlink({str(place.profile)!r}, {str(results)!r})")
    done = CliRunner().invoke(cli, ["batch", str(source), "--output", str(results)])
    assert done.exit_code == 2 and "symlink" in done.output, done.output
    assert untouched(place.profile, "export PATH=/usr/bin\n")
    place.profile.write_text('{"id": 0, "status": "ok"}\n{"id": 9, "sta')  # a torn line
    os.chmod(place.profile, 0o600)
    again = CliRunner().invoke(cli, ["batch", str(source), "--output", str(results)])
    assert again.exit_code == 2, again.output
    assert place.profile.read_text().endswith('{"id": 9, "sta')  # not cut


def test_batch_output_that_is_a_hard_link_to_another_file_is_refused(place):
    """Where protected_hardlinks is off, a user may hard-link root's login script into their
    folder as the output: appending to it, or cutting a torn line off it, would change the
    script. The hard link is made by root here (always allowed); the check is the same."""
    source = place.top / "in.jsonl"
    source.write_text('{"id": 1}\n')
    results = place.out / "results.jsonl"
    os.link(place.profile, results)
    for text in ('{"id": 0, "status": "ok"}\n', '{"id": 0, "status": "ok"}\n{"id": 9, "sta'):
        place.profile.write_text(text)  # results lines: to append to, or a torn one to cut
        done = CliRunner().invoke(cli, ["batch", str(source), "--output", str(results)])
        assert done.exit_code == 2 and "hard links" in done.output, done.output
        assert untouched(place.profile, text)


def test_batch_output_that_is_a_fifo_is_refused_not_opened(place):
    source = place.top / "in.jsonl"
    source.write_text('{"id": 1}\n')
    fifo = place.out / "results.jsonl"
    os.mkfifo(fifo)
    done = CliRunner().invoke(cli, ["batch", str(source), "--output", str(fifo)])
    assert done.exit_code == 2 and "not a regular file" in done.output, done.output


def test_batch_writes_its_results_as_before(place):
    source = place.top / "in.jsonl"
    source.write_text('{"id": 1}\n{"id": 2}\n')
    results = place.out / "results.jsonl"
    done = CliRunner().invoke(cli, ["batch", str(source), "--output", str(results)])
    assert done.exit_code in (0, 1), done.output
    lines = results.read_text().splitlines()
    assert [line.startswith('{"id": ') for line in lines] == [True, True]
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(results).st_mode) == 0o644 & ~umask


def test_gate_output_never_chmods_through_a_swapped_temporary_file(place, user, monkeypatch):
    """The report went to a temporary file in the user's folder, then `chmod(tmp, 0644)` by
    path: the user swapped the temporary file for a symlink to root's login script in between,
    and root made it 0644 (world-readable). The mode is set on the descriptor now; the swap
    (made as the user, at the fsync before the rename) reaches nothing of root's."""
    programs = place.top / "programs"
    programs.mkdir()
    (programs / "ok.lackpy").write_text("1 + 1\n")
    report = place.out / "report.json"
    real_fsync, swapped = os.fsync, []

    def fsync_then_swap(fd):
        real_fsync(fd)
        for name in os.listdir(place.out):
            if name.endswith(".tmp") and not swapped:
                temp = str(place.out / name)
                as_user(user, f"import os; os.rename({temp!r}, {temp + '.moved'!r}); "
                              f"os.symlink({str(place.profile)!r}, {temp!r})")  # fmt: skip
                swapped.append(name)

    monkeypatch.setattr(os, "fsync", fsync_then_swap)
    done = CliRunner().invoke(cli, ["gate", str(programs), "--format", "json", "--output",
                                    str(report)])  # fmt: skip
    monkeypatch.undo()
    assert swapped, "the gate wrote no temporary file in the output's folder"
    assert untouched(place.profile, "export PATH=/usr/bin\n")
    assert done.exit_code in (0, 2), done.output


def test_gate_output_is_written_whole_with_its_mode(place):
    programs = place.top / "programs"
    programs.mkdir()
    (programs / "ok.lackpy").write_text("1 + 1\n")
    report = place.out / "report.json"
    done = CliRunner().invoke(cli, ["gate", str(programs), "--format", "json", "--output",
                                    str(report)])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert '"ok.lackpy"' in report.read_text() or "ok.lackpy" in report.read_text()
    assert stat.S_IMODE(os.stat(report).st_mode) == 0o644
    assert [p.name for p in place.out.iterdir()] == ["report.json"]


@pytest.mark.parametrize("command", [["run"], ["template", "create", "--name", "t",
                                                "--pattern", "go {x}"]])  # fmt: skip
def test_a_symlinked_program_file_is_refused_and_its_target_never_shown(place, user, command):
    """`sudo lackjail run ~u/prog.lackpy` where the user made prog.lackpy a symlink to a token
    file: root read the token and the validator's error quoted it."""
    program = place.out / "prog.lackpy"
    as_user(user, f"import os; os.symlink({str(place.token)!r}, {str(program)!r})")
    done = CliRunner().invoke(cli, [*command, str(program)])
    assert done.exit_code == 2, done.output
    assert "symlink" in done.output and TOKEN not in done.output, done.output


@pytest.mark.parametrize("command", [["run"], ["template", "create", "--name", "t",
                                                "--pattern", "go {x}"]])  # fmt: skip
def test_a_program_file_that_is_a_fifo_or_a_device_is_never_opened(place, command):
    """A FIFO with no writer hung the command for ever; /dev/zero was read until memory ran
    out. Neither is opened."""
    fifo = place.out / "prog.lackpy"
    os.mkfifo(fifo)
    for path in (fifo, pathlib.Path("/dev/zero")):
        done = CliRunner().invoke(cli, [*command, str(path)])
        assert done.exit_code == 2 and "not a regular file" in done.output, done.output
