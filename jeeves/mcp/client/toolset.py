"""`MCPServer`: an MCP server's tools as a toolset an Agent holds like its own tools.

Each model turn, the agent asks the toolset for its tools: a journaled step (`function`
named `mcp.tools:<server>`, request: the server's identity) whose result is what the
server listed (name, description, input schema, annotations). Each call is the agent's
ordinary tool step, whose request is the server's identity, the tool and the arguments
and whose result is the content as text. So a recorded run replays, and resumes, without
the server: served steps never open a connection, and a completed call is never repeated.

The connection is opened at the first live step that needs it, inside the scope that holds
it: the agent's run, or `async with server:` around several runs (one process for all of
them). A server that changed a tool's input schema since the run was recorded is a
`ReplayDivergence` naming the tool when the resumed run first goes live against it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Mapping, Sequence, Set
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, ValidationError

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_str, short_repr
from jeeves._run.steps import next_index, recorded, will_serve
from jeeves.agent.tools import Tool, ToolContext, ToolOutcome, Toolset
from jeeves.approvals.policy import APPROVAL_MODES, ApprovalMode
from jeeves.errors import ReplayDivergence, UserError
from jeeves.mcp.client.asks import InFlight
from jeeves.mcp.client.connection import Connection, MCPServerError
from jeeves.mcp.client.modes import resolve_mode
from jeeves.mcp.client.render import render_result, truncate
from jeeves.mcp.client.wire import open_client
from jeeves.messages import ToolSpec

if TYPE_CHECKING:
    from jeeves._run.context import Context

__all__ = ["ListedTool", "MCPServer", "MCPTool"]

_OPEN: ContextVar[Mapping[MCPServer, _Scope] | None] = ContextVar("jeeves_mcp_open", default=None)
_LAUNCHERS = {"npx", "uvx", "node", "bunx", "pipx", "deno", "uv", "run", "-m"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class ListedTool(BaseModel):
    """One tool as the server listed it (what the journal keeps of a `tools/list`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None = None
    """The spec's annotation keys (`readOnlyHint`, `destructiveHint`, …) as the server sent them."""

    @classmethod
    def of(cls, tool: Any) -> ListedTool:
        annotations = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
        )
        return cls(
            name=tool.name,
            description=tool.description or "",
            input_schema=dict(tool.input_schema),
            annotations=annotations or None,
        )


def default_name(command: str, args: Sequence[str]) -> str:
    """A server's name from its command: the package or program it runs (`filesystem` for
    `npx -y @modelcontextprotocol/server-filesystem DIR`, `time` for `python -m mcp_server_time`)."""
    for part in [command, *args]:
        base = os.path.basename(part)
        if part.startswith("-") or base in _LAUNCHERS or base.startswith("python"):
            continue
        segments = part.replace("\\", "/").split("/")
        if "node_modules" in segments:  # node .../node_modules/@scope/package/dist/index.js
            after = segments[segments.index("node_modules") + 1 :]
            base = after[1] if after[0].startswith("@") and len(after) > 1 else after[0]
        elif part.startswith("@"):
            base = base.split("@", 1)[0]
        else:
            base = os.path.splitext(base)[0] if base.endswith((".js", ".mjs", ".py")) else base
        base = re.sub(r"[^a-z0-9]+", "_", base.lower()).strip("_")
        for prefix in ("mcp_server_", "server_", "mcp_"):
            base = base.removeprefix(prefix)
        if base and base[0].isalpha():
            return base.replace("__", "_")
    return "mcp"


def _mode(value: object, what: str) -> ApprovalMode:
    if value not in APPROVAL_MODES:
        raise UserError(f"{what} {value!r} is not an approval mode; use one of {', '.join(APPROVAL_MODES)}.")
    return value


