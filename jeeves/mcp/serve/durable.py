"""`jeeves mcp serve --database URL`: served runs executed by durable workers, not by the server.

With a database, a call of a served architecture is queued for the `jeeves worker`s serving
its target (`jeeves.durable.submit`, the workflow id being the run's root session id), as
`jeeves submit` does; the server never runs it. So a task outlives the server: killed
while a worker runs it (or holds it at a gate), a restarted server, or any other one on the
same database, answers for it from the journal the workers record into, and from DBOS for a
run no worker has started yet. A gate decided through `tasks/update` is recorded in that
journal and wakes the worker holding the run (`jeeves.durable.wake`), as `jeeves approve`
does.

`tasks/cancel` cancels a run still waiting on the queue (DBOS drops it before any worker
starts it); a run a worker has started is not stopped (jeeves' workers have no
cancellation), as the specification's cooperative cancellation allows.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import anyio.to_thread

from jeeves.durable import engine
from jeeves.durable.submit import WORKER_TIMEOUT_S, submit, wait, wake
from jeeves.errors import UserError
from jeeves.mcp.serve.tools import ServedRun

__all__ = ["WAITING", "DurableQueue", "Queued", "served_run"]

WAITING = ("ENQUEUED", "PENDING")
INTERNAL_ERROR = -32603


def served_run(outcome: Mapping[str, Any]) -> ServedRun:
    """A `jeeves.durable.wait` outcome as the served tool's answer."""
    return ServedRun(
        session_id=str(outcome["session_id"]),
        status=str(outcome["status"]),
        output=str(outcome.get("text") or outcome.get("error") or ""),
        stop_reason=str(outcome.get("stop_reason") or ""),
        pending_gates=[str(gate) for gate in outcome.get("pending", [])],
    )


class Queued:
    """A run's DBOS state when the journal holds nothing of it yet: `status` is a DBOS
    workflow status, `error` what a workflow that failed before its run started says."""

    def __init__(self, status: str, error: str | None) -> None:
        self.status = status
        self.error = error


class DurableQueue:
    """The workers' queue on `database`, for the served targets (tool name -> the target as
    the workers name it: the spec file or `module:attr` given on the command line)."""

    def __init__(self, database: str, refs: Mapping[str, str], *, worker_timeout_s: float = WORKER_TIMEOUT_S):
        self.database = database
        self.refs = dict(refs)
        self.worker_timeout_s = worker_timeout_s

    async def submit(self, tool: str, task: str, sid: str) -> None:
        """Queue run `sid` (submitting an id that exists is a no-op: a retried call is safe).
        A target no worker serves is an MCP error saying to start one."""
        from mcp.shared.exceptions import MCPError

        try:
            await submit(
                self.refs[tool],
                task,
                session_id=sid,
                database=self.database,
                worker_timeout_s=self.worker_timeout_s,
            )
        except UserError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from exc

    async def run(self, tool: str, task: str, sid: str) -> ServedRun:
        """Queue run `sid` and wait until it ends or waits at a gate."""
        await self.submit(tool, task, sid)
        return served_run(await wait(sid, database=self.database))

    async def wake(self, sid: str) -> None:
        await wake(sid, database=self.database)

    async def queued(self, sid: str) -> Queued | None:
        """Run `sid`'s DBOS state, or None when nothing was submitted under that id."""
        return await anyio.to_thread.run_sync(functools.partial(_queued, self.database, sid))

    async def cancel(self, sid: str) -> None:
        """Drop run `sid` from the queue if no worker has started it."""
        await anyio.to_thread.run_sync(functools.partial(_cancel_queued, self.database, sid))


def _status(client: Any, sid: str) -> Any:
    import sqlalchemy.exc  # DBOS's dependency

    try:
        return client.retrieve_workflow(sid).get_status()
    except engine.dbos().error.DBOSNonExistentWorkflowError:
        return None
    except sqlalchemy.exc.DatabaseError:  # a database no worker ever used: DBOS's tables are not there
        return None


def _queued(database: str, sid: str) -> Queued | None:
    client = engine.client(database)
    try:
        status = _status(client, sid)
    finally:
        client.destroy()
    if status is None:
        return None
    error = f"{type(status.error).__name__}: {status.error}" if status.error else None
    return Queued(str(status.status), error)


def _cancel_queued(database: str, sid: str) -> None:
    client = engine.client(database)
    try:
        status = _status(client, sid)
        if status is not None and status.status == "ENQUEUED":
            client.cancel_workflow(sid)
    finally:
        client.destroy()
