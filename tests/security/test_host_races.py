"""Check-then-use races on host file access.

A second process swaps a folder of the workspace with a symlink to a folder
outside it (renameat2 RENAME_EXCHANGE) as fast as it can while the program's
reads and commits go on. Every path is resolved by the kernel beneath the
workspace descriptor, so the swap can make a call fail but never reach out:
0 escapes in at least 500 attempts each, with openat2 and with the fallback walk.
"""

import os

import pytest
from host_support import session, swapper

from lackjail.workspace import beneath

ATTEMPTS = 500
pytestmark = pytest.mark.usefixtures("private_state")


@pytest.fixture(params=["openat2", "walk"])
def resolution(request, monkeypatch):
    """Run the test with the kernel's openat2, then with the O_NOFOLLOW walk it falls back to."""
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2; the walk variant covers the fallback")
    monkeypatch.setattr(beneath, "_have_openat2", request.param == "openat2")
    return request.param


@pytest.fixture
def racing(tmp_path):
    """(workspace, outside folder, fd of the inside folder) with a swapper running on d <-> s."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "x").write_text("inside\n")
    (outside / "x").write_text("SECRET\n")
    os.symlink(outside, ws / "s")
    inside_fd = os.open(ws / "d", os.O_RDONLY | os.O_DIRECTORY)
    proc = swapper(ws, "d", "s")
    try:
        yield ws, outside, inside_fd
    finally:
        proc.kill()
        proc.wait()
        os.close(inside_fd)


def test_reads_never_escape_while_a_folder_is_swapped(racing, resolution):
    ws, outside, _ = racing
    s = session(ws)
    outcomes = {"inside": 0, "refused": 0, "escaped": 0}
    for _ in range(ATTEMPTS):
        out = s.call("read_file", ["d/x"], {})
        if out.ok:
            outcomes["escaped" if "SECRET" in out.value else "inside"] += 1
        else:
            outcomes["refused"] += 1
    print(f"reads ({resolution}): {outcomes}")
    assert outcomes["escaped"] == 0, outcomes
    assert sum(outcomes.values()) >= ATTEMPTS


def test_commits_never_land_outside_while_a_folder_is_swapped(racing, resolution):
    ws, outside, inside_fd = racing
    outcomes = {"inside": 0, "refused": 0, "escaped": 0}
    for attempt in range(ATTEMPTS):
        with session(ws) as s:
            staged = s.call("write_file", ["d/new.txt", f"attempt {attempt}\n"], {})
            try:
                written = s.commit() if staged.ok else []
            except Exception:
                written = []
        if os.path.exists(outside / "new.txt"):
            outcomes["escaped"] += 1
            os.unlink(outside / "new.txt")
        elif written:
            outcomes["inside"] += 1
        else:
            outcomes["refused"] += 1
        try:
            os.unlink("new.txt", dir_fd=inside_fd)
        except FileNotFoundError:
            pass
    print(f"commits ({resolution}): {outcomes}")
    assert outcomes["escaped"] == 0, outcomes
    assert sorted(os.listdir(outside)) == ["x"]
    assert (outside / "x").read_text() == "SECRET\n"
