"""Tool calls checked against the kit's signatures before anything runs (rule tool-call)."""

import subprocess
import sys

import pytest

from lackjail.checker import Checker
from lackjail.lang import validate


@pytest.fixture(scope="module")
def files():
    return Checker(kit="files")


def messages(checker, program):
    return [e.format("agent.py") for e in checker.check(program).errors]


# (program, the diagnostic a model gets back: file:line:col: message and how to call it)
CASES = [
    (
        "x = read_file('a.txt', 'utf-8')",
        "agent.py:1:5: read_file() takes 1 argument but 2 were given; "
        "call it as read_file(path: str) [tool-call]",
    ),
    (
        "x = read_file(42)",
        "agent.py:1:15: read_file() argument 'path' must be str, not int; "
        "call it as read_file(path: str) [tool-call]",
    ),
    (
        "hits = grep('text', patern='x')",
        "agent.py:1:21: grep() has no argument 'patern' (did you mean 'pattern'?); "
        "call it as grep(text: str, [pattern: str]) [tool-call]",
    ),
    (
        "write_file('a.txt')",
        "agent.py:1:1: write_file() is missing required argument 'content'; "
        "call it as write_file(path: str, content: str) [tool-call]",
    ),
    (
        "read_file('a', path='b')",
        "agent.py:1:16: read_file() gets argument 'path' twice; "
        "call it as read_file(path: str) [tool-call]",
    ),
    (
        "edit_file('a', ['old'], new_str=-1.5)",
        "agent.py:1:16: edit_file() argument 'old_str' must be str, not list; "
        "call it as edit_file(path: str, old_str: str, new_str: str) [tool-call]",
    ),
    (
        "names = list_dir({'a': 1})",
        "agent.py:1:18: list_dir() argument 'path' must be str, not dict; "
        "call it as list_dir([path: str]) [tool-call]",
    ),
]


@pytest.mark.parametrize(("program", "diagnostic"), CASES)
def test_a_call_the_tool_would_refuse_is_rejected_with_how_to_call_it(files, program, diagnostic):
    found = messages(files, program)
    assert diagnostic in found, found


@pytest.mark.parametrize(
    "program",
    [
        "x = read_file('a.txt')",
        "x = read_file(path='a.txt')",
        "x = list_dir()",
        "x = grep(read_file('a'), pattern='x')",
        "x = edit_file('a', f'{1}', 'new')",
        "name = 'a'\nx = read_file(name)",  # a name may hold anything until the program runs
        "args = ['a']\nx = read_file(*args)",  # positions after a *list are unknown
        "opts = {'pattern': 'x'}\nx = grep('text', **opts)",  # as are keywords of a **mapping
    ],
)
def test_calls_that_fit_the_signature_pass(files, program):
    assert files.check(program).valid, messages(files, program)


def test_the_check_holds_at_every_level():
    program = "def f():\n    return read_file(1, 2)\nf()"
    found = messages(Checker(kit="files", language="extended"), program)
    assert found == [
        "agent.py:2:12: read_file() takes 1 argument but 2 were given; "
        "call it as read_file(path: str) [tool-call]"
    ]


def test_an_int_is_a_float_and_any_takes_anything():
    signatures = {
        "scale": (("by", ("float",), True), ("what", None, False)),
        "fs.read": (("path", ("str", "None"), True),),
    }
    assert validate("scale(2, [1])", tools=["scale"], signatures=signatures).valid
    assert validate("scale(-2.5, what={})", tools=["scale"], signatures=signatures).valid
    assert validate("fs.read(None)", tools=["fs.read"], signatures=signatures).valid
    [error] = validate("fs.read(b'x')", tools=["fs.read"], signatures=signatures).errors
    assert (error.rule, error.line, error.col) == ("tool-call", 1, 9)
    assert "fs.read() argument 'path' must be str | None, not bytes" in error.message


def test_columns_count_characters_after_non_ascii_text(files):
    [error] = files.check("s = 'é'; read_file(s, 1)").errors
    assert (error.line, error.col) == (1, 10)


def test_a_kit_given_as_names_has_no_signatures_to_check():
    assert Checker(kit=["read_file"]).check("read_file(1, 2, 3)").valid


def test_the_jail_never_loads_the_call_check():
    """The jail validates without signatures: lang.calls stays unloaded there."""
    code = (
        "import sys; sys.path.insert(0, '.'); from lackjail.lang import validate\n"
        "assert validate('x = read_file(1, 2)', tools=['read_file']).valid\n"
        "print('lackjail.lang.calls' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.nsjail
def test_a_callable_tool_is_checked_against_its_own_signature(require_nsjail, tmp_path):
    from lackjail import Jail

    def lookup(name: str, limit: int = 10) -> list:
        """Find people by name."""
        return [name][:limit]

    with Jail(tools=[lookup], workers=1, workspace=str(tmp_path)) as jail:
        [error] = jail.check("lookup('ada', limit='3')").errors
        assert error.format("agent.py") == (
            "agent.py:1:21: lookup() argument 'limit' must be int, not str; "
            "call it as lookup(name: str, [limit: int]) [tool-call]"
        )
        result = jail.run("lookup('ada', 10, 'x')")
        assert result.status == "invalid" and "takes 2 arguments but 3" in str(result.errors)
