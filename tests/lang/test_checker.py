"""The Checker: validation as the jail does it (size cap, kit names, parameters); format_error."""

import os

import pytest

import lackjail
from lackjail.checker import Checker
from lackjail.errors import KitError
from lackjail.lang import ValidationError, format_error
from lackjail.lang import custom_rules as rules
from lackjail.policy import Limits, Policy


def rules_of(result):
    return [e.rule for e in result.errors]


def test_kit_forms_all_give_the_same_names():
    program = "x = read_file(path)"

    class Kit:
        names = ("read_file",)

    for kit in ("readonly", "read_file", ["read_file"], ("read_file",), Kit()):
        assert Checker(kit=kit).check(program, ["path"]).valid, kit
    assert rules_of(Checker().check(program, ["path"])) == ["unknown-call"]
    assert lackjail.check(program, kit="readonly", params=["path"]).valid


def test_the_policy_size_cap_applies():
    small = Policy(limits=Limits(program_bytes=10))
    result = Checker(small).check("x = 'abcdefghijk'")
    assert rules_of(result) == ["limit-source-bytes"]
    assert Checker().check("x = 'abcdefghijk'").valid


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("1x", "not a valid identifier"),
        ("for", "not a valid identifier"),
        ("pâth", "not a valid identifier"),
        ("_x", "must not start with '_'"),
        ("len", "would hide the builtin"),
        ("read_file", "would hide the builtin or tool"),
        ("eval", "forbidden name"),
        (3, "not a valid identifier"),
    ],
)
def test_bad_parameter_names(name, fragment):
    result = Checker(kit="readonly").check("x = 1", {name: 1})
    assert not result.valid
    assert rules_of(result) == ["param-name"]
    assert fragment in result.errors[0].message
    # a names-only check (as `check --param NAME`) judges the name the same way
    assert rules_of(Checker(kit="readonly").check("x = 1", [name])) == ["param-name"]


@pytest.mark.parametrize(
    "value", [object(), {1: "a"}, [set()], 1 << 64, -(1 << 63) - 1, [[[[1]]]] * 0 + [eval]]
)
def test_bad_parameter_values(value):
    result = Checker().check("x = p", {"p": value})
    assert rules_of(result) == ["param-value"]


def test_deep_parameter_values_are_refused_not_crashed():
    deep = []
    for _ in range(200):
        deep = [deep]
    assert rules_of(Checker().check("x = p", {"p": deep})) == ["param-value"]


@pytest.mark.parametrize("value", [None, True, 1 << 63, -(1 << 63), 1.5, "s", b"b", [1, {"k": []}]])
def test_plain_parameter_values_pass(value):
    assert Checker().check("x = p", {"p": value}).valid


def test_parameter_and_program_errors_are_reported_together():
    result = Checker().check("import os", {"_p": 1})
    assert rules_of(result) == ["param-name", "forbidden-node"]


def test_custom_rules_run():
    checker = Checker(rules=[rules.no_loops])
    assert rules_of(checker.check("for i in range(2):\n    print(i)")) == ["no-loops"]


def test_unknown_language_level_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown language level 'cobol'; levels: lackpy"):
        Checker(language="cobol")


def test_an_unknown_kit_raises_the_kit_error():
    from lackjail.kit import KitError

    with pytest.raises(KitError, match="nokit"):
        Checker(kit="nokit")


def test_format_error_forms():
    error = ValidationError("bad", 2, 4, "forbidden-name")
    assert format_error(error, "p.lackpy") == "p.lackpy:2:4: bad [forbidden-name]"
    assert error.format("p") == "p:2:4: bad [forbidden-name]"
    assert format_error({"message": "m", "line": 3}, "p") == "p:3: m"
    assert format_error({"message": "m"}, "p") == "p: m"
    assert (
        format_error({"message": "m", "line": 1, "col": 1, "rule": "r"}) == "<program>:1:1: m [r]"
    )
    # control characters from a file name or a message cannot drive a terminal
    assert format_error({"message": "a\x1b[2Kb"}, "f\nx") == "f\\nx: a\\x1b[2Kb"


def test_language_comes_from_the_policy_or_the_caller():
    from lackjail.policy import PolicyError, policy_from_dict

    program = "n = 0\nwhile n < 3:\n    n += 1"
    assert not Checker().check(program).valid
    assert Checker(language="extended").check(program).valid
    extended = policy_from_dict({"language": "extended"})
    assert extended.language == "extended"
    assert Checker(extended).check(program).valid
    assert not Checker(extended, language="lackpy").check(program).valid
    with pytest.raises(
        PolicyError, match="'language' must be one of lackpy, extended, python; not 'py'"
    ):
        policy_from_dict({"language": "py"})


def test_unknown_names_that_a_bundled_kit_has_say_which_kit():
    for program in ("x = read_file('a')", "f = read_file"):
        message = Checker().check(program).errors[0].message
        assert message.endswith("; the bundled kit 'readonly' has it"), message
    message = Checker(kit="text").check("x = read_file('a')").errors[0].message
    assert "kit 'readonly'" in message


# -- the verdicts a Checker keeps: the same program judged again gives the same verdict --


def test_a_kept_verdict_is_the_same_and_each_caller_gets_its_own_copy():
    checker = Checker(kit=["read_file"])
    program = "text = read_file(path)\nlen(text)"
    first = checker.check(program, {"path": "a.txt"})
    first.calls.append("tampered")
    first.variables.clear()
    second = checker.check(program, {"path": "b.txt"})
    assert second.valid and second.calls == ["len", "read_file"]
    assert second.variables == ["text"]
    assert second == Checker(kit=["read_file"]).check(program, {"path": "b.txt"})


