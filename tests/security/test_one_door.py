"""Every host file the controller touches goes through one door: `lackjail.workspace.hostfs`.

This walks the package's source and fails on any call that opens, creates,
changes or removes a file by path outside the door (and `beneath`, the
kernel-confined resolution it builds on): `open()`, `os.open`, `os.chmod`,
`os.chown`, `shutil.*`, `tempfile.*`, pathlib's reads and writes, and the
by-name `os` calls without a `dir_fd`. A root controller that resolves a
path and then acts on it by name acts on whatever a user swapped in
meanwhile. The few calls that provably touch no user-influenced path are
listed in ALLOWED, each with its reason.
"""

import ast
import fnmatch
import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lackjail"
DOOR = {"workspace/hostfs.py", "workspace/beneath.py", "workspace/hostdir.py"}

# (module path below lackjail/, call as written) -> why it touches no path a user influences
ALLOWED = {
    ("bench/*.py", "*"): "benchmarks work in temporary folders of their own and read /proc",
    ("worker/*.py", "*"): "runs inside the jail, never as the controller",
    ("doctor.py", ".read_text"): "reads kernel files under /proc and /sys",
    ("pool/image.py", ".read_text"): "the sandbox image's own files, shipped in the package",
    ("kit/assembly/docs.py", ".read_text"): "docs shipped in the package, found by name",
    ("pool/elf.py", "os.open"): "the interpreter's ELF files, found by lackjail on the system",
    ("pool/elf.py", "open"): "the loader cache (/etc/ld.so.cache), the system's own",
    ("pool/isolation.py", "shutil.which"): "finds nsjail on PATH, opens nothing",
    ("pool/isolation.py", "tempfile.mkdtemp"): "the landlock zygote's new private folder (0700)",
    ("pool/isolation.py", "shutil.rmtree"): "removes that folder; rmtree works by descriptor "
    "here (see the test below), so what the jail left in it cannot lead it out",
    ("pool/spawn.py", "open"): "/proc/PID/task/PID/children of a jail's own nsjail process, "
    "and the jail's log: an anonymous file in memory (memfd), no path at all",
    ("server/client.py", "os.open"): "the working folder itself ('.', O_PATH), handed to the "
    "server as it is",
    ("server/place.py", "os.open"): "/proc/self and /proc/PID of the server's peer (read only): "
    "the kernel's files of a process",
    ("server/serve.py", "open"): "/proc/self/maps and /proc/PID/task/TID/children: the "
    "kernel's files of this very process",
    ("server/serve.py", "os.open"): "/dev/null, put over a finished command's stdio",
    ("workspace/commit.py", "tempfile.gettempdir"): "names the temp folder; the journal folder "
    "in it is opened and checked through the door",
    ("workspace/staging.py", "tempfile.mkdtemp"): "the run's new private folder (0700)",
    ("workspace/staging.py", "shutil.rmtree"): "removes that private folder, which no user can "
    "enter",
}

ALWAYS = {  # module -> functions that act on a path by name, whatever the arguments
    "os": {"open", "chmod", "lchmod", "chown", "lchown", "truncate", "mkfifo", "mknod",
           "makedirs", "removedirs", "renames", "chroot", "chdir"},
    "io": {"open"},
    "builtins": {"open"},
    "shutil": {"*"},
    "tempfile": {"*"},
}  # fmt: skip
BY_NAME = {"rename", "replace", "unlink", "remove", "rmdir", "mkdir", "link", "symlink", "utime"}
FD_KEYWORDS = {"dir_fd", "src_dir_fd", "dst_dir_fd"}
PATH_METHODS = {"read_text", "write_text", "touch", "symlink_to", "hardlink_to", "lchmod",
                "chmod", "mkdir", "unlink", "rmdir"}  # fmt: skip

FIX = (
    "opens or changes a host file by path outside the door. Use lackjail.workspace.hostfs: "
    "HostFile / read_file / write_file for a file a user names, Root (its .tree) for a "
    "workspace, open_at / open_regular_at for a name beneath a folder descriptor, and "
    "os.* calls with dir_fd=. If the call provably touches no path a user can influence, add "
    "(module, call) to ALLOWED in tests/security/test_one_door.py with the reason."
)