class MCPServer(Toolset):
    """An MCP server whose tools an Agent may call: `Agent(..., tools=[MCPServer.stdio(...)])`.

    Build one with `MCPServer.stdio(command, *args)` (a process spoken to over its stdin and
    stdout) or `MCPServer.http(url)` (Streamable HTTP). Options:

    Args:
        name: Names the server in the journal and in errors, and prefixes its tools
            (`{name}_{tool}`) when a name collides with another tool's. Derived from the
            command (or the URL's host) when not given.
        mode: Every tool of this server gets this approval mode, whatever its annotations say.
        modes: Per tool (a name or a glob): its approval mode; wins over `mode` and annotations.
        unannotated: The mode of a tool with no annotations (conservative: `destructive`).
        timeout_s: How long one tool call may take before the model reads a timeout.
        startup_timeout_s: How long starting and greeting the server may take.
        max_result_chars: A longer result is cut, with a notice the model reads.
        resources: Also offer the model two read_only tools for the server's resources and
            prompts: `{name}_read_resource(uri)` and `{name}_get_prompt(name, arguments)`.
    """

    def __init__(
        self,
        *,
        transport: Literal["stdio", "http"],
        name: str,
        command: str = "",
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        url: str = "",
        headers: Mapping[str, str] | None = None,
        mode: ApprovalMode | None = None,
        modes: Mapping[str, ApprovalMode] | None = None,
        unannotated: ApprovalMode = "destructive",
        timeout_s: float = 60.0,
        startup_timeout_s: float = 60.0,
        max_result_chars: int = 20_000,
        resources: bool = False,
    ) -> None:
        self.name = validate_name(name, what="MCP server")
        self.transport = transport
        self.command, self.args = command, [check_str(a, name=f"MCP server {name!r} argument") for a in args]
        self.env = dict(env) if env is not None else None
        self.cwd = None if cwd is None else os.fspath(cwd)
        self.url = url
        self.headers = dict(headers or {})
        self.mode = None if mode is None else _mode(mode, f"MCP server {name!r} mode")
        self.modes = {str(k): _mode(v, f"MCP server {name!r} modes[{k!r}]") for k, v in (modes or {}).items()}
        self.unannotated = _mode(unannotated, f"MCP server {name!r} unannotated")
        for what, value in (("timeout_s", timeout_s), ("startup_timeout_s", startup_timeout_s)):
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise UserError(
                    f"MCP server {name!r} {what} must be a positive number, got {short_repr(value)}."
                )
        if not isinstance(max_result_chars, int) or max_result_chars < 100:
            raise UserError(
                f"MCP server {name!r} max_result_chars must be an int of at least 100, got "
                f"{short_repr(max_result_chars)}."
            )
        self.timeout_s, self.startup_timeout_s = float(timeout_s), float(startup_timeout_s)
        self.max_result_chars = max_result_chars
        self.resources = bool(resources)
        """Also offer `{name}_read_resource(uri)` and `{name}_get_prompt(name, arguments)` (read_only)."""
        self._entered: list[_Scope] = []

    @classmethod
    def stdio(
        cls,
        command: str,
        *args: str,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server run as `command *args`, spoken to over its stdin and stdout."""
        check_str(command, name="MCPServer.stdio command")
        if not command:
            raise UserError(
                "MCPServer.stdio needs a command, got ''; e.g. MCPServer.stdio('uvx', 'mcp-server-time')."
            )
        return cls(
            transport="stdio",
            name=name or default_name(command, args),
            command=command,
            args=args,
            env=env,
            cwd=cwd,
            **options,
        )

    @classmethod
    def http(
        cls, url: str, *, name: str | None = None, headers: Mapping[str, str] | None = None, **options: Any
    ) -> MCPServer:
        """A server at `url`, spoken to over Streamable HTTP (`headers` sent with every request)."""
        check_str(url, name="MCPServer.http url")
        if not url.startswith(("http://", "https://")):
            raise UserError(
                f"MCPServer.http needs an http(s) URL, got {url!r}; e.g. 'http://127.0.0.1:8765/mcp'."
            )
        host = re.sub(r"[^a-z0-9]+", "_", url.split("//", 1)[1].split("/", 1)[0].split(":", 1)[0].lower())
        return cls(
            transport="http", name=name or f"http_{host.strip('_')}", url=url, headers=headers, **options
        )

    @property
    def identity(self) -> dict[str, Any]:
        """Who answers, as the journal records it (not the environment or headers: they may hold secrets)."""
        if self.transport == "stdio":
            return {"server": self.name, "transport": "stdio", "command": [self.command, *self.args]}
        return {"server": self.name, "transport": "http", "url": self.url}

    def __repr__(self) -> str:
        where = " ".join([self.command, *self.args]) if self.transport == "stdio" else self.url
        return f"MCPServer({self.name!r}, {where!r})"

    # -- scopes ------------------------------------------------------------------------
    def session(self) -> _Scope:
        """A scope holding this server's connection (opened at first use, closed on exit).
        Inside an enclosing scope of the same server (`async with server:`), that one is used."""
        return _Scope(self)

    async def __aenter__(self) -> MCPServer:
        scope = _Scope(self)
        await scope.__aenter__()
        self._entered.append(scope)
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._entered.pop().__aexit__(*exc)

    def scope(self) -> _Scope:
        """The innermost open scope of this server (the agent run's)."""
        found = (_OPEN.get() or {}).get(self)
        if found is None:
            raise UserError(
                f"{self!r} was used outside a scope; give it to an Agent (tools=[server]) or enter "
                f"`async with server:` first."
            )
        return found

    def connection(self) -> Connection:
        return self.scope().connection

    # -- listing -----------------------------------------------------------------------
    async def tools(self, ctx: Context, taken: Set[str]) -> Sequence[Tool]:
        """The server's tools for this turn. Listed (a journaled step) at the agent's first turn,
        and again at a later turn only when the server said its list changed; a replay or a
        resume takes a listing step exactly where the recording took one."""
        scope = self.scope()
        if scope.listed is not None and not await self._relists(ctx, scope.connection):
            return self._named(scope.listed, taken, served=scope.served, ctx=ctx)
        conn = scope.connection
        index = next_index(ctx)
        live: list[ListedTool] | None = None
        if not await will_serve(ctx, index):
            live = await self.listing(conn)

        async def listed() -> list[ListedTool]:
            assert live is not None
            if scope.served and scope.listed is not None:
                self._check_unchanged(ctx, scope.listed, live, index)
            return live

        found, replayed = await ctx.step(
            "function", self._step, self.identity, listed, list[ListedTool], index=index
        )
        scope.listed, scope.served = list(found), replayed
        return self._named(found, taken, served=replayed, ctx=ctx)

    @property
    def _step(self) -> str:
        return f"mcp.tools:{self.name}"

    async def _relists(self, ctx: Context, conn: Connection) -> bool:
        """Whether a later turn lists again: where the journal has this server's listing step
        next, or, live, when the server's list changed."""
        record = await recorded(ctx)
        if record is not None and record.kind == "function" and record.name == self._step:
            return True
        if await will_serve(ctx):
            return False
        return conn.is_open and (conn.changed or conn.relist)

    async def listing(self, conn: Connection) -> list[ListedTool]:
        """The server's tools now (asked again only after `list_changed` or a reconnect)."""
        client = await conn.client()
        if conn.listing is not None and not (conn.changed or conn.relist):
            return [ListedTool.model_validate(t) for t in conn.listing]
        conn.changed = False
        tools: list[Any] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(self.timeout_s):
                for _page in range(100):
                    page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except TimeoutError:
            conn.changed = True
            raise MCPServerError(
                f"MCP server {self.name!r} did not list its tools within {self.timeout_s:g} s."
            ) from None
        except Exception as exc:
            conn.drop(f"{type(exc).__name__}: {exc}")
            raise MCPServerError(
                f"MCP server {self.name!r} failed to list its tools: {type(exc).__name__}: {exc}"
            ) from exc
        listed = [ListedTool.of(t) for t in tools]
        conn.listing = [t.model_dump() for t in listed]
        return listed

    def _check_unchanged(
        self, ctx: Context, before: list[ListedTool], live: list[ListedTool], index: int
    ) -> None:
        """A session served its last listing from the journal and now lists live: a tool whose
        schema changed in between means the recorded run cannot go on as recorded."""
        now = {t.name: t.input_schema for t in live}
        changed = sorted(t.name for t in before if now.get(t.name) != t.input_schema)
        if changed:
            raise _diverged(self, changed, ctx.session_id, index)

    def _named(
        self, listed: Sequence[ListedTool], taken: Set[str], *, served: bool, ctx: Context
    ) -> list[Tool]:
        named: list[Tool] = []
        mine: set[str] = set()
        for item in [*listed, *(_READERS if self.resources else ())]:
            name = _UNSAFE.sub("_", item.name)[:64] or "tool"
            if name in taken or name in mine:
                name = f"{self.name}_{name}"[:64]
            if name in taken or name in mine:
                raise UserError(
                    f"MCP server {self.name!r} tool {item.name!r} collides with tool {name!r} even when "
                    f"prefixed with the server's name; give the server another name=."
                )
            mine.add(name)
            mode = resolve_mode(
                item.name, item.annotations, mode=self.mode, modes=self.modes, unannotated=self.unannotated
            )
            if (
                item in _READERS
            ):  # resources/read -> {server}_read_resource, prompts/get -> {server}_get_prompt
                kind, verb = item.name.split("/")
                name, mode = f"{self.name}_{verb}_{kind[:-1]}", "read_only"
            named.append(MCPTool(self, item, name=name, mode=mode, served=served, ctx=ctx))
        return named

    # -- calls -------------------------------------------------------------------------
    async def call(self, tool: MCPTool, arguments: str, context: ToolContext | None) -> ToolOutcome:
        """One live tool call; every failure of the server is an error outcome the model reads."""
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError as exc:
            return _failed(
                f"Invalid arguments for tool {tool.name!r}: not JSON ({exc}). Fix them and call again."
            )
        if not isinstance(parsed, dict):
            return _failed(
                f"Invalid arguments for tool {tool.name!r}: {short_repr(parsed)} is not an object."
            )
        conn = self.connection()
        try:
            client = await conn.client()
            if tool.served and tool.listed not in _READERS:
                self._check_tool(tool, await self.listing(conn), context)
        except MCPServerError as exc:
            return _failed(str(exc))
        where = f"MCP server {self.name!r} tool {tool.original!r}"
        key = id(context) if context is not None else 0
        flight = InFlight(
            tool.ctx, context.step if context else 0, tool.original, tool.approval or "destructive"
        )
        conn.in_flight[key] = flight
        try:
            with anyio.fail_after(self.timeout_s):
                result = await _answering(flight, _request(client, tool.original, parsed))
        except TimeoutError:
            return _failed(f"{where} did not answer within {self.timeout_s:g} s; the call was abandoned.")
        except ValidationError as exc:
            return _failed(
                f"{where} sent a malformed result ({exc.error_count()} problems): {str(exc)[:300]}"
            )
        except Exception as exc:
            refused = _refusal(exc)
            if refused is not None:
                return _failed(f"{where} answered with an error: {refused}")
            conn.drop(f"{type(exc).__name__}: {exc}")
            return _failed(f"{where} failed: the server's connection broke ({type(exc).__name__}: {exc}).")
        finally:
            conn.in_flight.pop(key, None)
        text = render_result(list(result.content), result.structured_content)
        return ToolOutcome(text=truncate(text, self.max_result_chars, where), is_error=bool(result.is_error))

    def _check_tool(self, tool: MCPTool, live: list[ListedTool], context: ToolContext | None) -> None:
        now = {t.name: t.input_schema for t in live}
        if now.get(tool.original) != tool.listed.input_schema:
            sid, step = (context.session_id, context.step) if context else ("?", -1)
            raise _diverged(self, [tool.original], sid, step)


_READERS = (
    ListedTool(
        name="resources/read",
        description="Read one of the server's resources by its URI.",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]},
    ),
    ListedTool(
        name="prompts/get",
        description="Get one of the server's prompts by name, with its arguments.",
        input_schema={
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name"],
        },
    ),
)
"""The two tools `resources=True` adds; each is the MCP method its name says."""


