"""pydantic-ai's Agent with lackjail's code_tool, end to end: a FunctionModel scripted to call
the tool (no network), the real agent loop, the real jail."""

import pytest

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai is not installed (pip install 'lackjail[pydantic-ai]')"
)

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import FunctionModel  # noqa: E402

import lackjail  # noqa: E402
from lackjail.integrations.pydantic_ai import code_tool  # noqa: E402

pytestmark = pytest.mark.nsjail


def scripted(programs):
    """A FunctionModel that sends PROGRAMS to run_code one per turn, then answers with what the
    last call returned; it keeps every part it was sent."""
    seen = []

    def reply(messages, info):
        parts = [part for message in messages for part in message.parts]
        seen.append(parts)
        if programs:
            return ModelResponse(parts=[ToolCallPart("run_code", {"code": programs.pop(0)})])
        returned = [p for p in parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(returned[-1].content)])

    return FunctionModel(reply), seen


def test_state_carries_between_tool_calls_and_failures_are_retried(tmp_path, require_nsjail):
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    model, seen = scripted(
        [
            "lines = read_file('notes.txt').splitlines()",
            "import os",  # rejected: the model is asked to try again
            "print(len(lines))\nlines[-1]",
        ]
    )
    with lackjail.Jail(kit="readonly", workers=1, workspace=str(tmp_path)) as jail:
        tool = code_tool(jail)
        assert "read_file(path: str) -> str" in tool.description
        agent = Agent(model, tools=[tool], instructions=lackjail.prompt(kit=jail.kit))
        result = agent.run_sync("How many lines, and the last one?")
    assert result.output == "Printed:\n3\nValue: 'three'"
    # the rejection went back to the model as a retry, with its place and what to write instead
    [retry] = [p for p in seen[2] if _retried(p)]
    assert "program:1:1: 'import' is not allowed in lackpy: call a tool of the kit" in str(
        retry.content
    )


def _retried(part) -> bool:
    """A retry of the tool call: a RetryPromptPart (pydantic-ai 1), or a tool return whose
    outcome is 'retried' (pydantic-ai 2)."""
    return isinstance(part, RetryPromptPart) or getattr(part, "outcome", None) == "retried"
