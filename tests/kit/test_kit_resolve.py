"""Kit forms, kit files, grades, names, and the errors bad kits get."""

import os

import pytest
from kit_support import py_tool

from lackjail.kit import (
    KitError,
    Pack,
    Toolbox,
    ToolSpec,
    default_toolbox,
    resolve_doc,
    resolve_kit,
)


def write_kit(ws, name, text):
    folder = ws / ".lackjail" / "kits"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.kit").write_text(text)
    return folder / f"{name}.kit"


def test_none_forms_have_no_tools():
    for spec in (None, "none", [], {}):
        kit = resolve_kit(spec)
        assert kit.names == () and kit.host_tools == () and kit.jail_tools == {}
        assert kit.grade == {"w": 0, "d": 0}


def test_bundled_kit_and_names():
    kit = resolve_kit("files")
    assert kit.names == ("read_file", "find_files", "list_dir", "grep", "write_file", "edit_file")
    assert kit.host_tools == kit.names
    assert kit.grade == {"w": 3, "d": 3}
    assert resolve_kit("readonly").grade == {"w": 1, "d": 1}
    assert kit.specs["find_files"].timeout_s == 30.0 and kit.specs["read_file"].timeout_s == 120.0


def test_jail_tools_are_pure_and_importable_in_the_worker():
    kit = resolve_kit("text")
    assert kit.host_tools == ()
    assert kit.jail_tools == {
        "slugify": ("lackjail.worker.puretools", "slugify"),
        "word_count": ("lackjail.worker.puretools", "word_count"),
    }
    assert kit.grade == {"w": 0, "d": 0}
    from lackjail.worker import puretools

    assert puretools.slugify("  Héllo, Wörld! 2024 ") == "hello-world-2024"
    assert puretools.word_count("one two\tthree\n") == 3
    with pytest.raises(TypeError):
        puretools.word_count(3)


def test_comma_list_dict_and_nested_forms():
    assert resolve_kit("read_file, find_files").names == ("read_file", "find_files")
    assert resolve_kit(["read_file"]).names == ("read_file",)
    kit = resolve_kit(
        {"r": "read_file", "w": {"tool": "write_file", "approval": "required", "timeout_s": 5}}
    )
    assert kit.names == ("r", "w") and kit.specs["r"].name == "read_file"
    assert kit.specs["w"].approval == "required" and kit.specs["w"].timeout_s == 5.0
    assert (
        resolve_kit({"read_file": {}}).specs["read_file"].name == "read_file"
    )  # {"tool"} defaults to the alias


def test_extra_tools_merge_into_any_form(ws):
    assert resolve_kit("readonly", extra_tools=["write_file"]).names == (
        "read_file",
        "find_files",
        "list_dir",
        "grep",
        "write_file",
    )
    assert resolve_kit(None, extra_tools="read_file").names == ("read_file",)
    assert resolve_kit({"r": "read_file"}, extra_tools={"w": "write_file"}).names == ("r", "w")
    base = resolve_kit("readonly")
    merged = resolve_kit(base, extra_tools=[py_tool("add")])
    listing = ("read_file", "find_files", "list_dir", "grep")
    assert merged.names == (*listing, "add") and base.names == listing
    assert (
        resolve_kit("files", extra_tools=["read_file"]).names == resolve_kit("files").names
    )  # same tool twice is fine
    with pytest.raises(KitError, match="names two different tools"):
        resolve_kit({"r": "read_file"}, extra_tools={"r": "write_file"})
    with pytest.raises(
        KitError, match="name 'fs' in extra_tools of kit 'custom' is both a tool and a pack"
    ):
        resolve_kit({"fs": "read_file"}, extra_tools=["fs"])
    assert resolve_kit({"fs": "read_file", "files": "fs"}).host_tools[:2] == ("fs", "files.read")


def test_unknown_tool_names_the_kit_and_suggests(ws):
    write_kit(ws, "x", "raed_file\n")
    with pytest.raises(KitError) as err:
        resolve_kit("x", workspace=ws)
    message = str(err.value)
    assert message.startswith("unknown tool 'raed_file' in kit 'x'")
    assert (
        "did you mean 'read_file'" in message
        and "known tools and packs: edit_file, find_files" in message
    )
    with pytest.raises(
        KitError, match="no kit named 'nope'.*and bundled: files, readonly, text, x"
    ):
        resolve_kit("nope", workspace=ws)


