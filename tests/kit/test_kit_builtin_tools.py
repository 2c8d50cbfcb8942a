"""Every confinement attack on the built-in file tools, through the one dispatch path."""

import os
import time

import pytest
from kit_support import no_temp_files

from lackjail.kit import KitError, Workspace


def refused(outcome, *words):
    assert not outcome.ok, outcome
    assert outcome.value is None
    for word in words:
        assert word in outcome.error, outcome.error
    return outcome.error


def test_read_inside_works(session_for):
    s = session_for()
    assert s.call("read_file", ["a.txt"], {}).value == "alpha\n"
    assert s.call("read_file", ["./src//main.py"], {}).value == "print('hi')\n"


def test_dotdot_is_refused(session_for):
    s = session_for()
    refused(s.call("read_file", ["../outside/secret.txt"], {}), "'..'")
    refused(s.call("read_file", ["src/../../outside/secret.txt"], {}), "'..'")
    refused(s.call("read_file", ["src/../a.txt"], {}), "'..'")  # even when it would stay inside


def test_absolute_paths(session_for, ws, outside):
    s = session_for()
    refused(s.call("read_file", [str(outside / "secret.txt")], {}), "outside the workspace")
    refused(s.call("read_file", ["/etc/passwd"], {}), "outside the workspace")
    assert s.call("read_file", [str(ws / "a.txt")], {}).value == "alpha\n"


def test_file_symlink_pointing_out(session_for, ws, outside):
    os.symlink(outside / "secret.txt", ws / "link.txt")
    s = session_for()
    refused(s.call("read_file", ["link.txt"], {}), "symlink")
    refused(s.call("write_file", ["link.txt", "pwned"], {}), "symlink")
    s.commit()
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


def test_directory_symlink_pointing_out(session_for, ws, outside):
    os.symlink(outside, ws / "linkdir")
    s = session_for()
    refused(s.call("read_file", ["linkdir/secret.txt"], {}), "symlink")
    refused(s.call("write_file", ["linkdir/new.txt", "x"], {}), "symlink")
    assert s.call("find_files", ["**/*.txt"], {}).value == ["a.txt"]
    assert s.call("find_files", ["linkdir/*"], {}).value == []
    s.commit()
    assert sorted(os.listdir(outside)) == ["secret.txt"]


def test_dangling_symlink_write_does_not_land_outside(session_for, ws, outside):
    os.symlink(outside / "created.txt", ws / "dangling")
    s = session_for()
    refused(s.call("write_file", ["dangling", "pwned"], {}), "symlink")
    s.commit()
    assert not (outside / "created.txt").exists()


def test_symlink_inside_is_followed_for_reads_and_writes(session_for, ws):
    os.symlink("src/main.py", ws / "alias.py")
    s = session_for()
    assert s.call("read_file", ["alias.py"], {}).value == "print('hi')\n"
    assert s.call("write_file", ["alias.py", "print('new')\n"], {}).ok
    assert s.commit() == ["src/main.py"]
    assert os.path.islink(ws / "alias.py")
    assert (ws / "src" / "main.py").read_text() == "print('new')\n"


def test_nul_byte_and_bad_path_types(session_for):
    s = session_for()
    refused(s.call("read_file", ["a.txt\x00.png"], {}), "NUL")
    refused(s.call("write_file", ["x\x00y", "z"], {}), "NUL")
    refused(s.call("read_file", [""], {}), "empty")
    refused(s.call("read_file", ["a" * 5000], {}), "longer")


def test_proc_self_is_refused(session_for, ws):
    s = session_for()
    refused(s.call("read_file", ["/proc/self/fd/1"], {}), "outside the workspace")
    refused(s.call("read_file", ["/proc/self/environ"], {}), "outside the workspace")
    refused(s.call("write_file", ["/proc/self/fd/1", "forged output"], {}), "outside the workspace")
    os.symlink("/proc/self/fd/1", ws / "stdout")
    os.symlink("/proc/self/environ", ws / "env")
    refused(s.call("read_file", ["stdout"], {}))
    refused(s.call("write_file", ["stdout", "forged output"], {}))
    refused(s.call("read_file", ["env"], {}), "symlink")


def test_dev_zero_is_refused(session_for, ws):
    s = session_for()
    refused(s.call("read_file", ["/dev/zero"], {}), "outside the workspace")
    os.symlink("/dev/zero", ws / "zero")
    refused(s.call("read_file", ["zero"], {}), "symlink")


