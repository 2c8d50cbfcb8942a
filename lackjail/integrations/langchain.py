"""LangChain: `LackjailTool`, a BaseTool that runs the model's programs in a lackjail session.

    from lackjail.integrations.langchain import LackjailTool

    with lackjail.Jail(kit="readonly") as jail:
        tool = LackjailTool.of(jail)
        model = chat_model.bind_tools([tool])  # and lackjail.prompt(kit=jail.kit) as system text
        tool.invoke(ai_message.tool_calls[0])  # -> a ToolMessage

The tool takes one argument, `code`. A program that is rejected or fails
raises ToolException, which the tool (handle_tool_error) turns into the
ToolMessage the model reads, with the `program:line:col: message` lines.
"""

from __future__ import annotations

from lackjail.integrations.common import (
    CodeSession,
    answer,
    missing_extra,
    session_of,
    tool_description,
)

try:
    from langchain_core.tools import BaseTool, ToolException
    from pydantic import BaseModel, ConfigDict, Field
except ImportError as exc:  # the optional extra
    raise missing_extra(__name__, "langchain-core", "langchain", exc) from None


class CodeInput(BaseModel):
    code: str = Field(description="the program, as plain source text")


class LackjailTool(BaseTool):
    """Runs programs in one lackjail session (`session`, a CodeSession); make one with `of`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    name: str = "run_code"
    description: str = "Run a program in a lackjail sandbox."
    args_schema: type[BaseModel] = CodeInput
    handle_tool_error: bool = True  # a failed program is the model's to read, not a crash
    session: CodeSession

    @classmethod
    def of(cls, jail, **fields) -> LackjailTool:
        """The tool for JAIL (a lackjail.Jail, or a CodeSession to share one)."""
        session = session_of(jail)
        fields.setdefault("description", tool_description(session.jail))
        return cls(session=session, **fields)

    def _run(self, code: str, **_) -> str:
        return answer(self.session, code, ToolException)
