"""`lackjail serve` with a real MCP client session over stdio (the mcp 2.x client library)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from lackjail.cli.serve import serve
from lackjail.lang import spec
from lackjail.mcp import effect_hints

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "run_program",
    "check_program",
    "kit_info",
    "list_kits",
    "docs_index",
    "resolve_doc",
    "delegate",
    "close_session",
}


def env() -> dict:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def session(workspace, *args):
    """Run BODY(client) against `python -m lackjail.cli serve ARGS` in WORKSPACE; returns BODY's
    value.
    """

    def runner(body):
        async def main():
            server = StdioServerParameters(
                command=sys.executable,
                args=[
                    "-m",
                    "lackjail.cli",
                    "serve",
                    "--workspace",
                    str(workspace),
                    "--workers",
                    "1",
                    *args,
                ],
                env=env(),
                cwd=str(workspace),
            )
            with open(os.devnull, "w") as quiet:
                async with stdio_client(server, errlog=quiet) as (read, write):
                    async with ClientSession(read, write) as client:
                        await client.initialize()
                        with anyio.fail_after(120):
                            return await body(client)

        return anyio.run(main)

    return runner


def payload(result) -> dict:
    """The JSON text content; it must agree with the structured content."""
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("hello world")
    (tmp_path / "policy.toml").write_text('name = "mcp"\n[tools]\napproval = ["edit_file"]\n')
    (tmp_path / ".lackjail").mkdir()
    (tmp_path / ".lackjail" / "config.toml").write_text('[inference]\norder = ["rules"]\n')
    return tmp_path


def test_files_kit_session(workspace, require_nsjail):
    async def body(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        run_hints = tools["run_program"].annotations
        assert (run_hints.read_only_hint, run_hints.destructive_hint) == (
            False,
            True,
        )  # files kit: write grade
        assert tools["check_program"].annotations.read_only_hint is True
        assert tools["resolve_doc"].annotations.read_only_hint is True
        assert tools["delegate"].annotations.destructive_hint is True

        program = "text = read_file('notes.txt')\nprint(text)\nlen(text)"
        ran = await client.call_tool("run_program", {"program": program})
        result = payload(ran)
        assert not ran.is_error
        assert (result["status"], result["value"], result["output"], result["isolation"]) == (
            "ok",
            11,
            "hello world\n",
            "nsjail",
        )
        assert [t["tool"] for t in result["trace"]] == ["read_file"]

        params = payload(
            await client.call_tool("run_program", {"program": "n * 2", "params": {"n": 21}})
        )
        assert params["value"] == 42

        failed = await client.call_tool("run_program", {"program": "x = 1 / 0"})
        assert failed.is_error and payload(failed)["status"] == "error"

        rejected = await client.call_tool("run_program", {"program": "import os"})
        assert rejected.is_error and payload(rejected)["errors"][0]["rule"] == "forbidden-node"

        # the policy says edit_file needs approval; a server has nobody to ask, so it is denied
        edit = payload(
            await client.call_tool(
                "run_program", {"program": "edit_file('notes.txt', 'hello', 'bye')"}
            )
        )
        assert edit["status"] == "denied" and "approv" in edit["errors"][0]["message"]
        assert (workspace / "notes.txt").read_text() == "hello world"

        checked = payload(await client.call_tool("check_program", {"program": "x = eval('1')"}))
        assert checked["valid"] is False and checked["errors"][0]["rule"] == "forbidden-name"

        wrong_type = await client.call_tool("run_program", {"program": 5})
        assert wrong_type.is_error and "program" in wrong_type.content[0].text

        spec = await client.read_resource("lackjail://spec")
        assert spec.contents[0].text.startswith("lackpy")
        spec_json = json.loads(
            (await client.read_resource("lackjail://spec.json")).contents[0].text
        )
        assert "rules" in spec_json
        served = (await client.read_resource("lackjail://kit")).contents[0].text
        assert served.startswith("kit files") and "read_file(path: str)" in served

        refused = await client.call_tool("resolve_doc", {"path": "../../etc/passwd"})
        assert refused.is_error and "refused" in refused.content[0].text
        assert "root:" not in refused.content[0].text

        delegated = payload(await client.call_tool("delegate", {"intent": "list text files"}))
        assert delegated["tier"] == "rules" and delegated["result"]["value"] == ["notes.txt"]
        empty = await client.call_tool("delegate", {"intent": "  "})
        assert empty.is_error and "intent is empty" in empty.content[0].text

    session(workspace, "--kit", "files", "--policy", str(workspace / "policy.toml"))(body)


def test_docs_kits_and_confinement(workspace, require_nsjail):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "guide.md").write_text("# how to use the project kit\n")
    (workspace / "docs" / "escape.md").symlink_to("/etc/passwd")
    (workspace / ".lackjail" / "kits").mkdir()
    (workspace / ".lackjail" / "kits" / "project.kit").write_text(
        "---\nname: project\ndescription: read the project\ndocs: docs/guide.md, "
        "docs/escape.md\n---\n"
        "read_file\nfind_files\n"
    )
    secret = workspace.parent / f"{workspace.name}-secret.kit"
    secret.write_text("SECRET-LINE\n")
    (workspace / ".lackjail" / "kits" / "leak.kit").symlink_to(secret)

    async def body(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        hints = tools["run_program"].annotations
        assert (hints.read_only_hint, hints.destructive_hint) == (True, False)  # read grade

        index = payload(await client.call_tool("docs_index", {}))
        assert index == {
            "kit": "project",
            "docs": {"docs/guide.md": "kit project", "docs/escape.md": "kit project"},
        }
        guide = payload(await client.call_tool("resolve_doc", {"path": "./docs/guide.md"}))
        assert guide["text"] == "# how to use the project kit\n"

        # listed, but a symlink out of the workspace: confinement refuses it
        escape = await client.call_tool("resolve_doc", {"path": "docs/escape.md"})
        assert (
            escape.is_error
            and "outside" in escape.content[0].text
            and "root:" not in escape.content[0].text
        )
        # in the workspace but not a doc of the kit
        other = await client.call_tool("resolve_doc", {"path": "notes.txt"})
        assert other.is_error and "hello" not in other.content[0].text

        info = payload(await client.call_tool("kit_info", {}))
        assert (info["name"], info["served"], info["grade"]) == ("project", True, {"w": 1, "d": 1})
        assert "read_file(path: str)" in info["text"]
        bundled = payload(await client.call_tool("kit_info", {"name": "text"}))
        assert (bundled["name"], bundled["served"]) == ("text", False)
        for bad in ("../../etc/passwd", "nope", "leak"):  # leak.kit leads out of the workspace
            refused = await client.call_tool("kit_info", {"name": bad})
            assert refused.is_error and "SECRET" not in refused.content[0].text
        listing = await client.call_tool("list_kits", {})
        kits = {k["name"]: k for k in payload(listing)["kits"]}
        assert "leak" not in kits and "SECRET" not in listing.content[0].text
        assert kits["project"]["served"] and kits["project"]["source"] == "workspace"
        assert {"files", "readonly", "text"} <= set(kits) and not kits["files"]["served"]

        template = (await client.read_resource("lackjail://kits/readonly")).contents[0].text
        assert template.startswith("kit readonly")
        with pytest.raises(MCPError):
            await client.read_resource("lackjail://kits/nope")

    session(workspace, "--kit", "project")(body)


def test_a_kit_doc_obeys_the_policy_s_read_rules(workspace, require_nsjail):
    """A workspace kit may list any workspace file as a doc; resolve_doc read docs under the
    default read rules only, so a file the policy denies (tools.read_deny) was served to the
    agent that read_file refuses it to."""
    (workspace / "private").mkdir()
    (workspace / "private" / "token.md").write_text("PRIVATE-TOKEN-123\n")
    (workspace / "policy.toml").write_text('name = "mcp"\n[tools]\nread_deny = ["private"]\n')
    (workspace / ".lackjail" / "kits").mkdir()
    (workspace / ".lackjail" / "kits" / "project.kit").write_text(
        "---\nname: project\ndocs: private/token.md\n---\nread_file\n"
    )

    async def body(client):
        run = payload(
            await client.call_tool("run_program", {"program": 'read_file("private/token.md")'})
        )
        assert run["status"] == "error" and "tools.read_deny" in run["errors"][0]["message"]
        doc = await client.call_tool("resolve_doc", {"path": "private/token.md"})
        assert doc.is_error and "tools.read_deny" in doc.content[0].text
        assert "PRIVATE-TOKEN" not in doc.content[0].text

    session(workspace, "--kit", "project", "--policy", str(workspace / "policy.toml"))(body)


@pytest.mark.parametrize("level", ["lackpy", "extended"])
def test_instructions_and_spec_describe_the_level_in_force(workspace, level, require_nsjail):
    """What a client is told at `initialize`, and the spec resources, are those of --language."""

    async def body(client):
        text = (await client.read_resource("lackjail://spec")).contents[0].text
        data = json.loads((await client.read_resource("lackjail://spec.json")).contents[0].text)
        return client.instructions, text, data

    told, text, data = session(workspace, "--kit", "readonly", "--language", level)(body)
    described = spec(level)
    assert f"language level {level!r}" in told and described["summary"] in told
    assert text.startswith(f"{level} ") and data["language"] == level
    for item in described["forbidden_constructs"]:
        assert item["construct"] in told
    if level == "extended":
        assert "def/return" in told and "ToolError" in told
        assert "no imports, defs" not in told and "'while'" not in told
    else:
        assert "def/return" not in told and "'while'" in told and "'def'" in told


@pytest.mark.parametrize(
    "grade, read_only",
    [
        ({"w": 0, "d": 0}, True),
        ({"w": 1, "d": 1}, True),
        ({"w": 1, "d": 2}, False),
        ({"w": 3, "d": 3}, False),
    ],
)
def test_effect_hints_follow_the_grade(grade, read_only):
    hints = effect_hints(grade)
    assert (hints.read_only_hint, hints.destructive_hint) == (read_only, not read_only)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--kit", "nope"], "no kit named 'nope'"),
        (["--policy", "nope"], "no policy named 'nope'"),
        (["--workers", "0"], "'--workers'"),
        (["--workspace", "/"], "would expose the whole system"),
        (["--workspace", "/no/such/dir"], "does not exist"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, says):
    result = CliRunner().invoke(serve, args)
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and says in errors[0], result.stderr


def test_subprocess_exit_codes(tmp_path, require_nsjail):
    def run(*args, stdin=""):
        return subprocess.run(
            [sys.executable, "-m", "lackjail.cli", "serve", *args],
            input=stdin,
            text=True,
            capture_output=True,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, **env()},
        )

    bad = run("--kit", "nope")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stdout == ""
    closed = run("--workers", "1")  # the client closes stdin at once: a clean stop
    assert closed.returncode == 0 and closed.stdout == ""
    helped = run("--help")
    assert (
        helped.returncode == 0 and "resolve_doc" in helped.stdout and "Exit codes" in helped.stdout
    )
