"""MCP: run_program and check_program take a language among the policy's levels, unwrap a
Markdown fence, and name a higher level as the language argument, never as a CLI flag."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_mcp_server import payload, session  # noqa: E402

DEF = "def f(x):\n    return 10 // x\n\nf(0)"


def test_language_fence_and_hints(tmp_path, require_nsjail):
    (tmp_path / "only.toml").write_text('name = "only"\nlanguages = ["lackpy", "extended"]\n')

    async def body(client):
        rejected = payload(await client.call_tool("run_program", {"program": DEF}))
        assert rejected["status"] == "invalid"
        message = rejected["errors"][0]["message"]
        assert message.endswith('accepted with the language argument "extended"')
        assert "--" not in message  # no flag: an MCP client has none to pass

        ran = payload(
            await client.call_tool(
                "run_program",
                {"program": f"Here you go:\n```python\n{DEF}\n```", "language": "extended"},
            )
        )
        error = ran["errors"][0]
        assert ran["status"] == "error" and "ZeroDivisionError" in error["message"]
        assert error["line"] == 4  # in the text sent, fence and prose included
        assert [(f["function"], f["line"]) for f in error["traceback"]] == [
            ("<module>", 6),
            ("f", 4),
        ]

        checked = payload(
            await client.call_tool("check_program", {"program": DEF, "language": "extended"})
        )
        assert checked["valid"] is True
        fenced = payload(await client.call_tool("check_program", {"program": f"```\n{DEF}\n```"}))
        assert not fenced["valid"] and fenced["errors"][0]["line"] == 2

        opened = payload(
            await client.call_tool(
                "run_program",
                {
                    "program": "def twice(x):\n    return 2 * x",
                    "session": "s1",
                    "language": "extended",
                },
            )
        )
        assert opened["status"] == "ok" and opened["session_new"]
        again = payload(
            await client.call_tool("run_program", {"program": "twice(21)", "session": "s1"})
        )
        assert (again["status"], again["value"]) == ("ok", 42)  # the session keeps its level
        checked = payload(
            await client.call_tool(
                "check_program", {"program": "while False:\n    pass\ntwice(1)", "session": "s1"}
            )
        )
        assert checked["valid"] is True  # checked at the session's level, with its names
        other = await client.call_tool(
            "run_program", {"program": "1", "session": "s1", "language": "lackpy"}
        )
        assert other.is_error and "runs at language 'extended'" in other.content[0].text

        refused = await client.call_tool("run_program", {"program": "1", "language": "python"})
        assert refused.is_error
        text = refused.content[0].text
        assert "language:" in text and "lackpy, extended" in text
        return True

    assert session(tmp_path, "--policy", str(tmp_path / "only.toml"))(body)
