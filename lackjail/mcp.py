"""The MCP server (`lackjail serve`): the jail, the language and the kits as tools and resources.

The agent on the other end is untrusted. The SDK checks each argument's type
against the tool's signature; lackjail then treats the values as hostile, as
everywhere: programs are validated before a jail sees them, parameters must be
plain data, tool calls go through the policy, calls that need approval are
denied (there is nobody to ask), and `resolve_doc` reads only the docs the
served kit lists, confined to the workspace, under the policy's read rules.
A client keeps state between calls in named sessions (`run_program`'s
`session`), each a `Jail.session()` that ends on its idle timeout, on
`close_session`, or with the server. The jail opens on a thread of its own, so
`initialize` is answered while its pool starts.
Built on `MCPServer` of the mcp 2.x SDK (the 1.x `FastMCP`).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import secrets
import threading
from concurrent.futures import Future
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
from lackjail.errors import LackjailError
from lackjail.infer.sanitize import place_back, unfence
from lackjail.jsondata import jsonable
from lackjail.kit import KitError, list_kits, resolve_doc, resolve_kit
from lackjail.lang.describe import render
from lackjail.workspace import show
from lackjail.workspace.protect import Protection


def instructions(language: str, kit=None, levels=()) -> str:
    """What the server tells a client about the language LEVEL in force, in the spec's own words
    (the summary `lackjail spec` prints and what that level does not allow), the other LEVELS
    a program may choose, and KIT's tools."""
    data = lang.spec(language)
    banned = ", ".join(item["construct"] for item in data["forbidden_constructs"])
    others = [level for level in levels if level != language]
    choose = (
        f" A program may run at another level the policy allows ({', '.join(others)}): pass it "
        "as the language argument of run_program and check_program."
        if others
        else ""
    )
    return (
        f"Runs programs in an nsjail jail at the language level {language!r}. {data['summary']} "
        f"Not allowed at this level: {banned}.{choose} print() output is captured. A program "
        "may come in a Markdown code fence; error lines count from the first line sent. Read "
        "the resource lackjail://spec for the whole language (builtins, rules with examples, "
        "limits) and call kit_info for the tools' guidance and docs.\n"
        f"{kit_tools(kit)}\n"
        "Check a program with check_program before run_program; delegate writes one from an "
        "intent. Pass the same `session` name to run_program to keep variables, functions and "
        "classes between calls; close_session ends one."
    )


def kit_tools(kit) -> str:
    """KIT's tools as a program calls them, one line each with what it does: the tool
    descriptions carry them, so a client sees the signatures without asking."""
    if kit is None or not kit.specs:
        return "The served kit has no tools: programs compute with their params and literals."
    lines = [f"Tools a program may call (kit {kit.name}):"]
    for call, spec in kit.specs.items():
        about = (spec.description or spec.guidance).strip().splitlines()
        lines.append(f"  {spec.signature(call)}" + (f"  # {about[0]}" if about else ""))
    return "\n".join(lines)


RUN_PROGRAM = """Validate and run a program in the jail with the served kit.

params become top-level names (plain JSON data). dry_run: run, but commit no writes and return
the diff they would make. session: a name (letters, digits, '-', '_'; "new" for a fresh one,
returned as `session`): runs of one session keep the variables, functions and classes earlier
runs bound, and its params; without it every run starts clean. language: the level to check
and run it at, among those the server's policy allows (default: the served level; a session
keeps the level it was opened at). The program may be wrapped in a Markdown code fence.
Returns status, value, output, errors (line/col; a runtime error's traceback: the program's
calls, outermost first), trace, isolation, stats."""

CHECK_PROGRAM = """Validate a program without running it: valid, errors (rule, line, col and what
to write instead), calls. Tool calls are checked against the tools' signatures. session: check
it as the next run of that session would be (the names its runs bound are defined). The program
may be wrapped in a Markdown code fence; language as for run_program."""

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


