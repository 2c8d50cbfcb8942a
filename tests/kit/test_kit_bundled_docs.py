"""The docs lackjail ships with its bundled kits: indexed, readable, and their recipes valid."""

import re

import pytest

from lackjail.checker import Checker
from lackjail.errors import KitError
from lackjail.kit import resolve_doc, resolve_kit
from lackjail.kit.assembly.kitfile import BUNDLED_DIR

BUNDLED = sorted(path.stem for path in BUNDLED_DIR.glob("*.kit"))
RECIPE = re.compile(r"```lackpy\n(.*?)```", re.S)


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_kit_indexes_a_doc_that_names_each_of_its_tools(name, tmp_path):
    kit = resolve_kit(name)
    assert kit.docs_index() == {f"lackjail:{name}.md": f"kit {name}"}
    text = resolve_doc(f"lackjail:{name}.md", tmp_path)  # the workspace plays no part
    assert text.startswith(f"# kit {name}")
    for call in kit.specs:
        assert f"`{call}(" in text, call


@pytest.mark.parametrize("name", BUNDLED)
def test_the_recipes_of_a_bundled_doc_pass_the_kits_checker(name):
    recipes = RECIPE.findall(resolve_doc(f"lackjail:{name}.md"))
    assert recipes
    checker = Checker(kit=name)
    for program in recipes:
        result = checker.check(program)
        assert result.valid, (program, [e.format() for e in result.errors])


@pytest.mark.parametrize("path", ["lackjail:nothing.md", "lackjail:../kits/files.kit", "lackjail:"])
def test_only_a_shipped_doc_is_read_by_its_name(path):
    with pytest.raises(KitError, match="lackjail ships no doc .*its docs are lackjail:files.md"):
        resolve_doc(path)
