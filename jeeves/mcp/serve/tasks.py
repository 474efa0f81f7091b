"""The MCP Tasks extension (`io.modelcontextprotocol/tasks`, revision 2026-07-28) for served runs.

The installed `mcp` SDK has no tasks support, so jeeves implements the extension's server
side itself, to the text of the specification, on the SDK's extension hooks (an
`Extension` that intercepts `tools/call` and binds `tasks/get`, `tasks/update` and
`tasks/cancel`):

- a `tools/call` of a served architecture from a client that declares the extension (and a
  server with a journal) answers at once with a `CreateTaskResult` (`resultType: "task"`)
  whose `taskId` is the run's root session id; the run goes on in the background;
- a task's state is read from the journal, so a restarted server answers for runs it never
  saw: a run in progress is `working` (one whose process died is resumed), a run at an
  approval gate is `input_required` with one `elicitation/create` input request per gate
  (keyed by the gate id), a finished run is `completed` with the tool's `CallToolResult`, a
  cancelled one `cancelled`;
- `tasks/update` answers the gates (`accept` with `approve: true` approves, anything else
  denies), records the decisions in the journal and resumes the run: a gated tool runs once;
- `tasks/cancel` cancels a run this server drives (cooperative, as the specification says);
- with `--database`, runs are queued for durable workers instead of run here
  (`jeeves.mcp.serve.durable`): the state is read from the journal they record into, and
  from DBOS for a run no worker has started;
- a client listening for task ids (`subscriptions/listen`) is sent each status change as
  `notifications/tasks` (`jeeves.mcp.serve.notify`).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp.types import RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

from jeeves.approvals.decide import Decision, PendingGate, pending_gates, record_decision
from jeeves.durable.targets import Target
from jeeves.journal.open import open_journal, shown_status
from jeeves.journal.records import SessionRecord
from jeeves.mcp.serve.durable import WAITING, DurableQueue
from jeeves.mcp.serve.notify import TaskListen, TaskWatchers
from jeeves.mcp.serve.tools import ServedRun, run_id, run_served

__all__ = ["EXTENSION", "REVISION", "ServedTasks"]

EXTENSION = "io.modelcontextprotocol/tasks"
REVISION = "2026-07-28"
POLL_MS = 500
CREATE_CHECKS = 200
INVALID_PARAMS = -32602
MISSING_CAPABILITY = -32021
_TASK_FIELDS = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs")
_FINISHED = {"completed": "completed", "rejected": "completed", "expired": "completed", "failed": "completed"}


class TaskParams(RequestParams):
    """`tasks/get` and `tasks/cancel` params."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    """`tasks/update` params: answers to the task's outstanding input requests."""

    input_responses: dict[str, Any] = Field(alias="inputResponses", default_factory=dict)


def _iso(seconds: float | None) -> str:
    return datetime.fromtimestamp(seconds or time.time(), UTC).isoformat().replace("+00:00", "Z")


