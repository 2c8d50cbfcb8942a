"""Finding programs: the glob, hidden folders, explicit files, bad paths, and files that must not
block.
"""

import os

import pytest

from lackjail.gate import DiscoveryError, discover
from lackjail.gate.discover import glob_regex
from lackjail.gate.judge import ReadError, read_program


def touch(root, *names):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("1\n")


@pytest.mark.parametrize(
    "pattern, path, matches",
    [
        ("**/*.lackpy", "a.lackpy", True),
        ("**/*.lackpy", "x/y/a.lackpy", True),
        ("**/*.lackpy", "a.lackpy.bak", False),
        ("*.lackpy", "x/a.lackpy", False),
        ("src/**/*.lackpy", "src/a.lackpy", True),
        ("src/**/*.lackpy", "src/p/q/a.lackpy", True),
        ("src/**/*.lackpy", "lib/src/a.lackpy", False),
        ("?.lackpy", "ab.lackpy", False),
        ("[ab].lackpy", "b.lackpy", True),
        ("[!ab].lackpy", "b.lackpy", False),
        ("[!ab].lackpy", "c.lackpy", True),
        ("a+b.lackpy", "a+b.lackpy", True),
        ("a+b.lackpy", "aab.lackpy", False),
    ],
)
def test_glob(pattern, path, matches):
    assert bool(glob_regex(pattern).fullmatch(path)) is matches


@pytest.mark.parametrize("pattern", ["", "/abs/*.lackpy", "a\\b", "[abc"])
def test_bad_globs_are_refused(pattern):
    with pytest.raises(DiscoveryError):
        glob_regex(pattern)


def test_walk_skips_hidden_and_sorts(tmp_path):
    touch(
        tmp_path,
        "b.lackpy",
        "a/z.lackpy",
        "a/notes.txt",
        ".git/x.lackpy",
        ".venv/lib/y.lackpy",
        "a/.tmp.lackpy",
    )
    found = discover([str(tmp_path)], root=str(tmp_path))
    assert [f.name for f in found] == ["a/z.lackpy", "b.lackpy"]
    assert all(os.path.isabs(f.path) for f in found)


def test_explicit_files_count_whatever_the_glob_and_once(tmp_path):
    touch(tmp_path, "prog.py", "a.lackpy")
    found = discover(
        [str(tmp_path / "prog.py"), str(tmp_path), str(tmp_path / "a.lackpy")], root=str(tmp_path)
    )
    assert [f.name for f in found] == ["a.lackpy", "prog.py"]


def test_files_outside_the_root_get_absolute_names(tmp_path):
    touch(tmp_path, "in/a.lackpy", "out/b.lackpy")
    found = discover([str(tmp_path / "in"), str(tmp_path / "out")], root=str(tmp_path / "in"))
    assert [f.name for f in found] == [(tmp_path / "out/b.lackpy").as_posix(), "a.lackpy"]


def test_symlinked_folders_are_not_followed(tmp_path):
    touch(tmp_path, "a/x.lackpy")
    (tmp_path / "a" / "loop").symlink_to(tmp_path)
    assert [f.name for f in discover([str(tmp_path)], root=str(tmp_path))] == ["a/x.lackpy"]


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(DiscoveryError, match="does not exist"):
        discover([str(tmp_path / "nope")])


def test_a_fifo_is_neither_file_nor_folder(tmp_path):
    os.mkfifo(tmp_path / "p.lackpy")
    with pytest.raises(DiscoveryError, match="neither a file nor a folder"):
        discover([str(tmp_path / "p.lackpy")])


def test_reading_a_fifo_found_by_the_walk_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "p.lackpy")
    [found] = discover([str(tmp_path)], root=str(tmp_path))
    with pytest.raises(ReadError, match="not a regular file"):
        read_program(found.path, 1000)


def test_reading_respects_the_size_limit(tmp_path):
    (tmp_path / "big.lackpy").write_text("x = 1\n" * 100)
    with pytest.raises(ReadError) as info:
        read_program(str(tmp_path / "big.lackpy"), 100)
    assert info.value.rule == "limit-source-bytes" and "600 bytes" in str(info.value)
    assert read_program(str(tmp_path / "big.lackpy"), 600) == b"x = 1\n" * 100
