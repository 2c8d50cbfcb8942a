"""The front ends (CLI, MCP, gate, batch, Ray, integrations) use lackjail's public surface only.

They are what a library user could have written: no name with a leading underscore from
lackjail, no private attribute of an object lackjail made, no reaching past a Jail into its
pool. As the lang tests guard lang's imports, this walks their source and fails on each.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lackjail"
FRONT_ENDS = ["cli", "gate", "integrations", "mcp.py", "batch.py", "ray.py"]
# Private attributes of other libraries' objects, not lackjail's: each with why it is read.
FOREIGN = {
    "_lowlevel_server": "the MCP SDK's server: the one way to its request handlers",
    "_exit": "os._exit: the standard library's exit without interpreter shutdown",
}


def _files():
    for name in FRONT_ENDS:
        path = PACKAGE / name
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def reaches_past(source: str) -> list[str]:
    """What SOURCE takes that is not lackjail's public surface, one line each."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lackjail"):
            found += [
                f"{node.lineno}: imports {node.module}.{a.name}"
                for a in node.names
                if _private(a.name)
            ]
        elif isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: imports {a.name}"
                for a in node.names
                if a.name.startswith("lackjail") and any(map(_private, a.name.split(".")))
            ]
        elif isinstance(node, ast.Attribute):
            owner = ast.unparse(node.value)
            if _private(node.attr) and owner not in ("self", "cls") and node.attr not in FOREIGN:
                found.append(f"{node.lineno}: {owner}.{node.attr}")
            if node.attr == "pool" and not owner.endswith("policy"):  # policy.pool: settings
                found.append(f"{node.lineno}: {owner}.pool (a Jail's pool is its own)")
    return found


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_front_end_uses_the_public_surface_only(path):
    assert reaches_past(path.read_text()) == []


def test_the_walk_finds_what_it_forbids():
    source = (
        "from lackjail.api import _job, Jail\n"
        "import lackjail._secret\n"
        "jail.pool.size\n"
        "api._killed('x')\n"
        "self._mine, policy.pool.spares, lackjail.__version__\n"
    )
    assert reaches_past(source) == [
        "1: imports lackjail.api._job",
        "2: imports lackjail._secret",
        "3: jail.pool (a Jail's pool is its own)",
        "4: api._killed",
    ]