async def _request(client: Any, tool: str, arguments: dict[str, Any]) -> Any:
    """`tools/call`, or for the two readers their own method, as a result a tool result renders."""
    from mcp.types import CallToolResult, TextContent

    if tool == "resources/read":
        found = await client.read_resource(str(arguments.get("uri", "")))
        return CallToolResult(content=[_resource_text(c) for c in found.contents])
    if tool == "prompts/get":
        prompt = await client.get_prompt(str(arguments.get("name", "")), arguments.get("arguments") or None)
        lines = [
            f"{m.role}: {getattr(m.content, 'text', f'[{m.content.type} content]')}" for m in prompt.messages
        ]
        return CallToolResult(content=[TextContent(type="text", text="\n".join(lines))])
    return await client.call_tool(tool, arguments)


def _resource_text(contents: Any) -> Any:
    from mcp.types import TextContent

    text = getattr(contents, "text", None)
    if text is None:
        text = f"[resource {contents.uri}: {contents.mime_type or 'binary'}, not shown]"
    return TextContent(type="text", text=text)


async def _answering(flight: InFlight, calling: Awaitable[Any]) -> Any:
    """Await `calling` while answering the server's asks in this task (see `InFlight`); its
    exception is raised as itself, not in an exception group."""
    outcome: list[Any] = []
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(flight.serve)
            try:
                outcome.append(await calling)
            except Exception as exc:
                outcome.append(exc)
            finally:
                group.cancel_scope.cancel()
    finally:
        flight.close()
    if isinstance(outcome[0], Exception):
        raise outcome[0]
    return outcome[0]