def test_a_kept_verdict_depends_on_the_parameter_names_and_values_are_checked_every_time():
    checker = Checker()
    assert checker.check("n + 1", {"n": 1}).valid
    assert rules_of(checker.check("n + 1", {})) == ["undefined-name"]
    assert rules_of(checker.check("n + 1", {"n": object()})) == ["param-value"]
    assert rules_of(checker.check("n + 1", {"len": 1})) == ["param-name", "undefined-name"]
    assert checker.check("n + 1", ["n"]).valid


def test_str_and_bytes_programs_are_judged_alike_and_bad_bytes_every_time():
    checker = Checker()
    assert checker.check("x = 1\nx").valid and checker.check(b"x = 1\nx").valid
    for _ in range(2):
        assert rules_of(checker.check(b"x = '\xff'")) == ["encoding"]


def test_with_custom_rules_every_check_runs_them():
    seen = []

    def no_second_look(tree):
        seen.append(tree)
        return ["seen before"] if len(seen) > 1 else []

    checker = Checker(rules=[no_second_look])
    assert checker.check("x = 1").valid
    assert not checker.check("x = 1").valid and len(seen) == 2


def test_callers_on_many_threads_share_a_checker(monkeypatch):
    """Jail.run validates on its callers' threads: keeping and dropping verdicts while other
    threads do the same never fails a check."""
    import sys
    import threading

    from lackjail import checker as checker_module

    monkeypatch.setattr(checker_module, "CACHED", 4)  # every new program drops a kept one
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as they can
    checker, failures = Checker(), []

    def work(offset):
        try:
            for i in range(1500):
                assert checker.check(f"x = len([1, {offset}, {i % 50}])\nx", {}).valid
        except Exception as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []


def test_a_packs_members_are_tools_and_a_tools_attribute_is_not():
    """The Checker names a pack's members to the validator (fs.read), so `fs.read(...)` is a
    call of a tool while `read_file.upper(...)` reads an attribute of one, and is rejected."""
    checker = Checker(kit="fs")
    assert checker.check("x = fs.read('a.txt')").valid
    assert [e.rule for e in checker.check("x = fs.nothing('a.txt')").errors] == ["unknown-call"]
    plain = Checker(kit="read_file")
    assert [e.rule for e in plain.check("x = read_file.upper('a')").errors] == ["tool-attribute"]


def test_check_builds_a_checker_once_per_policy_kit_and_language(monkeypatch):
    import lackjail.checker as checker

    built = []
    real = checker.Checker.__init__

    def counting(self, *args, **kwargs):
        built.append(args)
        real(self, *args, **kwargs)

    monkeypatch.setattr(checker, "_checkers", {})
    monkeypatch.setattr(checker.Checker, "__init__", counting)
    for n in range(3):
        assert lackjail.check(f"x = {n}").valid
        assert lackjail.check(f"y = read_file('a{n}')", kit="readonly").valid
        assert lackjail.check(f"z = {n}", language="lackpy").valid
    assert len(built) == 3


def test_check_sees_a_policy_file_that_changed(tmp_path, monkeypatch):
    import lackjail.checker as checker

    monkeypatch.setattr(checker, "_checkers", {})
    path = tmp_path / "p.toml"
    path.write_text('name = "p"\n[limits]\nprogram_bytes = 1000\n')
    assert lackjail.check("x = 'abcdefghijk'", policy=str(path)).valid
    path.write_text('name = "p"\n[limits]\nprogram_bytes = 10\n')  # same size, new mtime
    os.utime(path, ns=(1, 1))
    result = lackjail.check("x = 'abcdefghijk'", policy=str(path))
    assert rules_of(result) == ["limit-source-bytes"]


def test_check_sees_a_workspace_kit_that_appeared_or_changed(tmp_path, monkeypatch):
    import lackjail.checker as checker

    monkeypatch.setattr(checker, "_checkers", {})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KitError):
        lackjail.check("x = 1", kit="mine")
    kits = tmp_path / ".lackjail" / "kits"
    kits.mkdir(parents=True)
    (kits / "mine.kit").write_text("---\nname: mine\n---\nread_file\n")
    assert lackjail.check("x = read_file('a')", kit="mine").valid
    (kits / "mine.kit").write_text("---\nname: mine\n---\nlist_dir\n")
    os.utime(kits / "mine.kit", ns=(1, 1))
    assert rules_of(lackjail.check("x = read_file('a')", kit="mine")) == ["unknown-call"]


def test_validations_with_other_tools_or_parameters_never_share_their_names():
    """The validator keeps the names it built for a (tools, params) pair: each pair its own."""
    from lackjail.lang import validate

    for _ in range(2):  # the second time from what was kept
        assert validate("x = read_file(p)", tools=("read_file",), params=("p",)).valid
        assert rules_of(validate("x = read_file(p)", tools=("grep",), params=("p",))) == [
            "unknown-call"
        ]
        assert not validate("x = read_file(p)", tools=("read_file",), params=("q",)).valid
        assert validate("x = read_file(p)", tools=["read_file"], params=["p"]).valid


def test_a_tool_called_by_name_or_as_a_packs_member_still_has_its_call_checked():
    class Spec:
        def __init__(self, *args):
            self.args = args

    class Arg:
        def __init__(self, name, type_, required=True):
            self.name, self.type, self.required = name, type_, required

    class Kit:
        names = ("read_file", "fs")
        specs = {"read_file": Spec(Arg("path", "str")), "fs.read": Spec(Arg("path", "str"))}

    checker = Checker(kit=Kit())
    assert rules_of(checker.check("x = read_file(42)")) == ["tool-call"]
    assert rules_of(checker.check("x = fs.read(1, 2)")) == ["tool-call"]
    assert checker.check("x = len([1])\nx").valid  # no tool called: nothing to check
