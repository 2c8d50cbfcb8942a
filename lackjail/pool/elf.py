"""Which shared objects a program loads, found as this host's loader finds them.

A small reader of ELF headers and dynamic sections (DT_NEEDED, DT_RPATH, DT_RUNPATH,
PT_INTERP) and of the loader's cache (/etc/ld.so.cache), and a resolver that follows
ld.so's search order: RPATH (of the object, and of the program, when the object has no
RUNPATH), LD_LIBRARY_PATH, RUNPATH, the cache, the default folders. Nothing is
executed: `ldd` runs the program's own loader, which a hostile binary can choose.
"""

from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass, field

from lackjail.errors import HostError

PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 1, 5, 15, 29
MAX_OBJECTS = 1000  # a closure larger than this is not a Python's
MAX_DYNAMIC = 4096  # entries read from one dynamic section
CACHE_MAGIC = b"glibc-ld.so.cache1.1"
LD_CACHE = "/etc/ld.so.cache"


class ElfError(HostError, ValueError):
    """A file that is not an ELF object this reader understands."""


@dataclass(frozen=True)
class Elf:
    kind: tuple  # (class, byte order, machine): objects must match to load together
    interp: str = ""  # PT_INTERP: the loader a program names
    needed: tuple = ()
    rpath: tuple = ()
    runpath: tuple = ()


