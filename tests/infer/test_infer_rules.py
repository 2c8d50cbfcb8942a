"""Rules: the commonest intents without a model, only with the tools they need, captures as data."""

import ast

import pytest

from lackjail.infer import generate, ruletier


@pytest.mark.parametrize(
    "intent, name, program",
    [
        (
            "find all python files and count them",
            "find-and-count-files-of-kind",
            "len(find_files('**/*.py'))",
        ),
        ("How many Markdown files are there?", "count-files-of-kind", "len(find_files('**/*.md'))"),
        ("count the .toml files", "count-files-of-kind", "len(find_files('**/*.toml'))"),
        ("list all rust files", "list-files-of-kind", "find_files('**/*.rs')"),
        ("show me the *.cfg files", "list-files-of-kind", "find_files('**/*.cfg')"),
        ("read the file notes.txt", "read-file", "read_file('notes.txt')"),
        ("Show the contents of the file 'my notes.txt'.", "read-file", "read_file('my notes.txt')"),
        ("glob src/**/*.py", "glob", "find_files('src/**/*.py')"),
    ],
)
def test_rules(kit, intent, name, program):
    assert ruletier.generate(intent, kit) == (name, program)


@pytest.mark.parametrize(
    "intent",
    [
        "find all files",
        "list all funny files",
        "read the file",
        "summarise notes.txt",
        "read the file a b",
    ],
)
def test_no_rule(kit, intent):
    assert ruletier.generate(intent, kit) is None


def test_rules_need_the_kit_s_tools():
    from lackjail.kit import resolve_kit

    only_find = resolve_kit("find_files")
    assert ruletier.generate("read the file notes.txt", only_find) is None
    assert ruletier.generate("list python files", only_find) == (
        "list-files-of-kind",
        "find_files('**/*.py')",
    )
    assert ruletier.generate("list python files", None) is None
    gen = generate("read the file notes.txt", only_find, config={"order": ["rules"]})
    assert gen.program is None
    assert gen.notes[0]["reason"] == "no rule matches the intent with this kit's tools"


def test_quoted_capture_is_data(kit):
    hostile = "read the file \"x') if False else read_file('/etc/hostname\""
    name, program = ruletier.generate(hostile, kit)
    call = ast.parse(program).body[0].value
    assert call.func.id == "read_file" and [a.value for a in call.args] == [
        "x') if False else read_file('/etc/hostname"
    ]