def test_workspace_kit_file_reads_frontmatter(ws):
    write_kit(
        ws,
        "mine",
        "---\nname: mine\ndescription: mine\ndocs: docs/guide.md, README.md\n---\n"
        "# only reading here\nread_file  # the one tool\n\nfs\n",
    )
    kit = resolve_kit("mine", workspace=ws)
    assert kit.description == "mine" and kit.docs == ("docs/guide.md", "README.md")
    assert kit.names == ("read_file", "fs")
    assert kit.host_tools == ("read_file", "fs.read", "fs.find", "fs.write", "fs.edit")
    assert kit.docs_index() == {"docs/guide.md": "kit mine", "README.md": "kit mine"}
    assert resolve_kit(str(ws / ".lackjail" / "kits" / "mine.kit")).names == ("read_file", "fs")


@pytest.mark.parametrize(
    "text, words",
    [
        ("---\nname: k\nread_file\n", ["k.kit:1", "never closed"]),
        (
            "---\ncolour: red\n---\nread_file\n",
            ["k.kit:2", "key one of name, description, docs", "colour"],
        ),
        ("---\ndescription: a\ndescription: b\n---\n", ["k.kit:3", "given twice"]),
        (
            "read_file\nwrite file\n",
            ["k.kit:2", "'write file' is not a tool name", "one tool name per line"],
        ),
        ("read_file\nread_file\n", ["k.kit:2", "listed twice"]),
        ("---\nname: other\n---\nread_file\n", ["says name 'other'", "k.kit"]),
        ("read_file\n---\nfind_files\n", ["k.kit:2", "unexpected '---'"]),
        ("../../etc/passwd\n", ["k.kit:1", "not a tool name"]),
    ],
)
def test_kit_file_errors_name_the_line_and_the_fix(ws, text, words):
    write_kit(ws, "k", text)
    with pytest.raises(KitError) as err:
        resolve_kit("k", workspace=ws)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_unreadable_kit_files(ws):
    write_kit(ws, "bin", "").write_bytes(b"\xff\xfe read_file")
    with pytest.raises(KitError, match="not UTF-8"):
        resolve_kit("bin", workspace=ws)
    write_kit(ws, "huge", "read_file\n" * 10_000)
    with pytest.raises(KitError, match="cap"):
        resolve_kit("huge", workspace=ws)
    folder = ws / ".lackjail" / "kits"
    os.symlink("/dev/zero", folder / "zero.kit")
    with pytest.raises(KitError, match="leads outside the workspace"):
        resolve_kit("zero", workspace=ws)
    os.mkfifo(folder / "fifo.kit")
    with pytest.raises(KitError, match="not a regular file"):
        resolve_kit("fifo", workspace=ws)


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"print": "read_file"}, ["would hide the builtin print()"]),
        ({"_r": "read_file"}, ["not a usable name"]),
        ({"class": "read_file"}, ["not a usable name"]),
        (
            {"r": {"tool": "read_file", "colour": "red"}},
            ["unknown key(s) colour for 'r'", "known keys: tool"],
        ),
        (
            {"r": {"tool": "read_file", "approval": "maybe"}},
            ["approval must be one of never, required"],
        ),
        ({"r": 3}, ["must be a tool name, not int"]),
        ("read_file,,find_files", ["empty tool name"]),
        (42, ["a kit must be None"]),
    ],
)
def test_bad_kit_forms(spec, words):
    with pytest.raises(KitError) as err:
        resolve_kit(spec)
    for word in words:
        assert word in str(err.value), str(err.value)


