"""smolagents' CodeAgent on LackjailExecutor, end to end: a scripted model (no network), the
real agent loop, the real jail."""

import pytest

pytest.importorskip(
    "smolagents", reason="smolagents is not installed (pip install 'lackjail[smolagents]')"
)

from smolagents import CodeAgent, tool  # noqa: E402
from smolagents.models import ChatMessage, Model  # noqa: E402

from lackjail.integrations.smolagents import LackjailExecutor  # noqa: E402

pytestmark = pytest.mark.nsjail


class Scripted(Model):
    """A model that answers each step with the next canned reply, and keeps what it was sent."""

    def __init__(self, replies):
        super().__init__(model_id="scripted")
        self.replies = list(replies)
        self.seen = []  # the text of the messages of each step

    def generate(self, messages, stop_sequences=None, **kwargs):
        self.seen.append("\n".join(_text(m) for m in messages))
        return ChatMessage(role="assistant", content=self.replies.pop(0))


def _text(message) -> str:
    content = message.content if hasattr(message, "content") else message["content"]
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content)
    return content or ""


def step(thought: str, code: str) -> str:
    return f"Thought: {thought}\n<code>\n{code}\n</code>"


@tool
def shout(text: str) -> str:
    """Make a text loud.

    Args:
        text: the text to make loud.
    """
    return text.upper() + "!"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    (tmp_path / "notes.md").write_text("hi\n")
    return tmp_path


def test_a_two_step_task_carries_a_variable_from_step_one_to_step_two(workspace, require_nsjail):
    model = Scripted(
        [
            step(
                "Find the Python files first.",
                "files = find_files('*.py')\nprint(f'found {len(files)} files')",
            ),
            step(
                "Now name them, loudly.",
                "final_answer(shout(', '.join(sorted(files))))",
            ),
        ]
    )
    with LackjailExecutor(kit="readonly", workspace=str(workspace)) as executor:
        agent = CodeAgent(
            tools=[shout], model=model, executor=executor, instructions=executor.instructions()
        )
        answer = agent.run("Which Python files are there?")
    assert answer == "A.PY, B.PY!"
    assert len(model.seen) == 2
    # step 1's printed output came back to the model as the step's logs
    assert "found 2 files" in model.seen[1]
    # the model was told the language's rules and the kit's tools
    assert "Language spec:" in model.seen[0] and "find_files(pattern: str)" in model.seen[0]


def test_a_rejected_program_is_shown_to_the_model_which_fixes_it(workspace, require_nsjail):
    model = Scripted(
        [
            step("Read the notes.", "import os\nnotes = os.listdir('.')"),
            step("No imports: use the tool.", "notes = read_file('notes.md')\nnotes.strip()"),
            step("Done.", "final_answer(notes.strip())"),
        ]
    )
    with LackjailExecutor(kit="readonly", workspace=str(workspace)) as executor:
        agent = CodeAgent(tools=[], model=model, executor=executor)
        answer = agent.run("What do the notes say?")
    assert answer == "hi"
    # the rejection reached the model with its place and what to write instead
    assert "program:1:1: 'import' is not allowed" in model.seen[1]
    assert "call a tool of the kit" in model.seen[1]
    # the value of step 2's last expression is its observation
    assert "Last output from code snippet:\nhi" in model.seen[2]


def test_variables_sent_by_the_agent_are_variables_of_the_session(workspace, require_nsjail):
    model = Scripted([step("Use the given number.", "final_answer(n * 2)")])
    with LackjailExecutor(workspace=str(workspace)) as executor:
        agent = CodeAgent(tools=[], model=model, executor=executor)
        assert agent.run("Double n.", additional_args={"n": 21}) == 42


def test_state_lasts_across_runs_of_the_agent_until_cleanup(workspace, require_nsjail):
    executor = LackjailExecutor(workspace=str(workspace))
    try:
        first = CodeAgent(tools=[], model=Scripted([step("a", "k = 7\nfinal_answer(k)")]))
        first.python_executor = executor
        assert first.run("set k") == 7
        second = CodeAgent(tools=[], model=Scripted([step("b", "final_answer(k + 1)")]))
        second.python_executor = executor
        assert second.run("use k", reset=False) == 8
    finally:
        executor.cleanup()


@tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the page's address.
    """
    raise ConnectionError(f"cannot reach {url}")


def test_a_tool_that_fails_is_an_error_the_model_reads(workspace, require_nsjail):
    model = Scripted(
        [
            step("Fetch it.", "page = fetch('http://example.invalid/')"),
            step("It failed; answer anyway.", "final_answer('unreachable')"),
        ]
    )
    with LackjailExecutor(workspace=str(workspace), language="extended") as executor:
        agent = CodeAgent(tools=[fetch], model=model, executor=executor)
        assert agent.run("Fetch the page.") == "unreachable"
    assert "The program failed:" in model.seen[1]
    assert "cannot reach http://example.invalid/" in model.seen[1]
