"""Each served architecture as an MCP tool (the `mcp` SDK's `MCPServer` on the wire).

A call runs the architecture on `task` as one jeeves run:

- its root session id is the caller's `session_id`, or else derived from the tool and the
  task (`{tool}-{sha256(task)[:12]}`), so the same call names the same run: with a journal,
  calling again resumes it (served steps are not run again; a completed run answers at once
  from the journal). The id is in every progress message and in the result;
- each event of the run is sent as an MCP progress notification (when the caller asked for
  progress), its message the event type and session;
- a cancelled call (`notifications/cancelled`, or the client going away) cancels the run:
  the journal keeps every completed step, so calling again with the session id goes on;
- a run that reaches an approval gate with no approver ends the call with status
  `awaiting_approval` and the gate ids; decide with `jeeves approve JOURNAL SESSION`, then
  call again with the session id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

import jeeves
from jeeves.durable.targets import Target
from jeeves.errors import JeevesError
from jeeves.journal.records import error_type_name

if TYPE_CHECKING:
    from jeeves.mcp.serve.durable import DurableQueue

__all__ = ["ServedRun", "build_server", "run_id", "run_served", "tool_name"]


class ServedRun(BaseModel):
    """What a served architecture's tool call answers."""

    session_id: str
    """The run's root session id (pass it again to resume the same run)."""
    status: str
    """completed, awaiting_approval, rejected, expired, …"""
    output: str
    """The run's final text."""
    stop_reason: str
    pending_gates: list[str] = []
    """Gates the run waits at (`jeeves approve JOURNAL SESSION`, then call again)."""


def tool_name(target: str) -> str:
    """The MCP tool name of a target: `codegen` for architectures/codegen.toml, `myapp_agents_coder`
    for `myapp.agents:coder`."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", target).strip("_")[:64] or "architecture"


def run_id(tool: str, task: str) -> str:
    """The root session id of a call that names none: a pure function of the tool and the task."""
    return f"{tool}-{hashlib.sha256(task.encode()).hexdigest()[:12]}"


def _description(target: Target, arch: Any) -> str:
    what = getattr(arch, "description", "") or getattr(arch, "name", "architecture")
    return (
        f"Run the jeeves architecture {target.name!r} ({what}) on a task and return its output. "
        f"Pass session_id to resume a run (the same task without one names the same run)."
    )


def build_server(
    targets: Mapping[str, Target], *, journal: str | None, durable: DurableQueue | None = None
) -> Any:
    """An SDK `MCPServer` with one tool per target; with `durable` (a
    `jeeves.mcp.serve.durable.DurableQueue`) its runs are queued for the durable workers."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    served = {tool_name(t.name): t for t in targets.values()}
    options: dict[str, Any] = {}
    tasks = None
    if journal is not None:  # a task must survive the server: only runs with a journal are tasks
        from mcp.server.subscriptions import InMemorySubscriptionBus

        from jeeves.mcp.serve.tasks import ServedTasks

        tasks = ServedTasks(served, journal, durable)
        options = {
            "extensions": [tasks.extension()],
            "lifespan": tasks.lifespan,
            "subscriptions": InMemorySubscriptionBus(),
        }
    server = MCPServer("jeeves", instructions="Each tool runs one jeeves architecture on a task.", **options)
    if tasks is not None:
        tasks.serve_listen(server, options["subscriptions"])
    for target in targets.values():
        name = tool_name(target.name)
        arch, _router = target.build()

        def make(target: Target, name: str) -> Any:
            async def run_architecture(task: str, ctx: Context, session_id: str | None = None) -> ServedRun:
                try:
                    if durable is not None:
                        return await durable.run(name, task, session_id or run_id(name, task))
                    return await _run(target, name, task, session_id, ctx, journal)
                except JeevesError as exc:  # the reason, for the client to read (not a crash)
                    raise ToolError(f"{error_type_name(exc)}: {exc}") from exc

            # The SDK reads the signature's types; `Context` is imported here, not at module level.
            run_architecture.__annotations__ = {
                "task": str,
                "ctx": Context,
                "session_id": str | None,
                "return": ServedRun,
            }
            return run_architecture

        server.add_tool(
            make(target, name),
            name=name,
            title=f"jeeves: {target.name}",
            description=_description(target, arch),
            annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=True),
        )
    return server


async def _run(
    target: Target, tool: str, task: str, session_id: str | None, ctx: Any, journal: str | None
) -> ServedRun:
    sid = session_id or run_id(tool, task)
    return await run_served(target, task, sid, journal, ctx.report_progress)


async def run_served(
    target: Target,
    task: str,
    sid: str,
    journal: str | None,
    report: Callable[[float, float | None, str], Awaitable[None]] | None = None,
) -> ServedRun:
    """Run (or resume, with a journal) `target` on `task` as root session `sid`, reporting each
    event to `report(count, None, message)` when given."""
    arch, router = target.build()
    count = 0
    if report is not None:
        await report(0, None, f"jeeves session {sid}: started")
    async with jeeves.stream(
        arch,
        task,
        router=router,
        session_id=sid,
        journal=journal,
        approvals=target.approvals,
        architecture_ref=dict(target.source) if isinstance(target.source, Mapping) else target.source,
    ) as events:
        async for event in events:
            count += 1
            if report is not None:
                await report(count, None, f"jeeves session {sid}: {event.type} ({event.session_id})")
        result = await events.result()
    return ServedRun(
        session_id=sid,
        status=result.status,
        output=result.text,
        stop_reason=result.stop_reason,
        pending_gates=[g.gate_id for g in result.pending],
    )
