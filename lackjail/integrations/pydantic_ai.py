"""pydantic-ai: `code_tool(jail)`, a Tool that runs the model's programs in a lackjail session.

    from lackjail.integrations.pydantic_ai import code_tool

    with lackjail.Jail(kit="readonly") as jail:
        agent = Agent(model, tools=[code_tool(jail)],
                      instructions=lackjail.prompt(kit=jail.kit))
        agent.run_sync("How many Python files are there?")

The tool takes one argument, `code`, and returns what the program printed and
its value. A program that is rejected or fails raises ModelRetry with the
`program:line:col: message` lines, so the model writes it again.
"""

from __future__ import annotations

from lackjail.integrations.common import code_function, missing_extra, session_of, tool_description

try:
    from pydantic_ai import ModelRetry, Tool
except ImportError as exc:  # the optional extra
    raise missing_extra(__name__, "pydantic-ai", "pydantic-ai", exc) from None


def code_tool(jail, *, name: str = "run_code", max_retries: int = 3) -> Tool:
    """A pydantic-ai Tool named NAME running programs in one session of JAIL (a lackjail.Jail,
    or a CodeSession to share one); a failed program is a retry, MAX_RETRIES in a row at most."""
    session = session_of(jail)

    run_code = code_function(
        session, ModelRetry, "Run CODE; what it printed and its value come back."
    )

    return Tool(
        run_code,
        name=name,
        description=tool_description(session.jail),
        max_retries=max_retries,
    )
