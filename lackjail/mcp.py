"""The MCP server (`lackjail serve`): the jail, the language and the kits as tools and resources.

The agent on the other end is untrusted. The SDK checks each argument's type
against the tool's signature; lackjail then treats the values as hostile, as
everywhere: programs are validated before a jail sees them, parameters must be
plain data, tool calls go through the policy, calls that need approval are
denied (there is nobody to ask), and `resolve_doc` reads only the docs the
served kit lists, confined to the workspace, under the policy's read rules.
Built on `MCPServer` of the mcp 2.x SDK (the 1.x `FastMCP`).
"""

from __future__ import annotations

import json
import os
import posixpath
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

from lackjail import __version__, lang
from lackjail.jsondata import jsonable
from lackjail.kit import KitError, list_kits, resolve_doc, resolve_kit
from lackjail.lang.describe import render
from lackjail.pool import PoolError
from lackjail.workspace import show
from lackjail.workspace.protect import Protection


def instructions(language: str) -> str:
    """What the server tells a client about the language LEVEL in force, in the spec's own words
    (the summary `lackjail spec` prints and what that level does not allow)."""
    data = lang.spec(language)
    banned = ", ".join(item["construct"] for item in data["forbidden_constructs"])
    return (
        f"Runs programs in an nsjail jail at the language level {language!r}. {data['summary']} "
        f"Not allowed at this level: {banned}. print() output is captured. Read the resource "
        "lackjail://spec for the whole language (builtins, rules with examples, limits) and call "
        "kit_info for the tools a program may call.\n"
        "Check a program with check_program before run_program; delegate writes one from an "
        "intent."
    )


READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def effect_hints(grade: dict, open_world: bool = False) -> ToolAnnotations:
    """Annotations for a tool that runs programs, from the kit's grade: up to `read` is read-only;
    scoped exec or write may change the workspace, so it is marked destructive."""
    level = max(grade["w"], grade["d"])
    if level <= 1:
        return ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=open_world,
        )
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=True,
        idempotent_hint=False,
        open_world_hint=open_world,
    )


def _reply(data: dict, is_error: bool = False) -> CallToolResult:
    """The same object twice: as JSON text (for every client) and as structured content."""
    data = jsonable(data)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
        is_error=is_error,
    )


