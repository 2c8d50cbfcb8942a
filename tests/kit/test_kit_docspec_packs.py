"""Specs from docstrings, packs, and what prompts and `kit info` show."""

import kit_helpers
import pytest
from kit_support import make_policy, py_tool

from lackjail.kit import (
    KitError,
    Pack,
    pack_from_module,
    parse_docstring,
    resolve_kit,
    spec_from_function,
)


def test_docstring_sections():
    doc = parse_docstring(kit_helpers.add.__doc__)
    assert doc["summary"] == "Add two numbers."
    assert (doc["use"], doc["input"], doc["output"]) == (
        "sum two integers.",
        "two integers.",
        "their sum.",
    )
    assert doc["parameters"] == {"a": ("int", "the first."), "b": ("int", "the second.")}
    assert doc["best_practices"] == ["Keep numbers small.", "Or large; it is Python."]


def test_google_style_aliases_and_continuations():
    doc = parse_docstring("""Fetch.

    Args:
        url (str): where
            to look.
    Returns:
        the body.
    """)
    assert doc["parameters"] == {"url": ("str", "where to look.")}
    assert doc["output"] == "the body."


def test_spec_from_function_uses_the_signature():
    spec = py_tool("add")
    assert [(a.name, a.type, a.required) for a in spec.args] == [
        ("a", "int", True),
        ("b", "int", False),
    ]
    assert spec.signature() == "add(a: int, [b: int]) -> int"
    assert spec.guidance == "sum two integers." and spec.best_practices == (
        "Keep numbers small.",
        "Or large; it is Python.",
    )
    assert py_tool("echo").args[0].type == "Any"


def test_spec_from_function_refuses_lies_and_varargs():
    def documents_ghost(a: int) -> int:
        """Ghost.

        Parameters:
            a (int): real.
            ghost (str): not a parameter.
        """

    def variadic(*parts: str) -> str:
        """Join."""

    with pytest.raises(KitError, match="documents parameter\\(s\\) ghost"):
        spec_from_function(documents_ghost, name="g", provider="python")
    with pytest.raises(KitError, match="parameter 'parts' is variadic positional"):
        spec_from_function(variadic, name="v", provider="python")


def test_pack_from_module_and_calls_through_the_namespace(ws):
    pack = pack_from_module("kit_helpers", "helpers", "Test helpers.", grade_w=0, effects_ceiling=0)
    assert "add" in pack.members and "_private" not in pack.members and "Opaque" not in pack.members
    assert pack.members["add"].name == "helpers.add"
    kit = resolve_kit([pack])
    assert kit.names == ("helpers",) and "helpers.add" in kit.host_tools
    assert kit.grade == {"w": 0, "d": 0}
    session = kit.session(make_policy(), ws)
    assert session.call("helpers.add", [1, 2], {}).value == 3
    assert not session.call("helpers", [], {}).ok
    one = resolve_kit(["fs.read"])
    assert one.names == ("fs",) and one.host_tools == ("fs.read",)
    assert resolve_kit({"r": "fs.read"}).host_tools == ("r",)


def test_fs_pack_calls_share_the_transaction(ws):
    s = resolve_kit("fs").session(make_policy(), ws)
    assert s.call("fs.write", ["n.txt", "new"], {}).ok
    assert s.call("fs.read", ["n.txt"], {}).value == "new"
    assert s.call("fs.find", ["*.txt"], {}).value == ["a.txt", "n.txt"]
    assert s.commit() == ["n.txt"]


def test_describe_shows_signatures_guidance_and_practices():
    kit = resolve_kit(
        {"r": {"tool": "read_file", "approval": "required"}, "fs": "fs", "slugify": "slugify"}
    )
    text = kit.describe()
    assert text.startswith("kit custom\ngrade: w=3 d=3\n")
    assert (
        "r(path: str) -> str  [needs approval]\n    Read a UTF-8 text file inside the workspace.\n"
        in text
    )
    assert "Parameters:\n      path (str): the file, relative to the workspace" in text
    assert (
        "fs - Files inside the workspace.\n    fs.read(path: str) -> str  # get the contents of "
        "one file" in text
    )
    assert "      - fs.find: Anchor patterns to a folder" in text
    assert "slugify(text: str) -> str  [runs in the jail]" in text
    data = kit.to_dict()
    assert data["names"] == ["r", "fs", "slugify"] and data["packs"] == {
        "fs": "Files inside the workspace."
    }
    assert data["jail_tools"] == {"slugify": ["lackjail.worker.puretools", "slugify"]}
    assert [t["call"] for t in data["tools"]][:2] == ["r", "fs.read"]
    assert resolve_kit(None).describe() == "kit none\ngrade: w=0 d=0\nno tools\n"


def test_pack_checks():
    with pytest.raises(KitError, match="has no members"):
        Pack("empty")
    with pytest.raises(KitError, match="must be a ToolSpec"):
        Pack("p", "", {"x": "read_file"})
    with pytest.raises(KitError, match="cannot import module"):
        pack_from_module("no_such_module_here", "p")
