"""The escape corpus: every program in corpus/ is rejected or contained, checked from outside.

Each `corpus/<family>/<name>.lackpy` is one program. Metadata lines (`# key: value`, anywhere in the
file, so an encoding declaration can stay on line 1; or in `<name>.lackpy.meta` for files that are
not ASCII-compatible):

    # expect: rejected | contained
    # advisory: the public advisory this case reproduces, if any
    # status: the verdicts a contained run may end with (space-separated)
    # value: the JSON value a contained run must produce
    # forbidden: workspace-relative paths that must not exist afterwards
    # params: JSON object of run parameters
    # language: the level the case is checked and run at (default lackpy)
    # jail: the verdicts its run may end with when the jail's validator is off too (the
    #       python family: every case is run that way as well, see the last suite)

Rejected: `lang.validate` says invalid and `Jail.run` answers "invalid" without running anything.
Contained: the program runs in the real jail (kit: read_file, find_files, write_file, edit_file over
a fresh workspace holding symlinks that lead outside it), and afterwards, seen from outside:

- no canary secret (file contents and names outside the workspace, in /tmp, and in the
  controller's environment) appears anywhere in the result (value, output, errors, trace, diff);
- the canary files are unchanged, and no forbidden write target exists;
- every process below the test is a pool process (nsjail or its Python), each jail holds at
  most its zygote and one waiting child, and no jailed process holds a socket;
- the verdict is one of those the case allows.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from pathlib import Path

import psutil
import pytest

from lackjail import lang
from lackjail.api import Jail
from lackjail.lang.facades import FACADES
from lackjail.policy import load_policy

CORPUS = Path(__file__).parent / "corpus"
KIT = "read_file,find_files,write_file,edit_file"
KIT_TOOLS = ("read_file", "find_files", "write_file", "edit_file")
META = re.compile(
    rb"^# (expect|advisory|status|value|forbidden|params|note|language|jail): (.*)$", re.M
)
FAMILIES = (
    "dunder",
    "format",
    "frames",
    "normalisation",
    "encoding",
    "rebinding",
    "tool_returns",
    "paths",
    "resources",
    "extended",
    "python",
)


def load_case(path: Path) -> dict:
    data = path.read_bytes()
    meta_path = path.with_name(path.name + ".meta")
    meta_src = meta_path.read_bytes() if meta_path.exists() else data
    meta = {k.decode(): v.decode().strip() for k, v in META.findall(meta_src)}
    return {
        "name": f"{path.parent.name}/{path.stem}",
        "family": path.parent.name,
        "source": data,
        **meta,
    }


CASES = [load_case(p) for p in sorted(CORPUS.glob("*/*.lackpy"))]
REJECTED = [c for c in CASES if c.get("expect") == "rejected"]
CONTAINED = [c for c in CASES if c.get("expect") == "contained"]


# -- the corpus itself ---------------------------------------------------------------


def test_corpus_is_complete_and_well_formed():
    assert len(CASES) >= 100, len(CASES)
    assert {c["family"] for c in CASES} == set(FAMILIES)
    for case in CASES:
        assert case.get("expect") in ("rejected", "contained"), case["name"]
        if case["expect"] == "contained":
            assert case.get("status"), (
                f"{case['name']}: a contained case names the verdicts it allows"
            )
    advisories = " ".join(c.get("advisory", "") for c in CASES)
    for advisory in (
        "GHSA-hpcj-3c97-43jm",
        "CVE-2025-5120",
        "CVE-2025-9959",
        "CVE-2026-4963",
        "GHSA-xjw2-6jm9-rf67",
        "CVE-2023-37271",
    ):
        assert advisory in advisories, f"no case reproduces {advisory}"
    sources = b"\n".join(c["source"] for c in CASES)
    for needle in (
        b"find_files('*.txt')\n",
        b"str(x)",
        b"' * 1000000000",
        b"range(10000000000)",
        b"print(",
    ):
        assert needle in sources


# -- the world around the jail: canaries, workspace, forbidden targets --------------


class World:
    """Canary secrets outside the workspace, and a workspace with ways out of it."""

    def __init__(self, root: Path):
        self.root = root
        self.secrets = [f"CANARY-{secrets.token_hex(12)}" for _ in range(5)]
        self.outside = root / "outside"
        self.tmp_canary = Path(f"/tmp/lackjail-canary-{secrets.token_hex(6)}")
        self.workspace = root / "ws"
        self.env_name = "LACKJAIL_TEST_CANARY"
        self.canaries = {
            self.outside / "secret.txt": f"canary {self.secrets[0]}\n",
            self.outside / f"{self.secrets[1]}.txt": "a secret file name\n",
            root / "secret.txt": f"canary {self.secrets[2]}\n",
            self.tmp_canary / "secret.txt": f"canary {self.secrets[3]}\n",
        }
        for path, text in self.canaries.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.workspace.mkdir()
        self.listings = {d: sorted(os.listdir(d)) for d in (self.outside, root, self.tmp_canary)}
        self.forbidden = [
            self.outside / "pwned.txt",
            root / "pwned.txt",
            self.tmp_canary / "pwned.txt",
        ]

    def reset_workspace(self):
        """Empty the workspace and fill it again; the folder itself stays (a Jail holds the
        folder it opened, not its path)."""
        ws = self.workspace
        ws.mkdir(parents=True, exist_ok=True)
        for child in ws.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        (ws / "sub").mkdir()
        (ws / ".git").mkdir()
        (ws / ".git" / "config").write_text("[core]\n")
        (ws / "notes.txt").write_text("hello notes\n")
        (ws / "sub" / "readme.md").write_text("# readme\n")
        (ws / "link_file").symlink_to(self.outside / "secret.txt")
        (ws / "link_out").symlink_to(self.outside)
        (ws / "link_tmp").symlink_to(self.tmp_canary)
        (ws / "proc_root").symlink_to("/proc/self/root")
        (ws / "loop").symlink_to(".")

    def fill(self, source: bytes) -> bytes:
        for key, value in {
            "@CANARY_FILE@": self.outside / "secret.txt",
            "@OUTSIDE@": self.outside,
            "@TMP_CANARY@": self.tmp_canary,
            "@WORKSPACE@": self.workspace,
        }.items():
            source = source.replace(key.encode(), str(value).encode())
        return source

    def close(self):
        shutil.rmtree(self.tmp_canary, ignore_errors=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("security"))
    os.environ[w.env_name] = w.secrets[4]  # the controller's environment is a canary too
    try:
        yield w
    finally:
        os.environ.pop(w.env_name, None)
        w.close()


@pytest.fixture(scope="module")
def jails(require_nsjail, world):
    """One jail per language level, over the same workspace and limits."""
    base = load_policy("default")
    limits = base.limits.__class__(
        wall_s=4.0,
        cpu_s=1,
        memory_mb=128,
        output_bytes=100_000,
        value_bytes=1_000_000,
        tool_calls=1000,
    )
    world.reset_workspace()
    policy = base.replace(limits=limits)
    with (
        Jail(policy=policy, kit=KIT, workers=2, workspace=str(world.workspace)) as lackpy,
        Jail(
            policy=policy.replace(language="extended"),
            kit=KIT,
            workers=1,
            workspace=str(world.workspace),
        ) as extended,
        Jail(
            policy=policy, kit=KIT, workers=1, workspace=str(world.workspace), language="python"
        ) as python,
    ):
        assert lackpy.pool.wait_full(30) and extended.pool.wait_full(30)
        assert python.pool.wait_full(30)
        yield {"lackpy": lackpy, "extended": extended, "python": python}


@pytest.fixture(scope="module")
def jail(jails):
    return jails["lackpy"]


# -- what "contained" means, checked from outside ------------------------------------


def _pool_processes(jail):
    """{nsjail pid: [python pids below it]} and every descendant of this test process."""
    tree = {}
    for pid in jail.pool.pids():
        try:
            tree[pid] = [p.pid for p in psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    return tree, psutil.Process().children(recursive=True)


def _sockets(pid: int) -> list[str]:
    try:
        return [
            os.readlink(f"/proc/{pid}/fd/{fd}")
            for fd in os.listdir(f"/proc/{pid}/fd")
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        ]
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []


def _held_sockets(tree) -> dict[int, set[str]]:
    """Sockets held beyond what each process may hold: the zygote its control socket (fds 0
    and 1), a child none."""
    extra = {}
    for ns, kids in tree.items():
        try:
            zygotes = {p.pid for p in psutil.Process(ns).children()}
        except psutil.NoSuchProcess:
            continue
        for pid in kids:
            held = set(_sockets(pid))
            if len(held) > (1 if pid in zygotes else 0):
                extra[pid] = held
    return extra


def assert_no_stray_processes(jail, before: set[int]):
    """Checked until it holds (bounded): a child forked a moment ago still has the zygote's
    descriptors until its first steps close them, and a spare that kept one would keep it."""
    deadline = time.monotonic() + 5
    while True:
        tree, everyone = _pool_processes(jail)
        most = 1 + jail.policy.pool.spares  # the zygote and its children forked ahead
        crowded = {ns: kids for ns, kids in tree.items() if len(kids) > most}
        strangers = []
        for proc in everyone:
            try:
                name = proc.name()
            except psutil.NoSuchProcess:
                continue
            if proc.pid in before:
                continue
            if not ("nsjail" in name or name.startswith("python")):
                strangers.append((proc.pid, name))
        sockets = _held_sockets(tree)
        if not crowded and not strangers and not sockets:
            break
        if time.monotonic() > deadline:
            pytest.fail(
                f"processes beyond the pool: crowded jails {crowded}, strangers {strangers}, "
                f"sockets held beyond the zygote's own {sockets}"
            )
        time.sleep(0.05)


def assert_no_leak(world, result, forbidden_rel: list[str]):
    blob = json.dumps(result.to_dict(), default=repr, ensure_ascii=False)
    for secret in world.secrets:
        assert secret not in blob, f"canary {secret} leaked into the result: {blob[:2000]}"
    for path, text in world.canaries.items():
        assert path.read_text() == text, f"canary {path} was changed"
    for folder, listing in world.listings.items():
        assert sorted(os.listdir(folder)) == listing, f"{folder} changed: {os.listdir(folder)}"
    for path in world.forbidden:
        assert not path.exists(), f"forbidden target {path} exists"
    for rel in forbidden_rel:
        assert not os.path.lexists(world.workspace / rel), (
            f"forbidden workspace target {rel} exists"
        )
    assert (world.workspace / "link_file").is_symlink() or not (
        world.workspace / "link_file"
    ).exists()


# -- the suites -----------------------------------------------------------------------


@pytest.mark.parametrize("case", REJECTED, ids=[c["name"] for c in REJECTED])
def test_rejected(jails, case):
    language = case.get("language", "lackpy")
    jail = jails[language]
    params = json.loads(case.get("params", "{}"))
    check = lang.validate(case["source"], tools=KIT_TOOLS, params=list(params), language=language)
    result = jail.run(case["source"], params=params)
    assert result.status == "invalid", (result.status, result.errors, result.output)
    assert result.errors and all(e.get("message") for e in result.errors)
    assert result.trace == [] and result.output == "" and result.value is None
    if not any(name.startswith("_") or name in lang.ALLOWED_BUILTINS for name in params):
        assert not check.valid, "the validator accepted a program the corpus says it must reject"


@pytest.mark.parametrize("case", CONTAINED, ids=[c["name"] for c in CONTAINED])
def test_contained(jails, world, case):
    world.reset_workspace()
    language = case.get("language", "lackpy")
    jail = jails[language]
    params = json.loads(case.get("params", "{}"))
    source = world.fill(case["source"])
    check = lang.validate(source, tools=KIT_TOOLS, params=list(params), language=language)
    assert check.valid, (
        f"a contained case must reach the jail: {[e.to_dict() for e in check.errors]}"
    )
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    result = jail.run(source, params=params)
    assert result.isolation == "nsjail"
    assert result.status in case["status"].split(), (
        result.status,
        result.errors,
        result.output[:500],
    )
    if "value" in case:
        assert result.value == json.loads(case["value"]), result
    assert_no_leak(world, result, case.get("forbidden", "").split())
    assert_no_stray_processes(jail, before)
    if result.status != "ok":
        assert result.errors and result.errors[0]["message"], result
        assert result.written == [], "a run that failed must not write"


def test_jail_still_serves_after_the_corpus(jail, world):
    world.reset_workspace()
    result = jail.run("x = read_file('notes.txt')\n[len(x), find_files('*.txt')]")
    assert (result.status, result.value) == ("ok", [12, ["notes.txt"]])
    assert jail.pool.wait_full(15) and len(jail.pool.pids()) == 2


# -- the python level without its validator ------------------------------------------
#
# Every case of the python family is run once more with the validator off on both sides (the
# controller's check answers "valid"; the jail mounts a copy of the worker package whose
# lang.validate_tree only parses): what the restricted namespace, the facades, the runner and
# the kernel jail do alone must still keep every canary in and every target unwritten.

PYTHON = [c for c in CASES if c["family"] == "python"]
_UNCHECKED = """

