"""OpenAI Agents SDK: the Runner with lackjail's code_tool and a scripted Model (no network,
tracing off), the real jail."""

import json

import pytest

pytest.importorskip(
    "agents", reason="openai-agents is not installed (pip install 'lackjail[openai-agents]')"
)

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import lackjail  # noqa: E402
from lackjail.integrations.openai_agents import code_tool  # noqa: E402

pytestmark = pytest.mark.nsjail


def _outputs(items) -> list:
    """The tool outputs among a turn's input items."""
    return [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


class Scripted(Model):
    """Calls run_code with each program in turn, then answers with the last tool output; keeps
    the input items of each turn."""

    def __init__(self, programs):
        self.programs = list(programs)
        self.seen = []

    async def get_response(self, system_instructions, input, *args, **kwargs):
        self.seen.append(input)
        if self.programs:
            n = len(self.seen)
            call = ResponseFunctionToolCall(
                type="function_call",
                call_id=f"c{n}",
                id=f"fc{n}",
                name="run_code",
                arguments=json.dumps({"code": self.programs.pop(0)}),
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        outputs = [
            i for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        text = ResponseOutputText(type="output_text", text=outputs[-1]["output"], annotations=[])
        message = ResponseOutputMessage(
            id="m", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the scripted model does not stream")


def test_the_runner_runs_programs_in_one_session(tmp_path, require_nsjail):
    (tmp_path / "notes.txt").write_text("alpha beta\n")
    model = Scripted(["words = read_file('notes.txt').split()", "1 / 0", "words[::-1]"])
    with lackjail.Jail(kit="readonly", workers=1, workspace=str(tmp_path)) as jail:
        tool = code_tool(jail)
        assert tool.name == "run_code" and "read_file(path: str)" in tool.description
        agent = Agent(name="coder", model=model, tools=[tool], instructions=lackjail.prompt())
        result = Runner.run_sync(
            agent, "Reverse the words", run_config=RunConfig(tracing_disabled=True)
        )
    assert result.final_output == "Value: ['beta', 'alpha']"
    # the failure went back to the model as the tool's output, with its line and column
    failed = [i["output"] for i in _outputs(model.seen[2]) if i["call_id"] == "c2"]
    assert failed and failed[0].startswith("The program failed:\nprogram:1:1:")
    assert "ZeroDivisionError" in failed[0] or "division by zero" in failed[0]
