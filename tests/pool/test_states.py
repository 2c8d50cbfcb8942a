"""The pool's state is explicit: each jail it holds has one state, changed in one place."""

import ast
from pathlib import Path

from lackjail.kit.calls.session import CallOutcome
from lackjail.policy import load_policy
from lackjail.pool import Pool, Request

POOL = Path(__file__).resolve().parents[2] / "lackjail" / "pool" / "pool.py"


def test_only_move_changes_a_jails_state():
    """`_held` (jail -> Held) is written by `Pool._move` alone: no other method assigns,
    deletes or pops an entry, or replaces a Held's state."""
    writers = set()
    for fn in ast.walk(ast.parse(POOL.read_text())):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if hasattr(node, "targets") else [node.target]
            held = [
                t for t in targets if "_held" in ast.unparse(t) or ast.unparse(t).endswith(".state")
            ]
            calls = isinstance(node, ast.Call) and ast.unparse(node.func) in (
                "self._held.pop", "self._held.clear", "self._held.update", "self._held.setdefault"
            )  # fmt: skip
            if held or calls:
                writers.add(fn.name)
    writers.discard("__init__")  # `self._held = {}`: the empty pool
    assert writers == {"_move"}


def test_a_run_holds_its_jail_lent_and_gives_it_back_idle(require_nsjail):
    seen = []

    def handler(tool, args, kwargs, deadline):
        with pool._cond:
            seen.append(sorted(held.state for held in pool._held.values()))
        return CallOutcome(True, 1)

    pool = Pool(load_policy("default"), workers=2)
    try:
        assert pool.wait_full(30)
        with pool._cond:
            assert sorted(held.state for held in pool._held.values()) == ["idle", "idle"]
        outcome = pool.execute(Request("probe() + 1", {}, tools=["probe"]), handler)
        assert (outcome.status, outcome.value) == ("ok", 2)
        assert seen == [["idle", "lent"]]
        assert pool.wait_full(30)
        with pool._cond:
            assert sorted(held.state for held in pool._held.values()) == ["idle", "idle"]
    finally:
        pool.close()
    assert pool._held == {}  # closed: every jail reaped
