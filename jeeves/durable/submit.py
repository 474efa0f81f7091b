"""`submit` and `wait`: put a run on a queue from any process, and wait for its end.

Submitting needs no worker code and no DBOS launch: a DBOS client writes the workflow row
(id = the root session id) on the target's queue, and any worker serving the target picks
it up. Submitting an id that exists already returns that run instead of starting another,
so a retried `jeeves submit` is safe.
"""

from __future__ import annotations

import functools
import importlib.util
import time
from typing import Any

import anyio.to_thread

from jeeves._base.ids import new_root_id, validate_root_id
from jeeves._base.validate import check_number
from jeeves.durable import engine
from jeeves.durable.targets import queue_name, target_name
from jeeves.durable.worker import database_from_env
from jeeves.errors import UserError
from jeeves.journal.postgres import display_url

__all__ = ["submit", "wait", "wake"]


WORKER_TIMEOUT_S = 10.0
"""How long `submit` waits for a worker to serve a target no worker registered yet."""


def _enqueue(database: str, target: str, task: str, session_id: str, worker_timeout_s: float) -> str:
    client = engine.client(database)
    try:
        _await_worker(client, database, target, worker_timeout_s)
        options = {
            "queue_name": queue_name(target),
            "workflow_name": engine.WORKFLOW_NAME,
            "workflow_id": session_id,
            "app_version": engine.APP_VERSION,
        }
        handle = client.enqueue(options, target_name(target), task)
        return str(handle.get_workflow_id())
    finally:
        client.destroy()


def _await_worker(client: Any, database: str, target: str, timeout_s: float) -> None:
    """Return once a worker has registered `target`'s queue in `database` (it serves the
    target, or did: runs wait on the queue for the next one); past `timeout_s`, a UserError
    saying no worker serves it. A run queued for a target nobody serves would wait forever."""
    name = queue_name(target)
    deadline = time.monotonic() + timeout_s
    while not _queue_registered(client, name):
        if time.monotonic() >= deadline:
            raise UserError(_no_worker(database, target, name, timeout_s))
        time.sleep(0.2)  # a worker starting now registers its queues within its start-up


def _queue_registered(client: Any, name: str) -> bool:
    import sqlalchemy.exc  # DBOS's dependency

    try:
        return client.retrieve_queue(name) is not None
    except sqlalchemy.exc.DatabaseError:  # a database no worker ever used: DBOS's tables are not there
        return False


def _no_worker(database: str, target: str, queue: str, timeout_s: float) -> str:
    where = display_url(database)
    why = f"no worker on {where} serves target {target!r} (its queue {queue!r} was not registered within {timeout_s:g} s)"
    module = target.partition(":")[0] if ":" in target and not target.endswith(".toml") else None
    if module and not _importable(module):
        why += f", and module {module!r} is not importable here either: check the name"
    return f"{why}; start one first: `jeeves worker {target} --database {where}`."


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


async def submit(
    target: str,
    task: str,
    *,
    session_id: str | None = None,
    database: str | None = None,
    worker_timeout_s: float = WORKER_TIMEOUT_S,
) -> str:
    """Queue a run of `target` (a spec file or 'module:attr', as the workers name it) on
    `task`; returns its root session id (generated when not given).

    `database` defaults to `$JEEVES_DATABASE`. A target no worker has served on this
    database (its queue is not registered) is refused with a UserError after waiting
    `worker_timeout_s` for one to start. Follow the run with `wait`, `jeeves runs` or
    `jeeves replay` on the journal the workers record into.
    """
    if not isinstance(task, str) or not task.strip():
        raise UserError(f"task={task!r} is empty; give the run something to do.")
    target_name(target)
    check_number(worker_timeout_s, name="worker_timeout_s", minimum=0)
    root = validate_root_id(session_id) if session_id is not None else new_root_id()
    url = database_from_env(database)
    return await anyio.to_thread.run_sync(
        functools.partial(_enqueue, url, target, task, root, worker_timeout_s)
    )


