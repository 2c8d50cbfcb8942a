"""`lackjail.prompt()`: the text a model needs, built from the level's spec and the kit's specs."""

import pytest

import lackjail
from lackjail import lang
from lackjail.infer import prompt
from lackjail.kit import resolve_kit


def test_the_prompt_names_every_tool_of_the_kit_with_its_signature():
    kit = resolve_kit("readonly")
    text = lackjail.prompt(kit="readonly")
    for call, spec in kit.specs.items():
        assert spec.signature(call) in text
    assert lang.render(lang.spec("lackpy")).strip() in text
    assert "write_file" not in text  # a tool of another kit is never promised


@pytest.mark.parametrize("level", ["lackpy", "extended"])
def test_the_prompt_states_the_level_asked_for(level):
    text = lackjail.prompt(language=level)
    assert f"Language spec:\n{level} (spec version" in text
    assert lang.spec(level)["summary"] in text
    assert "Tools" not in text  # no kit: a framework lists its own tools
    assert "Tools: none." in lackjail.prompt(kit="none", language=level)


def test_the_level_defaults_to_the_policys():
    assert "Language spec:\nlackpy (spec version" in lackjail.prompt(policy="default")


def test_parameters_are_named_as_names_the_program_reads():
    text = lackjail.prompt(kit="readonly", params=["path", "pattern"])
    assert "read them, do not assign them): path, pattern" in text


def test_an_unknown_level_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown language level 'cobol'; levels: lackpy"):
        lackjail.prompt(language="cobol")


def test_delegate_builds_its_system_message_on_the_same_prompt():
    kit = resolve_kit("files")
    system = prompt.system_prompt("extended", kit, ("path",))
    assert system.endswith(lackjail.prompt(kit=kit, language="extended", params=("path",)))
    assert system.startswith("You write programs in a subset of Python")
