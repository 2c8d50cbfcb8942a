"""Templates: matching, injection-proof filling, the files, atomic counts, and the tier in the
pipeline.
"""

import ast
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lackjail.infer import TemplateError, TemplateStore, generate
from lackjail.infer.templates import IntentPattern, fill, parse_template

EXPLOIT = "x') if False else read_file('/etc/hostname"


def shape(program):
    """The program's AST with every literal's value blanked: what must not change."""
    tree = ast.parse(program)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value = "<literal>"
    return ast.dump(tree)


def literals(program):
    return [n.value for n in ast.walk(ast.parse(program)) if isinstance(n, ast.Constant)]


# --- patterns -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "intent, expected",
    [
        ("read the file notes.txt", {"path": "notes.txt"}),
        ("  READ   the\tFile  notes.txt  ", {"path": "notes.txt"}),
        ('read the file "my notes.txt"', {"path": "my notes.txt"}),
        ("read the file 'a b'", {"path": "a b"}),
        ("read the file", None),
        ("read the filenotes.txt", None),
        ("please read the file x", None),
    ],
)
def test_pattern_is_anchored_case_and_space_tolerant(intent, expected):
    assert IntentPattern.compile("read the file {path}").match(intent) == expected


def test_captures_are_shortest_and_the_last_part_ends_the_intent():
    pattern = IntentPattern.compile("copy {src} to {dst} now")
    assert pattern.match("copy a to b to c now") == {"src": "a", "dst": "b to c"}
    assert pattern.match("copy a to b now please") is None
    assert IntentPattern.compile("{a} to {b}.txt").match("x to y.TXT") == {"a": "x", "b": "y"}


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "  ",
        "read {path} {path}",
        "{a}{b}",
        "{a} {b}",
        "read {0path}",
        "read {path",
        "read path}",
    ],
)
def test_bad_patterns_are_refused(bad):
    with pytest.raises(TemplateError):
        IntentPattern.compile(bad)


def test_matching_a_hostile_intent_stays_fast():
    import time

    pattern = IntentPattern.compile("{a} and {b} and {c} now")
    started = time.process_time()  # CPU time: backtracking would take seconds, not ms
    assert pattern.match("and " * 2000) is None
    assert pattern.match(" " * 8000 + "x") is None
    assert time.process_time() - started < 2


# --- filling: captured text is data, never code -------------------------------------------------

BODIES = [
    "content = read_file({path})\ncontent",  # placeholder as code: becomes a literal
    "content = read_file('{path}')\ncontent",  # lackpy 0.15.1 style: inside a literal
    'files = find_files("src/{path}/*.py")\nlen(files)',  # part of a literal
]


@pytest.mark.parametrize("body", BODIES)
def test_lackpy_0_15_1_exploit_only_changes_the_literal(body):
    template = parse_template(f"---\nname: t\npattern: read the file {{path}}\n---\n{body}\n")
    values = template.match(f"read the file {EXPLOIT}")
    assert values == {"path": EXPLOIT}
    program = template.instantiate(values)
    assert shape(program) == shape(template.instantiate({"path": "notes.txt"}))
    calls = [n for n in ast.walk(ast.parse(program)) if isinstance(n, ast.Call)]
    assert len(calls) == len(
        [
            n
            for n in ast.walk(ast.parse(template.instantiate({"path": "a"})))
            if isinstance(n, ast.Call)
        ]
    )
    assert any(EXPLOIT in value for value in literals(program) if isinstance(value, str))


@pytest.mark.parametrize(
    "value",
    [
        "a'b",
        'a"b',
        "a'''b",
        'a"""b',
        "line1\nline2')\nread_file('/etc/passwd",
        "back\\slash\\",
        "\\",
        "x\\'); import os; ('",
        "{path}",
        "{other}",
        "\x00nul",
        "\r\n",
        "é\u2028\u202e",
        "'" * 50,
    ],
)
def test_hostile_values_only_change_the_literal(value):
    for body in BODIES:
        program = fill(body, {"path": value})
        assert shape(program) == shape(fill(body, {"path": "benign"}))
        assert any(value in v for v in literals(program) if isinstance(v, str))


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_any_text_only_changes_the_literal(value):
    for body in BODIES:
        program = fill(body, {"path": value})
        assert shape(program) == shape(fill(body, {"path": "benign"}))
        assert any(value in v for v in literals(program) if isinstance(v, str))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab '\"\\\n\t)(;#{}"), min_size=1, max_size=40))
def test_matched_intents_only_change_the_literal(tail):
    template = parse_template(
        "---\nname: t\npattern: read the file {path}\n---\nread_file({path})\n"
    )
    values = template.match("read the file " + tail)
    if values is not None:
        program = template.instantiate(values)
        assert shape(program) == shape("read_file('x')")
        assert literals(program) == [values["path"]]