def build_server(jail) -> MCPServer:
    """An MCPServer whose tools run programs in JAIL (a lackjail.Jail with a kit) and read it."""
    kit, workspace = jail.kit, jail.workspace
    hints = effect_hints(kit.grade)
    server = MCPServer(
        "lackjail",
        version=__version__,
        instructions=instructions(jail.checker.language),
        log_level="WARNING",
    )

    def kits():
        """list_kits without workspace kit files leading out of the workspace (text would leak)."""
        root = os.path.realpath(workspace)
        return [
            (name, source, path)
            for name, source, path in list_kits(workspace)
            if source != "workspace" or os.path.commonpath([os.path.realpath(path), root]) == root
        ]

    def named_kit(name: str):
        """A kit of the workspace or bundled, by name only: a path would let an agent read files,
        so NAME is only ever compared with the names list_kits gives."""
        if name == kit.name:
            return kit
        for found, _, path in kits():
            if found == name:
                try:
                    return resolve_kit(str(path), workspace=workspace)
                except KitError as exc:  # a malformed kit file: say what is wrong with it
                    raise ToolError(str(exc)) from None
        raise ToolError(f"no kit named {show(name)}; list_kits shows the kits")

    @server.tool(annotations=hints)
    def run_program(
        program: str, params: dict[str, Any] | None = None, dry_run: bool = False
    ) -> CallToolResult:
        """Validate and run a lackpy program in the jail with the served kit.

        params become top-level names (plain JSON data). dry_run: run, but commit no writes and
        return the diff they would make. Returns status, value, output, errors (line/col), trace,
        isolation, stats.
        """
        try:
            result = jail.run(program, params, dry_run=dry_run)
        except PoolError as exc:  # busy or shutting down: say so, the agent may retry
            raise ToolError(str(exc)) from None
        return _reply(result.to_dict(), is_error=not result.ok)

    @server.tool(annotations=READ_ONLY)
    def check_program(program: str, params: list[str] | None = None) -> CallToolResult:
        """Validate a lackpy program without running it: valid, errors (rule, line, col), calls."""
        return _reply(jail.check(program, params).to_dict())

    @server.tool(annotations=READ_ONLY)
    def kit_info(name: str | None = None) -> CallToolResult:
        """The served kit (or kit NAME from list_kits): tools, signatures, guidance, grade, docs."""
        chosen = named_kit(name) if name is not None else kit
        return _reply({**chosen.to_dict(), "text": chosen.describe(), "served": chosen is kit})

    @server.tool(name="list_kits", annotations=READ_ONLY)
    def list_kits_tool() -> CallToolResult:
        """The workspace's kits and the bundled ones; `served` marks the one run_program uses."""
        rows = []
        for name, source, path in kits():
            row = {"name": name, "source": source, "served": name == kit.name}
            try:
                found = resolve_kit(str(path), workspace=workspace)
                row.update(
                    description=found.description, tools=list(found.specs), grade=found.grade
                )
            except KitError as exc:
                row["error"] = str(exc)
            rows.append(row)
        return _reply({"kits": rows})

    @server.tool(annotations=READ_ONLY)
    def docs_index() -> CallToolResult:
        """Doc path -> what it documents, for the served kit; read one with resolve_doc."""
        return _reply({"kit": kit.name, "docs": kit.docs_index()})

    @server.tool(name="resolve_doc", annotations=READ_ONLY)
    def resolve_doc_tool(path: str) -> CallToolResult:
        """The text of a doc listed by docs_index (read from the workspace, never outside it)."""
        listed = {posixpath.normpath(p) for p in kit.docs_index()}
        if posixpath.normpath(path) not in listed:
            raise ToolError(
                f"refused: {show(path)} is not a doc of kit {kit.name!r}; docs_index lists them"
            )
        try:
            text = resolve_doc(path, workspace, Protection.from_policy(jail.policy))
            return _reply({"path": path, "text": text})
        except KitError as exc:
            raise ToolError(f"refused: {exc}") from None

    @server.tool(annotations=effect_hints(kit.grade, open_world=True))
    def delegate(
        intent: str, params: dict[str, Any] | None = None, run: bool = True
    ) -> CallToolResult:
        """Write a lackpy program for INTENT (templates, rules, then the configured models),
        validate it, and (run=true) run it in the jail. Returns the program, the tier that wrote
        it and the result."""
        from lackjail.infer import ConfigError, IntentError

        try:
            outcome = jail.delegate(intent, params, run=run, root=workspace)
        except (IntentError, ConfigError, PoolError) as exc:
            raise ToolError(str(exc)) from None
        return _reply(outcome.to_dict(), is_error=outcome.exit_code != 0)

    @server.resource(
        "lackjail://spec",
        name="spec",
        mime_type="text/plain",
        description="The language level in force: allowed nodes, builtins, forbidden names, "
        "rules, limits.",
    )
    def spec_text() -> str:
        return render(lang.spec(jail.checker.language))

    @server.resource(
        "lackjail://spec.json",
        name="spec.json",
        mime_type="application/json",
        description="The language level in force, as JSON.",
    )
    def spec_json() -> str:
        return json.dumps(lang.spec(jail.checker.language))

    @server.resource(
        "lackjail://kit",
        name="kit",
        mime_type="text/plain",
        description=f"The served kit ({kit.name}): tool signatures, guidance, grade and docs.",
    )
    def served_kit() -> str:
        return kit.describe()

    @server.resource(
        "lackjail://kits/{name}",
        name="kits",
        mime_type="text/plain",
        description="Any kit of the workspace or bundled, by name (see list_kits).",
    )
    def any_kit(name: str) -> str:
        try:
            return named_kit(name).describe()
        except ToolError as exc:
            raise ResourceError(str(exc)) from None

    return server


def serve_stdio(server: MCPServer) -> None:
    """Serve SERVER over stdio; a line that is not a JSON-RPC message gets a JSON-RPC parse error
    (id null) instead of silence, and the server keeps serving."""
    anyio.run(_serve_stdio, server)


async def _serve_stdio(server: MCPServer) -> None:
    lowlevel = server._lowlevel_server  # the SDK's own run loop; MCPServer offers no stream hook
    async with stdio_server() as (read_stream, write_stream):
        send, receive = create_context_streams[SessionMessage | Exception](0)

        async def sift():
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        reply = JSONRPCError(jsonrpc="2.0", id=None, error=bad_line(item))
                        await write_stream.send(SessionMessage(reply))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sift)
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


def bad_line(exc: Exception) -> ErrorData:
    """The JSON-RPC error for a line the transport could not read: not JSON at all (-32700),
    or JSON that is no JSON-RPC 2.0 message (-32600)."""
    kinds = [e.get("type") for e in exc.errors()] if hasattr(exc, "errors") else ["json_invalid"]
    if "json_invalid" in kinds:
        return ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    return ErrorData(
        code=INVALID_REQUEST, message="Invalid Request: the line is not a JSON-RPC 2.0 message"
    )


def serve_http(server: MCPServer, host: str, port: int, token: str) -> None:
    """Serve SERVER with the streamable HTTP transport at http://HOST:PORT/mcp, behind the Host,
    Origin and bearer-TOKEN checks of `lackjail.httpguard` (the SDK's own Host and Origin
    checks are set to the same address as well)."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from lackjail.httpguard import Guard, host_forms

    forms = host_forms(host, port)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=forms,
        allowed_origins=[f"http://{form}" for form in forms],
    )
    inner = server.streamable_http_app(host=host, transport_security=security)
    app = Guard(inner, token, host, port)
    config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())
    anyio.run(uvicorn.Server(config).serve)