def _diverged(server: MCPServer, tools: list[str], session_id: str, step: int) -> ReplayDivergence:
    return ReplayDivergence(
        f"MCP server {server.name!r} changed tool(s) {', '.join(map(repr, tools))} since session {session_id!r} "
        f"was recorded (input schema differs or the tool is gone); the run cannot go on as recorded at step "
        f"{step}. Run the server version that recorded it, or start a new session id.",
        session_id=session_id,
        step=step,
    )


def _failed(text: str) -> ToolOutcome:
    return ToolOutcome(text=text, is_error=True)


_CONNECTION_CLOSED = -32000
"""The JSON-RPC code the SDK gives a request whose connection closed (`mcp_types.CONNECTION_CLOSED`)."""


def _refusal(exc: Exception) -> str | None:
    """The server's own error message, when `exc` is an error the server answered with (not a
    connection that broke under the call)."""
    from mcp import MCPError

    if not isinstance(exc, MCPError) or exc.code == _CONNECTION_CLOSED:
        return None
    return exc.message


class MCPTool(Tool):
    """One tool of an MCP server, as the model is offered it."""

    def __init__(
        self,
        server: MCPServer,
        listed: ListedTool,
        *,
        name: str,
        mode: ApprovalMode,
        served: bool,
        ctx: Context,
    ) -> None:
        self.server = server
        self.ctx = ctx
        """The agent session it was offered to (a server's sampling or elicitation is answered there)."""
        self.listed = listed
        self.original = listed.name
        """The name the server knows it by (`name` may be sanitised or prefixed)."""
        self.name = name
        self.description = listed.description
        self.approval = mode
        self.idempotent = bool((listed.annotations or {}).get("idempotentHint"))
        """The server says calling it again with the same arguments changes nothing more."""
        self.served = served
        """Its listing was served from the journal: a live call first checks the server still has it."""
        self._spec = ToolSpec(name=name, description=listed.description, parameters=listed.input_schema)

    def step_request(self, arguments: str) -> dict[str, Any]:
        return {**self.server.identity, "tool": self.original, "arguments": arguments}

    async def invoke(self, arguments: str, context: ToolContext | None = None) -> ToolOutcome:
        return await self.server.call(self, arguments, context)

    def __repr__(self) -> str:
        return f"MCPTool({self.server.name!r}, {self.original!r}, mode={self.approval!r})"