def test_fifo_and_directories_are_not_files(session_for, ws):
    os.mkfifo(ws / "pipe")
    s = session_for()
    started = time.monotonic()
    refused(s.call("read_file", ["pipe"], {}), "not a regular file")
    assert time.monotonic() - started < 10, "opening a FIFO must not block"
    refused(s.call("write_file", ["pipe", "x"], {}), "not a regular file")
    refused(s.call("read_file", ["src"], {}), "directory")
    refused(s.call("write_file", ["src", "x"], {}), "directory")
    refused(s.call("read_file", ["."], {}), "workspace directory itself")


def test_protected_paths_refuse_writes(session_for, ws):
    (ws / ".git" / "hooks").mkdir(parents=True)
    os.symlink(".git/hooks", ws / "hooks")
    s = session_for()
    refused(s.call("write_file", [".git/hooks/pre-commit", "#!/bin/sh\nrm -rf ~\n"], {}), ".git")
    refused(s.call("write_file", ["hooks/post-checkout", "x"], {}), ".git")
    refused(s.call("write_file", [".lackjail/kits/evil.kit", "write_file\n"], {}), ".lackjail")
    refused(
        s.call("write_file", [".venv/lib/python3.12/site-packages/evil.pth", "import os"], {}),
        "site-packages",
    )
    refused(s.call("write_file", ["evil.pth", "import os"], {}), ".pth")
    s.commit()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists() and not (ws / "evil.pth").exists()


def test_huge_file_read_is_capped_by_the_read_budget(session_for, ws):
    (ws / "big.txt").write_bytes(b"x" * 5000)
    s = session_for(read_bytes=4096)
    out = s.call("read_file", ["big.txt"], {})
    refused(out, "read budget")
    assert out.verdict == "limit"


def test_huge_content_is_refused(session_for, ws):
    s = session_for(write_bytes=1 << 20)
    out = s.call("write_file", ["big.txt", "x" * (2 << 20)], {})
    refused(out, "write budget")
    assert out.verdict == "limit"
    out = s.call("write_file", ["big.txt", "x" * (100 << 20)], {})
    refused(out, "larger than")
    s.commit()
    assert not (ws / "big.txt").exists()


@pytest.mark.parametrize(
    "pattern, word",
    [
        ("../*", "'..'"),
        ("../outside/*", "'..'"),
        ("**/../..", "'..'"),
        ("src/../../*", "'..'"),
        ("/etc/*", "absolute"),
        ("/*", "absolute"),
        ("*\x00", "NUL"),
        ("", "1 to"),
    ],
)
def test_find_files_patterns_reaching_outside(session_for, pattern, word):
    refused(session_for().call("find_files", [pattern], {}), word)


def test_find_files_matches_inside_only(session_for, ws, outside):
    os.symlink(outside / "secret.txt", ws / "out.txt")
    (ws / ".hidden.txt").write_text("h")
    s = session_for()
    assert s.call("find_files", ["*.txt"], {}).value == ["a.txt"]
    assert s.call("find_files", [".*"], {}).value == [".hidden.txt"]
    assert s.call("find_files", ["**/*"], {}).value == ["a.txt", "docs/guide.md", "src/main.py"]
    assert s.call("find_files", ["src/*.py"], {}).value == ["src/main.py"]


def test_workspace_root_must_be_a_project_folder(tmp_path):
    for bad in ("/", "/proc", "/dev", str(tmp_path / "missing")):
        with pytest.raises(KitError):
            Workspace(bad)


def test_commit_rechecks_confinement(session_for, ws, outside):
    s = session_for()
    assert s.call("write_file", ["sub/new.txt", "data"], {}).ok
    os.symlink(outside, ws / "sub")  # a symlink appears between staging and commit
    with pytest.raises(Exception, match="symlink|outside"):
        s.commit()
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert no_temp_files(ws) and no_temp_files(outside)


def test_workspace_kit_file_symlinked_outside_is_refused(tmp_path):
    from lackjail.kit import KitError, resolve_kit

    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET line that a parse error would quote\n")
    kits = tmp_path / "ws" / ".lackjail" / "kits"
    kits.mkdir(parents=True)
    (kits / "evil.kit").symlink_to(secret)
    with pytest.raises(KitError, match="leads outside the workspace") as info:
        resolve_kit("evil", workspace=tmp_path / "ws")
    assert "TOPSECRET" not in str(info.value)
