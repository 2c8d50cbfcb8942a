"""The machine-readable spec matches the tables, and the package stays a standard-library leaf."""

import ast
import json
import pathlib
import subprocess
import sys

from lackjail.lang import ALLOWED_BUILTINS, FORBIDDEN_NAMES, SPEC, ProgramLimits, spec
from lackjail.lang.describe import render
from lackjail.lang.rulebook import RULES

LANG_DIR = pathlib.Path(__file__).resolve().parents[2] / "lackjail" / "lang"


def test_spec_describes_the_language():
    assert SPEC["language"] == "lackpy"
    assert SPEC["builtins"] == list(ALLOWED_BUILTINS)
    assert set(SPEC["forbidden_names"]) == FORBIDDEN_NAMES
    assert {"eval", "getattr", "type", "format", "chr", "ord"} <= set(SPEC["forbidden_names"])
    assert [r["id"] for r in SPEC["rules"]] == list(RULES)
    assert all(r["description"] for r in SPEC["rules"] + SPEC["custom_rules"])
    assert {r["id"] for r in SPEC["custom_rules"]} == {
        "no-loops",
        "max-depth",
        "max-calls",
        "no-nested-calls",
    }
    assert SPEC["limits"] == ProgramLimits().to_dict("lackpy")
    assert SPEC["limits"]["max_int_digits"] == 100
    assert spec("python")["limits"]["max_int_digits"] == 4300
    assert all(isinstance(getattr(ast, name), type) for name in SPEC["nodes"])
    assert {"Lambda", "ListComp", "JoinedStr"} <= set(SPEC["nodes"])
    assert not {"Import", "FunctionDef", "While", "Try", "With", "GeneratorExp"} & set(
        SPEC["nodes"]
    )
    assert "**" in SPEC["operators"]["forbidden"] and "**" not in SPEC["operators"]["binary"]
    assert (
        "format" in SPEC["denied_attributes"]["names"]
        and "_" in SPEC["denied_attributes"]["prefix"]
    )
    assert "1-based" in SPEC["positions"] and "0-based" not in SPEC["positions"]


def test_spec_is_json_and_fresh():
    assert json.loads(json.dumps(SPEC)) == SPEC
    mine = spec()
    mine["builtins"].append("eval")
    assert "eval" not in spec()["builtins"] and "eval" not in SPEC["builtins"]
    assert spec(limits=ProgramLimits(max_depth=7))["limits"]["max_depth"] == 7


def test_text_rendering_names_everything():
    text = render(SPEC)
    for word in [*ALLOWED_BUILTINS, *RULES, "max_source_bytes", "format_map", "'while'"]:
        assert word in text, word


def test_lang_imports_only_the_standard_library():
    for path in LANG_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in sys.stdlib_module_names, f"{path.name} imports {name}"


def _isolated(code: str) -> list:
    """Run CODE in a fresh interpreter (-I -S) at the repository root; each printed line,
    evaluated."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code],
        capture_output=True,
        text=True,
        cwd=LANG_DIR.parents[1],
        timeout=60,
        check=True,
    )
    return [eval(line) for line in done.stdout.splitlines()]


def test_importing_lang_loads_nothing_else_from_lackjail():
    # -I -S: no site-packages, so an editable install's path finder does not count as an
    # import of lang's
    code = (
        "import sys; sys.path.insert(0, '.'); import lackjail.lang\n"
        "print(sorted(m for m in sys.modules if m.startswith('lackjail')))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
        " - {'lackjail', '__main__'}))"
    )
    ours, foreign = _isolated(code)
    assert all(m == "lackjail" or m.startswith("lackjail.lang") for m in ours), ours
    assert foreign == [], foreign


def test_the_spec_and_optional_rules_load_only_when_asked_for():
    """The jail imports lang at every zygote's start and never uses the spec for prompts:
    importing lang leaves describe, the rulebook and the custom rules unloaded."""
    later = ("lackjail.lang.describe", "lackjail.lang.rulebook", "lackjail.lang.custom_rules")
    code = (
        "import sys; sys.path.insert(0, '.'); import lackjail.lang as lang\n"
        f"print([m in sys.modules for m in {later!r}])\n"
        "assert lang.SPEC['language'] == 'lackpy' and lang.spec() == lang.SPEC\n"
        "assert callable(lang.render) and lang.custom_rules.SHIPPED\n"
        f"print([m in sys.modules for m in {later!r}])\n"
        "print(hasattr(lang, 'nothing_such'))\n"
    )
    before, after, unknown = _isolated(code)
    assert before == [False] * len(later) and after == [True] * len(later) and unknown is False