def _declared(ctx: Any) -> bool:
    """The client declared the extension, on a 2026-07-28 connection (this revision's wire:
    a handshake-era connection cannot carry `resultType: "task"`)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and EXTENSION in capabilities.extensions)


def _require(ctx: Any) -> None:
    if not _declared(ctx):
        raise MCPError(
            code=MISSING_CAPABILITY,
            message="Missing required client capability",
            data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
        )


def elicitation(gate: PendingGate) -> dict[str, Any]:
    """The `elicitation/create` request a gate is shown as (approve or deny this exact call)."""
    arguments = json.dumps(gate.arguments, sort_keys=True)
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": f"Approve {gate.tool}({arguments}) [{gate.mode}] in jeeves run {gate.session_id}?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "approve": {"type": "boolean", "title": "Approve this call"},
                    "note": {"type": "string", "title": "Note for the journal"},
                },
                "required": ["approve"],
            },
        },
    }


def tool_result(run: ServedRun, *, error: bool = False) -> dict[str, Any]:
    """A served run as the `CallToolResult` its tool call would have returned."""
    data = run.model_dump(mode="json")
    return {
        "content": [{"type": "text", "text": json.dumps(data)}],
        "structuredContent": data,
        "isError": error,
    }


def decision_of(gate: PendingGate, response: Any, by: str) -> Decision:
    """A client's answer to a gate's elicitation: approve only an accepted `approve: true`."""
    answer: Mapping[str, Any] = response if isinstance(response, Mapping) else {}
    given = answer.get("content")
    content: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    note = content.get("note") if isinstance(content.get("note"), str) else None
    if answer.get("action") == "accept" and content.get("approve") is True:
        return Decision.approve(gate, by=by, note=note)
    return Decision.deny(gate, by=by, note=note or f"elicitation {answer.get('action', 'unanswered')}")


class ServedTasks:
    """The tasks extension over the served targets (tool name -> target) and their journal."""

    def __init__(
        self, targets: Mapping[str, Target], journal: str, durable: DurableQueue | None = None
    ) -> None:
        self.targets = dict(targets)
        self.journal = journal
        self.durable = durable
        self.group: TaskGroup | None = None
        self.scopes: dict[str, anyio.CancelScope] = {}
        self.started: dict[str, anyio.Event] = {}
        self.errors: dict[str, str] = {}
        self.watchers = TaskWatchers()

    @asynccontextmanager
    async def lifespan(self, server: Any) -> AsyncIterator[dict[str, Any]]:
        """The server's lifespan: a task group the background runs live in."""
        async with anyio.create_task_group() as group:
            self.group = group
            try:
                yield {}
            finally:
                group.cancel_scope.cancel()
                self.group = None

    def extension(self) -> Extension:
        """The SDK extension object to pass to `MCPServer(extensions=[...])`."""
        return _TasksExtension(self)

    def serve_listen(self, server: Any, bus: Any) -> None:
        """Serve `subscriptions/listen` on `server` (an SDK `MCPServer` built with `bus`) with
        task ids too. The SDK registers its own handler for the core kinds; this one replaces it
        (`add_request_handler` replaces) and hands the core kinds back to it."""
        from mcp.types import SubscriptionsListenRequestParams

        handler = TaskListen(bus, self)
        server._lowlevel_server.add_request_handler(  # the one entry point the SDK offers
            "subscriptions/listen", SubscriptionsListenRequestParams, handler
        )

    def require(self, ctx: Any) -> None:
        """The missing-capability error unless the client declared the extension."""
        _require(ctx)

    async def known(self, sid: str) -> bool:
        """Whether `sid` names a served run (a task `tasks/get` answers for; with durable
        workers, one still on the queue too)."""
        try:
            await self.view(sid)
        except MCPError:
            return False
        return True

    # -- runs ---------------------------------------------------------------------------

    async def begin(self, tool: str, task: str, sid: str) -> None:
        """Start run `sid`: queue it for the workers, or drive it here and wait until the
        journal holds it (a CreateTaskResult is sent only once `tasks/get` resolves)."""
        if self.durable is not None:
            await self.durable.submit(tool, task, sid)  # the DBOS row exists on return
            return
        self.start(tool, task, sid)
        await self.created(sid)

    def start(self, tool: str, task: str, sid: str) -> None:
        """Drive run `sid` in the background unless this server drives it already."""
        if sid in self.scopes or self.group is None:
            return
        self.scopes[sid] = anyio.CancelScope()
        self.started[sid] = anyio.Event()
        self.errors.pop(sid, None)
        self.group.start_soon(self._drive, tool, task, sid)
        self.watchers.changed(sid)

    async def _drive(self, tool: str, task: str, sid: str) -> None:
        started = self.started[sid]

        async def report(count: float, total: float | None, message: str) -> None:
            if count > 0:  # the run's first event: its session is in the journal
                started.set()

        try:
            with self.scopes[sid]:
                await run_served(self.targets[tool], task, sid, self.journal, report)
        except Exception as exc:  # the journal records the run failed; keep the reason for tasks/get
            self.errors[sid] = f"{type(exc).__name__}: {exc}"
        finally:
            self.scopes.pop(sid, None)
            self.started.pop(sid, None)
            started.set()
            self.watchers.changed(sid)  # ended, or waits at a gate

    async def record(self, sid: str) -> SessionRecord | None:
        store = open_journal(self.journal)
        try:
            return await store.get_session(sid)
        finally:
            await store.aclose()

    async def created(self, sid: str) -> None:
        """Wait until run `sid` has started, so the journal holds it (a CreateTaskResult is
        sent only then: a `tasks/get` for it resolves) or has ended."""
        started = self.started.get(sid)
        if started is not None:
            await started.wait()
        for _ in range(CREATE_CHECKS):  # the journal may commit just after the first event
            if sid not in self.scopes or await self.record(sid) is not None:
                return
            await anyio.sleep(0.05)

    def tool_of(self, record: SessionRecord) -> str | None:
        """The served tool whose target recorded `record` (by its recorded source)."""
        for name, target in self.targets.items():
            source = dict(target.source) if isinstance(target.source, Mapping) else target.source
            if record.source == source or (isinstance(source, str) and source in json.dumps(record.source)):
                return name
        return next(iter(self.targets)) if len(self.targets) == 1 else None

    # -- the task view ------------------------------------------------------------------

    async def view(self, sid: str) -> dict[str, Any]:
        """The `DetailedTask` of run `sid`, from the journal (resuming a run whose process died)."""
        record = await self.record(sid)
        if record is None and self.durable is not None:
            return await self._queued(sid)
        if record is None or record.parent_id is not None:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no jeeves run {sid!r}")
        task: dict[str, Any] = {
            "taskId": sid,
            "createdAt": _iso(record.created_at),
            "lastUpdatedAt": _iso(record.lease_renewed_at or record.created_at),
            "ttlMs": None,
            "pollIntervalMs": POLL_MS,
        }
        status = shown_status(record, time.time())
        return task | await self._state(sid, record, status)

    async def _state(self, sid: str, record: SessionRecord, status: str) -> dict[str, Any]:
        if sid in self.scopes or status == "in_progress":
            return {"status": "working", "statusMessage": f"jeeves run {sid} is running"}
        if status == "cancelled":
            return {"status": "cancelled", "statusMessage": record.stop_reason or "cancelled"}
        if status in _FINISHED:
            run = ServedRun(
                session_id=sid,
                status=status,
                output=record.output or "",
                stop_reason=record.stop_reason or "",
            )
            message = self.errors.get(sid) or f"jeeves run {sid}: {status}"
            return {
                "status": "completed",
                "statusMessage": message,
                "result": tool_result(run, error=status == "failed"),
            }
        gates = await pending_gates(self.journal, sid)
        if gates:
            return {
                "status": "input_required",
                "statusMessage": f"jeeves run {sid} waits at {len(gates)} approval gate(s)",
                "inputRequests": {g.gate_id: elicitation(g) for g in gates},
            }
        self.resume(sid, record)  # paused (its process died) or decided gates: go on
        return {"status": "working", "statusMessage": f"jeeves run {sid} is resuming"}

    async def _queued(self, sid: str) -> dict[str, Any]:
        """A submitted run no worker has recorded yet, from its DBOS state."""
        assert self.durable is not None
        queued = await self.durable.queued(sid)
        if queued is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: no jeeves run {sid!r}")
        now = _iso(None)
        task = {
            "taskId": sid,
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttlMs": None,
            "pollIntervalMs": POLL_MS,
        }
        if queued.status == "CANCELLED":
            return task | {"status": "cancelled", "statusMessage": "cancelled before a worker started it"}
        if queued.status in WAITING:
            return task | {"status": "working", "statusMessage": f"jeeves run {sid} waits for a worker"}
        message = f"jeeves run {sid} ended {queued.status} before it started: {queued.error or ''}"
        return task | {
            "status": "failed",
            "statusMessage": message,
            "error": {"code": -32603, "message": message},
        }

    def resume(self, sid: str, record: SessionRecord) -> None:
        """Go on with a run nobody drives: here, or (durable) by the worker DBOS gives it to."""
        tool = self.tool_of(record)
        if tool is not None and self.durable is None:
            self.start(tool, record.task, sid)

    async def update(self, sid: str, responses: Mapping[str, Any], by: str) -> None:
        """Decide the gates `responses` answer (others are ignored), then resume the run."""
        record = await self.record(sid)
        if record is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to update task: no jeeves run {sid!r}")
        gates = await pending_gates(self.journal, sid)
        answered = [g for g in gates if g.gate_id in responses]
        for gate in answered:
            await record_decision(self.journal, gate.gate_id, decision_of(gate, responses[gate.gate_id], by))
        if answered and len(answered) == len(gates):
            if self.durable is not None:
                await self.durable.wake(sid)  # the worker holding the run goes on
            self.resume(sid, record)
        if answered:
            self.watchers.changed(sid)

    async def cancel(self, sid: str) -> None:
        if self.durable is not None:
            await self.view(sid)  # an unknown id is an error
            await self.durable.cancel(sid)
            self.watchers.changed(sid)
            return
        if await self.record(sid) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to cancel task: no jeeves run {sid!r}")
        scope = self.scopes.get(sid)
        if scope is not None:
            scope.cancel()