async def wait(
    session_id: str,
    *,
    database: str | None = None,
    timeout_s: float | None = None,
    poll_s: float = 0.2,
    stop_at_gates: bool = True,
) -> dict[str, Any]:
    """Wait until the submitted run `session_id` ends, or (with `stop_at_gates`) until it
    waits at an approval gate; returns its outcome: `session_id`, `status` (a
    `RunResult.status`: "completed", "awaiting_approval" with the gate ids in `pending`, or
    "failed", "expired", "rejected", "cancelled" with `error`), `text` and `stop_reason`.

    A run waiting at a gate holds its place on a worker until a decision wakes it
    (`wake`, or `jeeves approve DATABASE SESSION`); with `stop_at_gates=False` this waits
    through gates until the run ends. Polls every `poll_s`; past `timeout_s`, raises
    TimeoutError."""
    url = database_from_env(database)
    root = validate_root_id(session_id)
    client = await anyio.to_thread.run_sync(engine.client, url)
    try:
        with anyio.fail_after(timeout_s):
            while True:
                status = await anyio.to_thread.run_sync(_status, client, root)
                if status.status in engine.ENDED:
                    break
                if stop_at_gates:
                    event = await anyio.to_thread.run_sync(_gate_event, client, root)
                    if event is not None:
                        return {"session_id": root, "text": "", "stop_reason": "awaiting_approval", **event}
                await anyio.sleep(poll_s)
    finally:
        await anyio.to_thread.run_sync(client.destroy)
    if status.status != "SUCCESS" or not isinstance(status.output, dict):
        error = f"{type(status.error).__name__}: {status.error}" if status.error else status.status
        return {"session_id": root, "status": "failed", "error": f"the workflow ended {error}"}
    return dict(status.output)


def _status(client: Any, session_id: str) -> Any:
    module = engine.dbos()
    try:
        return client.retrieve_workflow(session_id).get_status()
    except module.error.DBOSNonExistentWorkflowError as exc:
        raise UserError(f"No run {session_id!r} was submitted to this database; check the id.") from exc


def _gate_event(client: Any, session_id: str) -> dict[str, Any] | None:
    """`{"status": "awaiting_approval", "pending": [...]}` when the run, or one of its
    branches (children executed on other workers), waits at a gate; else None."""
    pending: list[str] = []
    for workflow in [session_id, *_open_branches(client, session_id)]:
        event = client.get_event(workflow, engine.STATUS_EVENT, timeout_seconds=0)
        if isinstance(event, dict) and event.get("status") == "awaiting_approval":
            pending.extend(str(gate) for gate in event.get("pending", []))
    return {"status": "awaiting_approval", "pending": pending} if pending else None


def _open_branches(client: Any, session_id: str) -> list[str]:
    """The ids of run `session_id`'s branches that have not ended (`jeeves.durable.spread`)."""
    branches = client.list_workflows(
        workflow_id_prefix=session_id + "__",
        name=engine.BRANCH_WORKFLOW,
        status=["PENDING", "ENQUEUED"],
        load_input=False,
        load_output=False,
    )
    return [str(branch.workflow_id) for branch in branches]


def _wake(database: str, session_id: str) -> bool:
    module = engine.dbos()
    import sqlalchemy.exc  # DBOS's dependency

    client = engine.client(database)
    try:
        try:
            status = client.retrieve_workflow(session_id).get_status()
        except module.error.DBOSNonExistentWorkflowError:
            return False
        except sqlalchemy.exc.ProgrammingError:  # a journal database no worker ever used: no DBOS tables
            return False
        # Wake the run and its open branches (a gate may be in a child another worker runs);
        # one that ended was already resumed past the decision by a takeover.
        waiting = [session_id] if status.status not in engine.ENDED else []
        for workflow in [*waiting, *_open_branches(client, session_id)]:
            client.send(workflow, {"decided": True}, topic=engine.GATE_TOPIC)
        return True
    finally:
        client.destroy()


async def wake(session_id: str, *, database: str | None = None) -> bool:
    """Tell submitted run `session_id`, waiting at a gate on some worker, that a decision was
    recorded: the worker holding it (or, if that one died, the one that took it over)
    resumes it from the journal. Returns whether `database` holds submitted run
    `session_id` (False: not a durable run; resume it yourself with `jeeves.resume`). `jeeves approve` and `jeeves deny` call it for you when
    their journal is a database with DBOS workflows."""
    root = validate_root_id(session_id)
    url = database_from_env(database)
    return await anyio.to_thread.run_sync(functools.partial(_wake, url, root))
