"""Helpers shared by the kit tests (a unique module name: `conftest` may exist elsewhere too)."""

import os

from lackjail.policy import Limits, Policy, ToolRules


def make_policy(**changes):
    """A Policy with LIMITS and TOOLS fields changed, e.g. make_policy(tool_calls=2,
    deny=("write_file",)).
    """
    limit_keys = set(Limits.__dataclass_fields__)
    limits = Limits(**{k: v for k, v in changes.items() if k in limit_keys})
    tools = ToolRules(**{k: v for k, v in changes.items() if k not in limit_keys})
    return Policy(name="test", limits=limits, tools=tools)


def no_temp_files(root):
    """True when no commit temp file is left anywhere under ROOT."""
    return not [n for _, _, files in os.walk(root) for n in files if n.startswith(".lackjail-")]


def py_tool(function, name=None, **fields):
    """A python-provider ToolSpec for a function of kit_helpers, its spec read from the
    docstring.
    """
    import kit_helpers

    from lackjail.kit import spec_from_function

    return spec_from_function(
        getattr(kit_helpers, function),
        name=name or function,
        provider="python",
        provider_config={"module": "kit_helpers", "function": function},
        **fields,
    )


def make_outside(tmp_path):
    """A folder next to the workspace holding a secret no tool may read or overwrite."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("TOP SECRET\n")
    return folder


def make_workspace(tmp_path):
    """The workspace: a.txt, src/main.py, docs/guide.md."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "docs" / "guide.md").write_text("# Guide\n")
    return root