def validate_tree(source, **options):  # this copy's validator is off: the escape tests
    import _ast

    text = decode_source(source)
    tree = compile(text, "<lackpy>", "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
    return ValidationResult(True, [], [], []), tree
"""


@pytest.fixture(scope="module")
def unvalidated(require_nsjail, world, tmp_path_factory):
    """A python-level jail whose validator is off in the controller and in the jail."""
    from lackjail.lang import ValidationResult
    from lackjail.pool import image, isolation

    package = Path(lang.__file__).resolve().parents[1]
    copy = tmp_path_factory.mktemp("unvalidated") / "lackjail"
    copy.mkdir()
    for name in ("__init__.py", "protocol.py", "plain.py"):
        shutil.copy(package / name, copy / name)
    for folder in ("lang", "worker"):
        shutil.copytree(package / folder, copy / folder, ignore=shutil.ignore_patterns("*.pyc"))
    with open(copy / "lang" / "__init__.py", "a") as fh:
        fh.write(_UNCHECKED)
    base = load_policy("default")
    limits = base.limits.__class__(
        wall_s=4.0, cpu_s=1, memory_mb=128, output_bytes=100_000, value_bytes=1_000_000
    )
    world.reset_workspace()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(image, "PACKAGE_DIR", copy)
        isolation._nsjail_config_text.cache_clear()
        try:
            with Jail(
                policy=base.replace(limits=limits),
                kit=KIT,
                workers=1,
                workspace=str(world.workspace),
                language="python",
            ) as jail:
                # every verdict "valid", needing every module (the zygote loads a module a
                # verdict names before it lends a child: a child cannot import)
                everything = ValidationResult(True, [], [], [], tuple(FACADES))
                patch.setattr(jail.checker, "check", lambda *a, **k: everything)
                assert jail.pool.wait_full(30)
                probe = jail.run("x = __builtins__\nlen(x)")
                assert probe.status == "ok", "the copy's validator is on: the suite proves nothing"
                yield jail
        finally:
            isolation._nsjail_config_text.cache_clear()


def test_the_python_family_is_judged_at_both_layers():
    assert len(PYTHON) >= 40
    for case in PYTHON:
        assert case.get("language") == "python", case["name"]
        assert case.get("jail"), f"{case['name']}: no verdicts for its run without the validator"
    assert sum(c["expect"] == "rejected" for c in PYTHON) >= 30


@pytest.mark.parametrize("case", PYTHON, ids=[c["name"] for c in PYTHON])
def test_contained_without_the_validator(unvalidated, world, case):
    world.reset_workspace()
    source = world.fill(case["source"])
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    result = unvalidated.run(source)
    assert result.isolation == "nsjail"
    assert result.status in case["jail"].split(), (
        result.status,
        result.errors,
        result.output[:500],
    )
    assert_no_leak(world, result, case.get("forbidden", "").split())
    assert_no_stray_processes(unvalidated, before)