class _TasksExtension(Extension):
    identifier = EXTENSION

    def __init__(self, tasks: ServedTasks) -> None:
        self.tasks = tasks

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskParams, self._get),
            MethodBinding("tasks/update", UpdateParams, self._update),
            MethodBinding("tasks/cancel", TaskParams, self._cancel),
        )

    async def _get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _require(ctx)
        return await self.tasks.view(params.task_id)

    async def _update(self, ctx: Any, params: UpdateParams) -> dict[str, Any]:
        _require(ctx)
        info = getattr(ctx.session, "client_params", None)
        client = getattr(getattr(info, "client_info", None), "name", None) or "mcp client"
        await self.tasks.update(params.task_id, params.input_responses, f"mcp:{client}")
        return {}

    async def _cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _require(ctx)
        await self.tasks.cancel(params.task_id)
        return {}

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        arguments = params.arguments or {}
        task, sid = arguments.get("task"), arguments.get("session_id")
        if params.name not in self.tasks.targets or not _declared(ctx) or not isinstance(task, str):
            return await call_next(ctx)
        sid = sid if isinstance(sid, str) and sid else run_id(params.name, task)
        record = await self.tasks.record(sid)
        if record is None:
            await self.tasks.begin(params.name, task, sid)
        view = await self.tasks.view(sid)
        return {"resultType": "task"} | {k: v for k, v in view.items() if k in _TASK_FIELDS}