def read_elf(path: str) -> Elf:
    """The ELF header and dynamic section of PATH. Raises ElfError or OSError.
    A search folder may hold anything: opened without blocking, and only a regular file is
    read (a FIFO would hang the controller, a device act on being read)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ElfError(f"{path} is not a regular file")
        return _parse(lambda size, at: os.pread(fd, size, at))
    finally:
        os.close(fd)


def _parse(read) -> Elf:
    ident = read(64, 0)
    if (
        len(ident) < 52
        or ident[:4] != b"\x7fELF"
        or ident[4] not in (1, 2)
        or ident[5] not in (1, 2)
    ):
        raise ElfError("not an ELF object")
    wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
    machine = struct.unpack_from(order + "H", ident, 18)[0]
    if wide:
        phoff, phentsize, phnum = (
            *struct.unpack_from(order + "Q", ident, 32),
            *struct.unpack_from(order + "HH", ident, 54),
        )
        ph, dyn = order + "IIQQQQ", order + "qQ"  # p_type, p_flags, p_offset, p_vaddr, _, p_filesz
    else:
        phoff, phentsize, phnum = (
            *struct.unpack_from(order + "I", ident, 28),
            *struct.unpack_from(order + "HH", ident, 42),
        )
        ph, dyn = order + "IIII", order + "iI"  # p_type, p_offset, p_vaddr, _ (then p_filesz)
    loads, dynamic, interp = [], None, ""
    table = read(phentsize * phnum, phoff)
    for i in range(phnum):
        entry = table[i * phentsize : (i + 1) * phentsize]
        if len(entry) < struct.calcsize(ph) + (0 if wide else 4):
            raise ElfError("truncated program headers")
        if wide:
            p_type, _, offset, vaddr, _, filesz = struct.unpack_from(ph, entry)
        else:
            p_type, offset, vaddr, _ = struct.unpack_from(ph, entry)
            filesz = struct.unpack_from(order + "I", entry, 16)[0]
        if p_type == PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (offset, filesz)
        elif p_type == PT_INTERP:
            interp = read(min(filesz, 4096), offset).split(b"\0", 1)[0].decode()
    kind = (ident[4], ident[5], machine)
    if dynamic is None:
        return Elf(kind, interp)
    size = struct.calcsize(dyn)
    data = read(min(dynamic[1], size * MAX_DYNAMIC), dynamic[0])
    tags: list[tuple[int, int]] = []
    for at in range(0, len(data) - size + 1, size):
        tag, value = struct.unpack_from(dyn, data, at)
        if tag == DT_NULL:
            break
        tags.append((tag, value))
    strtab = next((v for t, v in tags if t == DT_STRTAB), None)
    if strtab is None:
        return Elf(kind, interp)
    base = next((off + strtab - va for va, off, sz in loads if va <= strtab < va + sz), None)
    if base is None:
        raise ElfError("the string table is outside every loaded segment")

    def string(at: int) -> str:
        return read(4096, base + at).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")

    def paths(tag: int) -> tuple:
        return tuple(p for t, v in tags if t == tag for p in string(v).split(":") if p)

    needed = tuple(string(v) for t, v in tags if t == DT_NEEDED)
    return Elf(kind, interp, needed, paths(DT_RPATH), paths(DT_RUNPATH))


def read_ld_cache(path: str = LD_CACHE) -> dict[str, list[str]]:
    """soname -> paths, in the cache's order, from glibc's loader cache (the new format,
    alone or after the old one). Empty when there is none or it is not understood."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(64 << 20)
    except OSError:
        return {}
    start = data.find(CACHE_MAGIC)
    if start < 0 or len(data) < start + 48:
        return {}
    nlibs = struct.unpack_from("<I", data, start + 20)[0]
    names: dict[str, list[str]] = {}
    for i in range(min(nlibs, (len(data) - start - 48) // 24)):
        _, key, value = struct.unpack_from("<iII", data, start + 48 + 24 * i)
        names.setdefault(_cstr(data, start + key), []).append(_cstr(data, start + value))
    return names


def _cstr(data: bytes, at: int) -> str:
    end = data.find(b"\0", at)
    return data[at : end if end >= 0 else len(data)].decode("utf-8", "surrogateescape")


@dataclass
class Closure:
    """What loading some ELF objects brings: every shared object, at the path the loader
    opens it by, and the loaders the programs name; the names nothing resolved."""

    objects: dict = field(default_factory=dict)  # path opened -> Elf
    names: dict = field(default_factory=dict)  # path opened -> the DT_NEEDED name it was
    loaders: set = field(default_factory=set)
    missing: list = field(default_factory=list)  # (name, needed by)


def default_dirs(multiarch: str) -> list[str]:
    """The loader's built-in folders, after the cache (Debian's multiarch ones first)."""
    arch = [f"/lib/{multiarch}", f"/usr/lib/{multiarch}"] if multiarch else []
    return [*arch, "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


class Resolver:
    """The host loader's search, for objects of one kind (class, byte order, machine)."""

    def __init__(self, cache=None, dirs=None, env_dirs=None):
        self.cache = read_ld_cache() if cache is None else cache
        self.dirs = default_dirs("") if dirs is None else dirs
        if env_dirs is None:  # as the loader read it when this process started
            env_dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
        self.env_dirs = env_dirs
        self._read: dict[str, Elf | None] = {}

    def closure(self, roots: list[str]) -> Closure:
        """Every shared object ROOTS load (each root an ELF path), transitively."""
        out = Closure()
        queue = []
        for root in roots:
            elf = self._elf(root)
            if elf is not None and root not in out.objects:
                out.objects[root] = elf
                queue.append((root, elf, elf))
        while queue:
            path, elf, program = queue.pop(0)
            if elf.interp:
                out.loaders.add(elf.interp)
            for name in elf.needed:
                found = self.find(name, path, elf, program)
                if found is None:
                    out.missing.append((name, path))
                elif found not in out.objects:
                    out.names[found] = name
                    if len(out.objects) >= MAX_OBJECTS:
                        raise ElfError(f"more than {MAX_OBJECTS} shared objects")
                    dep = out.objects[found] = self._elf(found)
                    if dep is not None:
                        queue.append((found, dep, program))
        return out

    def find(self, name: str, by: str, elf: Elf, program: Elf) -> str | None:
        """Where the loader finds NAME for the object at BY, or None."""
        if "/" in name:
            return name if self._fits(name, elf.kind) else None
        origin = os.path.dirname(by)
        # an object's RPATH counts only where it has no RUNPATH, and only for the names of
        # objects without a RUNPATH (ld.so's order; the loading chain between is not kept)
        searches = [] if elf.runpath else [*elf.rpath, *([] if program.runpath else program.rpath)]
        for folder in [*searches, *self.env_dirs, *elf.runpath]:
            folder = folder.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
            if "$" in folder:  # $LIB, $PLATFORM: this host's loader only knows
                continue
            candidate = os.path.join(folder, name)
            if self._fits(candidate, elf.kind):
                return os.path.normpath(candidate)
        for candidate in self.cache.get(name, []):
            if self._fits(candidate, elf.kind):
                return candidate
        for folder in self.dirs:
            candidate = os.path.join(folder, name)
            if self._fits(candidate, elf.kind):
                return candidate
        return None

    def probed(self) -> list[str]:
        """Every path this resolver has looked at (read, or found missing or unfit), and the
        loader's cache: what its answers follow from, besides the environment."""
        return [LD_CACHE, *self._read]

    def _fits(self, path: str, kind: tuple) -> bool:
        elf = self._elf(path)
        return elf is not None and elf.kind == kind

    def _elf(self, path: str) -> Elf | None:
        if path not in self._read:
            try:
                self._read[path] = read_elf(path)
            except (OSError, ElfError, UnicodeDecodeError, struct.error):
                self._read[path] = None
        return self._read[path]
