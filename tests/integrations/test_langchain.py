"""LangChain: LackjailTool driven by a fake chat model's tool calls (no network), the tool
messages going back as a LangChain agent loop sends them, the real jail."""

import pytest

pytest.importorskip(
    "langchain_core", reason="langchain-core is not installed (pip install 'lackjail[langchain]')"
)

from langchain_core.language_models.fake_chat_models import (  # noqa: E402
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402

import lackjail  # noqa: E402
from lackjail.integrations.langchain import LackjailTool  # noqa: E402

pytestmark = pytest.mark.nsjail


def call(code: str, n: int) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "run_code", "args": {"code": code}, "id": f"c{n}"}]
    )


def loop(model, tool, question: str) -> list:
    """The agent loop: the model's tool calls run, their messages go back, until it answers."""
    messages = [HumanMessage(question)]
    while True:
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return messages
        messages += [tool.invoke(tool_call) for tool_call in reply.tool_calls]


def test_tool_calls_share_a_session_and_errors_are_messages(tmp_path, require_nsjail):
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.md").write_text("")
    model = FakeMessagesListChatModel(
        responses=[
            call("found = find_files('*')", 1),
            call("found.append(", 2),  # a syntax error: the model reads where
            call("len(found)", 3),
            AIMessage(content="There are 2 files."),
        ]
    )
    with lackjail.Jail(kit="readonly", workers=1, workspace=str(tmp_path)) as jail:
        tool = LackjailTool.of(jail)
        assert tool.name == "run_code" and "find_files(pattern: str)" in tool.description
        messages = loop(model, tool, "How many files?")
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["c1", "c2", "c3"]
    assert results[0].content == "Value: None" and results[0].status == "success"
    assert results[1].status == "error"
    assert results[1].content.startswith("The program was rejected before it ran:\nprogram:1:")
    assert "[syntax]" in results[1].content
    assert results[2].content == "Value: 2"
    assert messages[-1].content == "There are 2 files."