class _Scope:
    """A server in use by one agent run (what it listed), or by a user's `async with` block.

    The outermost scope of a server owns its connection (and the task group its holder runs
    in); a scope opened inside it (an agent's run inside `async with server:`) shares that
    connection and keeps only its own listing."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._group: TaskGroup | None = None
        self._token: Token[Mapping[MCPServer, _Scope] | None] | None = None
        self.connection: Connection = None  # type: ignore[assignment]  # set on entry
        self.listed: list[ListedTool] | None = None
        """What this agent run's model was last offered (None: not listed yet)."""
        self.served = False
        """That listing was served from the journal."""

    async def __aenter__(self) -> _Scope:
        opened = _OPEN.get() or {}
        outer = opened.get(self.server)
        if outer is not None:
            self.connection = outer.connection
        else:
            group = anyio.create_task_group()
            await group.__aenter__()
            self._group = group
            server = self.server
            self.connection = Connection(
                server.name, group, lambda conn: open_client(server, conn), server.startup_timeout_s
            )
        self._token = _OPEN.set({**opened, self.server: self})
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        if self._token is not None:
            _OPEN.reset(self._token)
        if self._group is None:
            return None
        self.connection.close()
        # The body's exception is not passed in: anyio would wrap it in an ExceptionGroup. The
        # holder leaves once closed (or cancelled with the enclosing scope) and raises nothing.
        await self._group.__aexit__(None, None, None)
        return None
