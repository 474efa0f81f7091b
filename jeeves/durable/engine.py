"""The one place jeeves talks to DBOS: configuration, the workflow, recovery, the client.

A jeeves run on DBOS is one workflow, `jeeves.run`, whose id is the root session id and
whose arguments are the target's name and the task. Its body is an ordinary `jeeves.run`
recording into the shared journal; the workflow records no DBOS steps. The journal is the
one store of step results (model calls, tools, function critics, with their fingerprints
and events), and DBOS keeps what the journal cannot: that the run exists and must finish,
on which queue it waits, which worker holds it. When DBOS runs the workflow again (a
restarted worker, a takeover), the body resumes from the journal: every completed step is
served, none is made twice. DBOS stores the workflow's arguments and result as JSON
(`DBOSPortableJSONSerializer`), never pickled.

DBOS is imported only here, lazily: `import jeeves` and `import jeeves.durable` work
without it, and using it without the extra says which to install.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from jeeves.errors import UserError

__all__ = [
    "APP_VERSION",
    "BRANCH_WORKFLOW",
    "ENDED",
    "GATE_TOPIC",
    "STATUS_EVENT",
    "WORKFLOW_NAME",
    "dbos",
    "publish",
    "receive",
    "client",
    "launch",
    "recover",
    "register_queues",
    "serializer",
    "shutdown",
]

WORKFLOW_NAME = "jeeves.run"
BRANCH_WORKFLOW = "jeeves.branch"
"""A child session of a run, executed on any worker (`jeeves.durable.spread`)."""
GATE_TOPIC = "jeeves.gate"
"""The DBOS message topic a decided gate wakes its waiting run on (`jeeves.durable.wake`)."""
STATUS_EVENT = "jeeves.status"
"""The DBOS workflow event a run sets while it waits at a gate (`{"status": "awaiting_approval",
"pending": [...]}`) and clears when it goes on (`{"status": "running"}`)."""
ENDED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
"""The DBOS workflow statuses of a run or a branch that will not run again."""
APP_VERSION = "jeeves-1"
"""One application version for every worker: DBOS recovers and dequeues a workflow only on
executors of the version that enqueued it, and jeeves' journal, not DBOS, checks that the
code still fits a run (a changed request raises `ReplayDivergence`)."""


def dbos() -> Any:
    """The `dbos` module, or a UserError naming the extra to install."""
    try:
        import dbos as module
    except ImportError as exc:
        raise UserError(
            "Durable runs need DBOS, which is not installed; install it with `pip install 'jeeves[dbos]'`."
        ) from exc
    return module


def serializer() -> Any:
    return dbos().DBOSPortableJSONSerializer()


def launch(
    database: str,
    *,
    worker_id: str,
    queues: list[str],
    body: Callable[[str, str], Awaitable[dict[str, Any]]],
    branch: Callable[[str, list[str | int], str, dict[str, Any]], Awaitable[dict[str, Any]]] | None = None,
) -> None:
    """Configure DBOS on `database`, register the workflow, listen to `queues` and launch.
    Call from the event loop that will run the workflows (DBOS runs them on it)."""
    module = dbos()
    config = {
        "name": "jeeves",
        "system_database_url": database,
        "executor_id": worker_id,
        "application_version": APP_VERSION,
        "serializer": serializer(),
        "log_level": "WARNING",
    }
    module.DBOS(config=config)
    module.DBOS.listen_queues(list(queues))

    async def workflow(target: str, task: str) -> dict[str, Any]:
        return await body(target, task)

    module.DBOS.workflow(name=WORKFLOW_NAME)(workflow)
    if branch is not None:

        async def branch_workflow(
            target: str, path: list[str | int], task: str, placement: dict[str, Any]
        ) -> dict[str, Any]:
            return await branch(target, path, task, placement)

        module.DBOS.workflow(name=BRANCH_WORKFLOW)(branch_workflow)
    module.DBOS.launch()


def client(database: str) -> Any:
    """A DBOS client on `database` (blocking: call it from a thread); `destroy()` it after."""
    module = dbos()
    try:
        return module.DBOSClient(system_database_url=database, serializer=serializer())
    except Exception as exc:  # DBOS raises its own and SQLAlchemy's errors here
        raise UserError(
            f"Cannot reach the DBOS database ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
            f"start a worker on it first (`jeeves worker SPEC`), which creates DBOS's tables."
        ) from exc


def register_queues(queues: dict[str, tuple[int | None, float]], *, worker_concurrency: int) -> None:
    """Write each queue's limits (name -> (global limit, polling interval s)) to the database;
    blocking, so call it from a thread (DBOS refuses it on the event loop)."""
    module = dbos()
    for name, (global_limit, polling_interval_s) in queues.items():
        module.DBOS.register_queue(
            name,
            worker_concurrency=worker_concurrency,
            global_concurrency=global_limit,
            polling_interval_sec=polling_interval_s,
            on_conflict="always_update",
        )


def workflow_id() -> str:
    """The id of the workflow running now (the root session id)."""
    return str(dbos().DBOS.workflow_id)


async def publish(value: dict[str, Any]) -> None:
    """Set the running workflow's status event (`wait` reads it)."""
    await dbos().DBOS.set_event_async(STATUS_EVENT, value)


async def receive(timeout_s: float) -> Any:
    """Wait durably, inside the running workflow, for a gate's wake-up message (None when
    `timeout_s` passes first). DBOS records the message, so a recovered run does not wait
    again for one it already received."""
    return await dbos().DBOS.recv_async(GATE_TOPIC, timeout_seconds=timeout_s)


def recover(worker_ids: list[str]) -> None:
    """Hand the pending workflows of `worker_ids` back to their queues (DBOS's recovery, the
    call its admin endpoint makes for dead executors)."""
    dbos().DBOS._recover_pending_workflows(worker_ids)


def shutdown() -> None:
    dbos().DBOS.destroy(destroy_registry=True)