def test_f_strings_and_other_sets_are_left_alone():
    body = "label = f'{path}'\nkinds = {kind}\n[label, kinds, read_file({path})]"
    program = fill(body, {"path": "p"})
    assert "f'{path}'" in program and "{kind}" in program and "read_file('p')" in program


# --- files --------------------------------------------------------------------------------------


def test_render_and_parse_round_trip(tmp_path):
    store = TemplateStore.at(tmp_path)
    saved = store.create("read-one", 'read: "{path}" # now', "content = read_file({path})\ncontent")
    [loaded], problems = store.load()
    assert problems == []
    assert (loaded.name, loaded.pattern.text, loaded.body) == (
        "read-one",
        'read: "{path}" # now',
        saved.body,
    )
    assert loaded.match('read: "x.txt" # now') == {"path": "x.txt"}


def test_create_refuses_to_replace_unless_forced(tmp_path):
    store = TemplateStore.at(tmp_path)
    store.create("t", "read {path}", "read_file({path})")
    with pytest.raises(TemplateError, match="exists"):
        store.create("t", "show {path}", "read_file({path})")
    assert store.load()[0][0].pattern.text == "read {path}"
    store.create("t", "show {path}", "read_file({path})", force=True)
    assert store.load()[0][0].pattern.text == "show {path}"
    assert sorted(p.name for p in store.directory.iterdir()) == ["t.tmpl"]  # no temporaries


@pytest.mark.parametrize(
    "name, pattern, body, message",
    [
        ("../evil", "read {path}", "read_file({path})", "name"),
        ("t", "read {path}", "read_file(path)", "never uses {path}"),
        ("t", "read {path}", "read_file(", "does not parse"),
        ("t", "read {path}", " \n", "the program is empty"),
    ],
)
def test_create_rejects_bad_templates(tmp_path, name, pattern, body, message):
    with pytest.raises(TemplateError, match=message):
        TemplateStore.at(tmp_path).create(name, pattern, body)
    assert not list(tmp_path.rglob("*.tmpl"))


def test_broken_files_are_reported_and_skipped(tmp_path):
    store = TemplateStore.at(tmp_path)
    store.create("good", "read {path}", "read_file({path})")
    (store.directory / "nofront.tmpl").write_text("read_file('x')\n")
    (store.directory / "other.tmpl").write_text("---\nname: different\npattern: x\n---\n1\n")
    (store.directory / "syntax.tmpl").write_text("---\npattern: x {y}\n---\nread_file({y}\n")
    templates, problems = store.load()
    assert [t.name for t in templates] == ["good"]
    assert len(problems) == 3 and any("rename the file" in p for p in problems)


def test_counts_add_up_under_concurrency(tmp_path):
    store = TemplateStore.at(tmp_path)
    store.create("t", "read {path}", "read_file({path})")

    def work(ok):
        for _ in range(10):
            assert store.record("t", ok)

    threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [template], _ = store.load()
    assert (template.success_count, template.fail_count) == (30, 30)
    assert store.record("missing", True) is False


def test_best_track_record_is_tried_first(tmp_path):
    store = TemplateStore.at(tmp_path)
    store.create("a-flaky", "show {path}", "read_file({path})")
    store.create("b-solid", "show {path}", "content = read_file({path})\ncontent")
    store.record("a-flaky", False)
    store.record("b-solid", True)
    assert [t.name for t, _ in store.matches("show x")[0]] == ["b-solid", "a-flaky"]


# --- the tier -----------------------------------------------------------------------------------


def test_templates_tier_comes_first_and_validates(tmp_path, kit):
    store = TemplateStore.at(tmp_path)
    store.create("bad-tool", "read the file {path}", "cat_file({path})")
    store.create("read", "read the file {path}", "content = read_file({path})\ncontent")
    gen = generate(f"read the file {EXPLOIT}", kit, config={"order": ["templates", "rules"]})
    assert (gen.tier, gen.source) == ("templates", "read")
    assert gen.program == f"content = read_file({EXPLOIT!r})\ncontent"
    rejected = [a for a in gen.attempts if a["errors"]]
    assert [a["source"] for a in rejected] == ["bad-tool"]


def test_no_template_falls_through_with_a_note(tmp_path, kit):
    gen = generate(
        "find all python files and count them", kit, config={"order": ["templates", "rules"]}
    )
    assert gen.tier == "rules"
    assert gen.notes == [
        {"tier": "templates", "reason": "no template matches the intent", "unavailable": False}
    ]


def test_a_body_is_checked_with_its_placeholders_as_parameters_in_place():
    from lackjail.checker import Checker
    from lackjail.infer.templates import as_checked

    body = "x = read_file({path})\ny = {1}\nz = read_file({ path }, 2)"
    seen = as_checked(body, ("path",))
    assert seen == "x = read_file( path )\ny = {1}\nz = read_file(  path  , 2)"
    [error] = Checker(kit="readonly").check(seen, ("path",)).errors
    assert (error.rule, error.line, error.col) == ("tool-call", 3, 5)  # where it was written