ENDS_STATE = ToolAnnotations(  # close_session: changes no file, but what it ends is gone
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
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


class Served:
    """The jail a server runs programs in, opening while the server starts (OPENING, a
    concurrent.futures.Future of the Jail): `initialize` and the tools that only read
    (check_program, kit_info, the docs) answer at once, a tool that runs a program waits for
    the jail, and a jail that could not open is that tool's error.

    POLICY, KIT, WORKSPACE (the opened `Root`, or a folder's path) and CHECKER are what the
    jail is made from.
    `Served.ready(jail)` serves a Jail that is open already. A program may choose another
    level among the policy's: that level's jail starts on first use (a jail's children hold
    only their own level's names and modules), like the served one.
    """

    def __init__(self, opening: Future, *, policy, kit, workspace, checker):
        self.policy, self.kit, self.workspace, self.checker = policy, kit, workspace, checker
        self._opening = opening
        self._checkers: dict = {checker.language: checker}
        self._others: dict = {}  # level -> the Jail of another level, once started
        self._starting = threading.Lock()

    @classmethod
    def ready(cls, jail) -> Served:
        opened: Future = Future()
        opened.set_result(jail)
        workspace = jail.root or jail.workspace  # the folder the jail opened, not its path
        return cls(
            opened, policy=jail.policy, kit=jail.kit, workspace=workspace, checker=jail.checker
        )

    @property
    def jail(self):
        """The open Jail (waiting for it); a ToolError saying why when it could not open."""
        try:
            return self._opening.result()
        except Exception as exc:
            raise ToolError(f"the jail could not start: {exc}") from None

    def checker_for(self, language: str | None):
        """The Checker of LANGUAGE (None: the served level); a ToolError for a level that does
        not exist or that the policy does not allow."""
        from lackjail.checker import Checker

        level = language or self.checker.language
        if level not in self._checkers:
            try:
                self._checkers[level] = Checker(
                    self.policy, self.kit, lang.check_language(level), audience="mcp"
                )
            except ValueError as exc:  # unknown, or not among the policy's levels
                raise ToolError(f"language: {exc}") from None
        return self._checkers[level]

    def jail_for(self, language: str | None):
        """The open Jail that runs programs at LANGUAGE (None: the served level)."""
        from lackjail.api import Jail

        level = self.checker_for(language).language
        if level == self.checker.language:
            return self.jail
        served = self.jail
        with self._starting:
            if level not in self._others:
                try:
                    self._others[level] = Jail(
                        policy=self.policy,
                        kit=self.kit,
                        workers=served.workers,
                        workspace=self.workspace,
                        mode=served.mode,
                        language=level,
                        audience="mcp",
                    )
                except Exception as exc:
                    raise ToolError(
                        f"the jail for language {level!r} could not start: {exc}"
                    ) from None
            return self._others[level]

    def close(self) -> None:
        """Close the jails once open (a jail that could not open has nothing to close)."""
        with self._starting:
            others, self._others = list(self._others.values()), {}
        for jail in others:
            jail.close()
        if self._opening.exception() is None:
            self._opening.result().close()


SESSION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Sessions:
    """The client's named sessions: run_program's `session` picks one, opened on first use
    ("new" opens one under a fresh name, returned in the result). Each ends on its idle
    timeout (the policy's pool.session_idle_s), on close_session, or with the server."""

    def __init__(self, served: Served):
        self._served = served
        self._open: dict = {}  # name -> Session (closed ones are dropped when met)
        self._levels: dict = {}  # name -> the language level it was opened at
        self._lock = threading.Lock()

    def get(self, name: str, language: str | None = None) -> tuple:
        """(name, session, notes): NAME's open session, or a new one at LANGUAGE (None: the
        served level); NOTES say when this run opens it ("session_new") and why the one it
        replaces ended ("session_ended")."""
        from lackjail.sessions import SessionError

        if name == "new":
            name = f"s-{secrets.token_hex(4)}"
        elif not SESSION_NAME.fullmatch(name):
            raise ToolError(
                f"session {show(name)} is not a session name: use 1-64 letters, digits, '-' or "
                "'_', or \"new\" for a fresh one"
            )
        with self._lock:
            found = self._open.get(name)
            level = self._served.checker_for(language).language
            if found is not None and not found.closed:
                if language is not None and self._levels.get(name) != level:
                    raise ToolError(
                        f"session {show(name)} runs at language {self._levels.get(name)!r}; "
                        "leave out language, or open a new session"
                    )
                return name, found, {}
            notes: dict = {"session_new": True}
            if found is not None:
                notes["session_ended"] = found.ended
            for closed in [n for n, s in self._open.items() if s.closed]:
                del self._open[closed]
            try:
                self._open[name] = self._served.jail_for(level).session()
                self._levels[name] = level
            except SessionError as exc:
                names = ", ".join(sorted(self._open)) or "none"
                raise ToolError(f"{exc}; close_session one of: {names}") from None
            return name, self._open[name], notes

    def close(self, name: str) -> bool:
        """Close session NAME; False when no session of that name is open."""
        with self._lock:
            found = self._open.pop(name, None)
        if found is None or found.closed:
            return False
        found.close()
        return True

    def names(self) -> list:
        with self._lock:
            return sorted(n for n, s in self._open.items() if not s.closed)

    def bound(self, name: str) -> tuple:
        """(names, level): the names session NAME's runs have bound and the language level it
        runs at ((), None when it is not open)."""
        with self._lock:
            found, level = self._open.get(name), self._levels.get(name)
        return (found.names, level) if found is not None and not found.closed else ((), None)


def build_server(served) -> MCPServer:
    """An MCPServer whose tools run programs in SERVED's jail (a `Served`, or an open
    lackjail.Jail with a kit) and read its kit, docs and language."""
    if not isinstance(served, Served):
        served = Served.ready(served)
    kit, workspace, checker = served.kit, served.workspace, served.checker
    sessions = Sessions(served)
    hints = effect_hints(kit.grade)
    tools_text = kit_tools(kit)
    server = MCPServer(
        "lackjail",
        version=__version__,
        instructions=instructions(checker.language, kit, served.policy.languages),
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

    @server.tool(annotations=hints, description=f"{RUN_PROGRAM}\n\n{tools_text}")
    def run_program(
        program: str,
        params: dict[str, Any] | None = None,
        dry_run: bool = False,
        session: str | None = None,
        language: str | None = None,
    ) -> CallToolResult:
        code, above = unfence(program)  # errors keep the lines of what was sent
        try:
            if session is None:
                result = served.jail_for(language).run(code, params, dry_run=dry_run)
                return _reply(place_back(result.to_dict(), above), is_error=not result.ok)
            if dry_run:
                raise ToolError(
                    "dry_run runs outside sessions: leave out session to dry-run a program"
                )
            name, kept, notes = sessions.get(session, language)
            result = kept.run(code, params)
        except LackjailError as exc:  # busy, shutting down, a session closed, a bad limit
            raise ToolError(str(exc)) from None
        reply = {**place_back(result.to_dict(), above), "session": name, **notes}
        return _reply(reply, is_error=not result.ok)

    @server.tool(annotations=ENDS_STATE)
    def close_session(session: str) -> CallToolResult:
        """End a session that run_program opened: its variables, functions and classes are
        gone. Sessions also end after the policy's idle timeout."""
        if not sessions.close(session):
            raise ToolError(
                f"no open session named {show(session)}; open: "
                f"{', '.join(sessions.names()) or 'none'}"
            )
        return _reply({"session": session, "closed": True})

    @server.tool(annotations=READ_ONLY, description=f"{CHECK_PROGRAM}\n\n{tools_text}")
    def check_program(
        program: str,
        params: list[str] | None = None,
        session: str | None = None,
        language: str | None = None,
    ) -> CallToolResult:
        code, above = unfence(program)
        defined, level = sessions.bound(session) if session is not None else ((), None)
        verdict = served.checker_for(language or level).check(code, params, defined)
        return _reply(place_back(verdict.to_dict(), above))

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
            text = resolve_doc(path, workspace, Protection.from_policy(served.policy))
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
        try:
            outcome = served.jail.delegate(intent, params, run=run, root=workspace)
        except LackjailError as exc:  # a bad intent or config, or a pool that cannot serve
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
        return render(lang.spec(checker.language))

    @server.resource(
        "lackjail://spec.json",
        name="spec.json",
        mime_type="application/json",
        description="The language level in force, as JSON.",
    )
    def spec_json() -> str:
        return json.dumps(lang.spec(checker.language))

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
