"""OpenAI Agents SDK: `code_tool(jail)`, a function tool that runs the model's programs in a
lackjail session.

    from lackjail.integrations.openai_agents import code_tool

    with lackjail.Jail(kit="readonly") as jail:
        agent = Agent(name="coder", tools=[code_tool(jail)],
                      instructions=lackjail.prompt(kit=jail.kit))
        Runner.run_sync(agent, "How many Python files are there?")

The tool takes one argument, `code`. A program that is rejected or fails is
the tool's error: the model reads the `program:line:col: message` lines.
"""

from __future__ import annotations

from lackjail.errors import InputError
from lackjail.integrations.common import code_function, missing_extra, session_of, tool_description

try:
    from agents import FunctionTool, function_tool
except ImportError as exc:  # the optional extra
    raise missing_extra(__name__, "openai-agents", "openai-agents", exc) from None


class ProgramFailed(InputError):
    """A program was rejected or failed; its text is what the model reads."""


def code_tool(jail, *, name: str = "run_code") -> FunctionTool:
    """A function tool named NAME running programs in one session of JAIL (a lackjail.Jail, or a
    CodeSession to share one). The SDK runs it on a thread of its own."""
    session = session_of(jail)

    run_code = code_function(session, ProgramFailed, "Run a program.")

    return function_tool(
        run_code,
        name_override=name,
        description_override=tool_description(session.jail),
        failure_error_function=_as_told,
    )


def _as_told(context, error: Exception) -> str:
    """What the model reads when the tool fails: the program's problem as it is."""
    return str(error)