def _imports(tree: ast.Module) -> tuple[dict, dict]:
    """(local module alias -> module, local name -> 'module.function') of TREE's imports."""
    modules, names = {"builtins": "builtins"}, {"open": "builtins.open"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module in ALWAYS:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return modules, names


def _forbidden(node: ast.Call, modules: dict, names: dict) -> str | None:
    """The call as written when it acts on a path by name, else None."""
    func, keywords = node.func, {k.arg for k in node.keywords}
    if isinstance(func, ast.Name) and func.id in names:
        module, _, name = names[func.id].rpartition(".")
        shown = func.id
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        module, name = modules.get(func.value.id, ""), func.attr
        shown = f"{func.value.id}.{func.attr}"
    else:
        module, name, shown = "", getattr(func, "attr", ""), f".{getattr(func, 'attr', '')}"
    allowed = ALWAYS.get(module, set())
    if "*" in allowed or name in allowed:
        return shown
    if module == "os" and name in BY_NAME and not keywords & FD_KEYWORDS:
        return shown
    if module or not isinstance(func, ast.Attribute):
        return None
    # a method: pathlib's, told apart from the door's own by its arguments
    first = node.args[0] if node.args else None
    if name in PATH_METHODS:
        return f".{name}"
    if name == "read_bytes" and not node.args:
        return ".read_bytes"
    if name == "write_bytes" and len(node.args) == 1:
        return ".write_bytes"
    mode = len(node.args) == 1 and _is_mode(first)  # Tree.open takes a path and flags
    if name == "open" and (mode or keywords & {"mode", "encoding", "newline"}):
        return ".open"
    return None


def _is_mode(node) -> bool:
    """True for a constant like "r", "wb", "a+": a file mode, as pathlib's open takes first.
    (A bare `.open()` cannot be told from the door's own HostFile.open and is not flagged.)"""
    value = node.value if isinstance(node, ast.Constant) else None
    return isinstance(value, str) and 0 < len(value) <= 3 and set(value) <= set("rwxabt+")


def _allowed(module: str, call: str) -> bool:
    return any(
        fnmatch.fnmatch(module, pattern) and (wanted == "*" or wanted == call)
        for pattern, wanted in ALLOWED
    )


def violations(package: Path = PACKAGE) -> list[str]:
    """One line per forbidden call in PACKAGE's modules: where, what, and how to fix it."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module in DOOR:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules, names = _imports(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                call = _forbidden(node, modules, names)
                if call is not None and not _allowed(module, call):
                    found.append(f"lackjail/{module}:{node.lineno}: `{call}(...)` {FIX}")
    return found


def test_host_files_are_opened_only_through_the_door():
    found = violations()
    assert not found, "\n".join(found)


def test_rmtree_never_follows_a_symlink_here():
    """ALLOWED trusts shutil.rmtree on folders a jail or a run wrote into."""
    assert shutil.rmtree.avoids_symlink_attacks


def test_the_walk_catches_what_it_forbids(tmp_path):
    """The checker itself: each forbidden form is found, the door's forms are not."""
    source = """
import os, shutil, tempfile
from os import chmod as change
from pathlib import Path
open("x")
os.open("x", os.O_RDONLY)
change("x", 0o644)
os.chown("x", 0, 0)
shutil.copy("a", "b")
tempfile.mkstemp()
Path("x").read_text()
Path("x").write_bytes(b"")
Path("x").open("w")
os.replace("a", "b")
os.replace("a", "b", src_dir_fd=3, dst_dir_fd=3)
os.unlink("a", dir_fd=3)
view.read_bytes("x")
view.write_bytes("x", b"")
tree.open("x", os.O_PATH)
os.fdopen(3, "rb")
"""
    bad = tmp_path / "lackjail" / "bad.py"
    bad.parent.mkdir()
    bad.write_text(source)
    found = violations(bad.parent)
    assert sorted(int(v.split(":")[1]) for v in found) == [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert all("Use lackjail.workspace.hostfs" in v for v in found)