def test_grade_is_the_element_wise_max():
    specs = [
        ToolSpec(
            "a",
            "python",
            {"module": "kit_helpers", "function": "echo"},
            grade_w=1,
            effects_ceiling=2,
            args=({"name": "value", "required": False},),
        ),
        ToolSpec(
            "b",
            "python",
            {"module": "kit_helpers", "function": "echo"},
            grade_w=2,
            effects_ceiling=0,
            args=({"name": "value", "required": False},),
        ),
    ]
    assert resolve_kit(specs).grade == {"w": 2, "d": 2}
    assert resolve_kit(["slugify", "read_file"]).grade == {"w": 1, "d": 1}


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"name": "bad name"}, ["tool name 'bad name' is not valid"]),
        ({"grade_w": 4}, ["grade_w must be 0 (pure)"]),
        ({"timeout_s": 0}, ["timeout_s must be seconds"]),
        ({"placement": "cloud"}, ["placement must be one of host, jail"]),
        ({"placement": "jail"}, ["placement 'jail' is only for pure tools"]),
        (
            {"placement": "jail", "grade_w": 0, "effects_ceiling": 0},
            ["module in lackjail.worker.*"],
        ),
        ({"args": ({"name": "p", "type": "Path"},)}, ["type 'Path'", "use one of str"]),
        (
            {"args": ({"name": "p", "required": False}, {"name": "q"})},
            ["required argument 'q' follows an optional one"],
        ),
        ({"args": ({"name": "p"}, {"name": "p"})}, ["declares argument 'p' twice"]),
        ({"args": ({"name": "p", "required": "no"},)}, ["required must be true/false"]),
        (
            {"args": ({"name": "p", "kind": "x"},)},
            ["must have keys name, type, description, required"],
        ),
    ],
)
def test_bad_tool_specs(fields, words):
    base = {
        "name": "t",
        "provider": "python",
        "provider_config": {"module": "kit_helpers", "function": "echo"},
    }
    with pytest.raises(KitError) as err:
        ToolSpec(**{**base, **fields})
    for word in words:
        assert word in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "config, words",
    [
        (
            {"module": "no_such_module_here", "function": "f"},
            ["cannot import module 'no_such_module_here'"],
        ),
        ({"module": "kit_helpers", "function": "missing"}, ["has no function 'missing'"]),
        ({"module": "kit_helpers", "function": "_private"}, ["public function name"]),
        ({"module": "kit_helpers; rm -rf", "function": "f"}, ["dotted module name"]),
        (
            {"module": "kit_helpers", "function": "add", "extra": 1},
            ["unknown provider_config key(s) extra"],
        ),
    ],
)
def test_python_provider_checks_at_resolution(config, words):
    with pytest.raises(KitError) as err:
        resolve_kit([ToolSpec("t", "python", config, args=({"name": "a", "type": "int"},))])
    for word in words:
        assert word in str(err.value), str(err.value)


def test_python_provider_checks_the_signature():
    with pytest.raises(KitError, match="do not fit kit_helpers.add"):
        resolve_kit(
            [
                ToolSpec(
                    "t",
                    "python",
                    {"module": "kit_helpers", "function": "add"},
                    args=({"name": "zzz"},),
                )
            ]
        )


def test_unknown_provider_and_custom_toolbox():
    with pytest.raises(KitError, match="no provider 'mcp'; registered providers: builtin, python"):
        resolve_kit([ToolSpec("t", "mcp")])
    box = Toolbox()
    with pytest.raises(KitError, match="needs a str `name`"):
        box.register_provider(object())
    with pytest.raises(KitError, match="unknown tool 'read_file'"):
        resolve_kit(["read_file"], toolbox=box)


def test_docs_index_and_resolve_doc_stay_inside(ws, outside):
    spec = py_tool("add", docs="docs/guide.md")
    kit = resolve_kit([spec])
    assert kit.docs_index() == {"docs/guide.md": "tool add"}
    assert resolve_doc("docs/guide.md", ws) == "# Guide\n"
    os.symlink(outside / "secret.txt", ws / "docs" / "leak.md")
    for path, word in (
        ("../outside/secret.txt", "'..'"),
        (str(outside / "secret.txt"), "outside"),
        ("docs/leak.md", "symlink"),
        ("/proc/self/environ", "outside"),
    ):
        with pytest.raises(KitError, match=word):
            resolve_doc(path, ws)


def test_default_toolbox_is_fresh_each_time():
    box = default_toolbox()
    box.register_tool(py_tool("add"))
    assert "add" not in default_toolbox().tools
    with pytest.raises(KitError, match="would hide the pack"):
        box.register_tool(py_tool("add", name="fs"))
    with pytest.raises(KitError, match="would hide the tool"):
        box.register_pack(Pack("add", "", {"x": py_tool("add")}))
