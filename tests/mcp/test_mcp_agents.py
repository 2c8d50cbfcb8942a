"""What an agent meets over MCP: the kit's tools in the descriptions, hints it can act on (no
command-line flags), the bundled kits' docs, a server that answers before its jail is open, and
sessions that keep state between calls. In process, with the SDK's own client."""

import json
import threading
from concurrent.futures import Future

import anyio
import pytest
from mcp import Client

from lackjail.checker import Checker
from lackjail.kit import resolve_kit
from lackjail.mcp import Served, build_server
from lackjail.policy import load_policy


def payload(result) -> dict:
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


def talk(server, body):
    """BODY(client) against SERVER through the SDK's in-memory transport; BODY's value."""

    async def main():
        async with Client(server) as client:
            with anyio.fail_after(120):
                return await body(client)

    return anyio.run(main)


def opening(kit_name: str, workspace, future: Future) -> Served:
    """A Served whose jail is FUTURE, made from kit KIT_NAME, as `lackjail serve` makes it."""
    policy, kit = load_policy("default"), resolve_kit(kit_name)
    return Served(
        future,
        policy=policy,
        kit=kit,
        workspace=str(workspace),
        checker=Checker(policy, kit, audience="mcp"),
    )


def test_descriptions_list_the_kits_tools_and_hints_name_no_flag(tmp_path):
    """Nothing here needs the jail: the server answers while it is still opening."""
    never: Future = Future()  # a jail that is still opening, all test long
    server = build_server(opening("readonly", tmp_path, never))
    kit = resolve_kit("readonly")

    async def body(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("run_program", "check_program"):
            for call, spec in kit.specs.items():
                assert spec.signature(call) in tools[name].description, (name, call)
        assert "write_file" not in tools["run_program"].description
        assert "session" in tools["run_program"].input_schema["properties"]

        checks = {
            "x = write_file('a', 'b')": "the bundled kit 'files' has it",
            "x = read_file('a', 'b')": "call it as read_file(path: str)",
            "while True:\n    x = 1": 'accepted with the language argument "extended"',
            "import os": "call a tool of the kit",
        }
        for program, hint in checks.items():
            errors = payload(await client.call_tool("check_program", {"program": program}))
            messages = " ".join(e["message"] for e in errors["errors"])
            assert hint in messages and "--" not in messages, messages

        index = payload(await client.call_tool("docs_index", {}))
        assert index["docs"] == {"lackjail:readonly.md": "kit readonly"}
        doc = payload(await client.call_tool("resolve_doc", {"path": "lackjail:readonly.md"}))
        assert doc["text"].startswith("# kit readonly")
        return True

    assert talk(server, body) and not never.done()


def test_a_jail_that_could_not_open_is_the_error_of_each_run(tmp_path):
    failed: Future = Future()
    failed.set_exception(RuntimeError("nsjail cannot run here: no user namespaces"))
    server = build_server(opening("readonly", tmp_path, failed))

    async def body(client):
        ran = await client.call_tool("run_program", {"program": "1 + 1"})
        assert ran.is_error
        assert ran.content[0].text.endswith(
            "the jail could not start: nsjail cannot run here: no user namespaces"
        )
        checked = payload(await client.call_tool("check_program", {"program": "1 + 1"}))
        assert checked["valid"] is True

    talk(server, body)


def test_a_run_waits_for_the_jail_that_is_opening(tmp_path, require_nsjail):
    from lackjail import Jail

    later: Future = Future()
    server = build_server(opening("readonly", tmp_path, later))

    def open_now():
        later.set_result(Jail(kit="readonly", workers=1, workspace=str(tmp_path)))

    async def body(client):
        threading.Timer(0.2, open_now).start()
        return payload(await client.call_tool("run_program", {"program": "6 * 7"}))

    try:
        assert talk(server, body)["value"] == 42
    finally:
        later.result().close()


@pytest.fixture
def jail(tmp_path, require_nsjail):
    from lackjail import Jail

    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    with Jail(kit="readonly", workers=1, workspace=str(tmp_path)) as opened:
        yield opened


def test_sessions_keep_state_between_calls_until_closed(jail):
    server = build_server(jail)

    async def call(client, program, **more):
        return await client.call_tool("run_program", {"program": program, **more})

    async def body(client):
        first = payload(
            await call(client, "lines = read_file('notes.txt').splitlines()", session="a")
        )
        assert (first["status"], first["session"], first["session_new"]) == ("ok", "a", True)
        checked = await client.call_tool("check_program", {"program": "len(lines)", "session": "a"})
        assert payload(checked)["valid"] is True
        unbound = await client.call_tool("check_program", {"program": "len(lines)"})
        assert payload(unbound)["errors"][0]["rule"] == "undefined-name"
        second = payload(await call(client, "len(lines)", session="a"))
        assert (second["value"], second["session"]) == (2, "a") and "session_new" not in second

        # another session, and a plain run, see nothing of session a
        other = await call(client, "len(lines)", session="b")
        assert other.is_error and payload(other)["errors"][0]["rule"] == "undefined-name"
        plain = await call(client, "len(lines)")
        assert plain.is_error and "session" not in payload(plain)

        fresh = payload(await call(client, "n = 5", session="new"))
        assert fresh["session"].startswith("s-") and fresh["session_new"] is True
        again = payload(await call(client, "n + 1", session=fresh["session"]))
        assert again["value"] == 6

        closed = payload(await client.call_tool("close_session", {"session": "a"}))
        assert closed == {"session": "a", "closed": True}
        reopened = await call(client, "len(lines)", session="a")
        assert reopened.is_error and payload(reopened)["session_new"] is True
        unknown = await client.call_tool("close_session", {"session": "zzz"})
        assert unknown.is_error and "no open session named 'zzz'" in unknown.content[0].text

        bad = await call(client, "1", session="../a")
        assert bad.is_error and "is not a session name" in bad.content[0].text
        dry = await call(client, "1", session="a", dry_run=True)
        assert dry.is_error and "dry_run runs outside sessions" in dry.content[0].text

    talk(server, body)


def serve_under(policy_text: str, tmp_path, body):
    """BODY(client) against a server whose jail runs under the policy POLICY_TEXT."""
    from lackjail import Jail

    policy = tmp_path / "sessions.toml"
    policy.write_text('name = "sessions"\n' + policy_text)
    with Jail(policy=str(policy), kit="readonly", workers=1, workspace=str(tmp_path)) as opened:
        return talk(build_server(opened), body)


async def run_in(client, program, session):
    return await client.call_tool("run_program", {"program": program, "session": session})


def test_sessions_beyond_the_policys_maximum_name_those_to_close(tmp_path, require_nsjail):
    async def body(client):
        assert payload(await run_in(client, "x = 1", "a"))["session_new"] is True
        full = await run_in(client, "1", "b")
        assert full.is_error and "close_session one of: a" in full.content[0].text
        await client.call_tool("close_session", {"session": "a"})
        assert payload(await run_in(client, "1", "b"))["value"] == 1

    serve_under("[pool]\nmax_sessions = 1\n", tmp_path, body)


def test_an_idle_session_ends_and_the_next_run_says_so(tmp_path, require_nsjail):
    import time

    async def body(client):
        assert payload(await run_in(client, "x = 1", "a"))["session_new"] is True
        deadline = time.monotonic() + 120  # closed by the Jail once idle: no tight margin
        while time.monotonic() < deadline:
            checked = await client.call_tool("check_program", {"program": "x", "session": "a"})
            if not payload(checked)["valid"]:
                break
            await anyio.sleep(0.2)
        again = payload(await run_in(client, "y = 2", "a"))
        assert again["session_new"] is True and "idle" in again["session_ended"]

    serve_under("[pool]\nsession_idle_s = 0.5\n", tmp_path, body)
