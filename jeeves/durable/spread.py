"""Spreading a run's parallel children over the workers: branches.

A run a worker executes may hand the children it starts with `ctx.run(..., spread=True)`
(Supervisor's delegations, PlanExecute's worker steps) to any worker serving its target:
each becomes a DBOS workflow `jeeves.branch` whose id is the child's session id, on the
target's branch queue. The worker that dequeues it builds the target, finds the child in
it by its path (the attributes and keys that lead from the target's architecture to the
child, e.g. `["workers", "coder"]`) and executes it as that very session
(`jeeves._run.branch.stream_branch`), recording into the run's journal. The parent polls the
branch's workflow until it ends, then adopts the session from the journal (`Context.run`).

Rules that keep this safe:
- one level: only a run's own sessions spread; a branch runs its children itself, so a
  branch never waits on a queue and the branch slots cannot deadlock;
- queueing is idempotent (the workflow id is the session id): a parent taken over and run
  again finds its branches, ended or still running, and adopts them; none runs twice;
- a child that is not reachable from the target's architecture (built on the fly inside
  `run`) cannot be rebuilt elsewhere, and runs in the parent's process.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio

from jeeves._run.branch import placement_of
from jeeves._run.context import Architecture, Context
from jeeves._run.state import run_journal
from jeeves.durable import engine
from jeeves.durable.targets import QUEUE_PREFIX
from jeeves.errors import JournalError, UserError
from jeeves.journal.records import TERMINAL

__all__ = ["Spreader", "arch_path", "branch_queue_name", "resolve_path"]

PathKey = str | int
_MAX_DEPTH = 6


def branch_queue_name(name: str) -> str:
    """The DBOS queue the branches of the runs of the target named `name` (a `target_name`)
    wait on (apart from its runs, so a parent holding a run slot never waits for a run slot)."""
    return f"{QUEUE_PREFIX}branch:{name}"


def _children(node: object) -> list[tuple[PathKey, object]]:
    """What a path may step into from `node`: a mapping's values by key, a list's or tuple's
    items by position, an object's public attributes by name."""
    if isinstance(node, Mapping):
        return [(key, value) for key, value in node.items() if isinstance(key, str)]
    if isinstance(node, list | tuple):
        return list(enumerate(node))
    try:
        attributes = vars(node)
    except TypeError:  # slotted, or a builtin: nothing to step into
        return []
    return [(name, value) for name, value in attributes.items() if not name.startswith("_")]


def _walkable(value: object) -> bool:
    if isinstance(value, Mapping | list | tuple):
        return True
    return callable(getattr(value, "run", None)) or hasattr(value, "__dict__") and not isinstance(value, type)


def arch_path(root: Architecture, child: Architecture) -> list[PathKey] | None:
    """The path from `root` to `child` (by identity), breadth first; None when `child`
    is not reachable within a few steps (it was built on the fly)."""
    if child is root:
        return []
    seen = {id(root)}
    frontier: list[tuple[object, list[PathKey]]] = [(root, [])]
    for _ in range(_MAX_DEPTH):
        following: list[tuple[object, list[PathKey]]] = []
        for node, path in frontier:
            for key, value in _children(node):
                if value is child:
                    return [*path, key]
                if id(value) in seen or not _walkable(value) or isinstance(value, str | bytes):
                    continue
                seen.add(id(value))
                following.append((value, [*path, key]))
        frontier = following
    return None


def resolve_path(root: Architecture, path: Sequence[PathKey]) -> Architecture:
    """The architecture `path` leads to from `root`; a UserError naming the step that fails
    (the workers build the target differently: give them all the same code)."""
    node: Any = root
    for depth, key in enumerate(path):
        try:
            if isinstance(node, Mapping):
                node = node[key]
            elif isinstance(node, list | tuple):
                node = node[int(key)]
            else:
                if not isinstance(key, str) or key.startswith("_"):
                    raise AttributeError(key)
                node = getattr(node, key)
        except (KeyError, IndexError, AttributeError, ValueError, TypeError) as exc:
            raise UserError(
                f"Branch path {list(path)!r} does not lead to an architecture in this worker's build of the "
                f"target (step {depth}, {key!r}, failed on {type(node).__name__}); every worker must serve "
                f"the same code and specs."
            ) from exc
    if not callable(getattr(node, "run", None)):
        raise UserError(
            f"Branch path {list(path)!r} leads to {type(node).__name__}, not an architecture; every worker "
            f"must serve the same code and specs."
        )
    return node  # type: ignore[no-any-return]


class Spreader:
    """Hands one run's spread children to the workers (`jeeves._run.context.SPREADER`).

    Args:
        client: Returns the worker's `dbos.DBOSClient` on the system database (made on first
            use, after DBOS launched; shared by the worker's runs).
        target: The run's target name.
        root: This run's architecture (the build the children are found in).
        run_id: This run's root session id: only its own sessions spread (a run started
            inside it, by a tool say, runs its children itself).
        poll_s: How often a waiting parent looks at its branch's workflow.
        enqueue: Whether to queue children as branches. A worker that does not spread still
            adopts a child that is a branch already (queued by the worker that ran the run
            before a takeover, and perhaps still running): running it here too would run one
            session in two places.
    """

    def __init__(
        self,
        client: Callable[[], Awaitable[Any]],
        target: str,
        root: Architecture,
        run_id: str,
        *,
        poll_s: float,
        enqueue: bool = True,
    ) -> None:
        self.client = client
        self.target = target
        self.root = root
        self.run_id = run_id
        self.poll_s = poll_s
        self.enqueue = enqueue

    async def __call__(self, ctx: Context, child: Architecture, task: str, index: int) -> bool:
        if not ctx.session_id.startswith(self.run_id + "__"):
            return False
        path = arch_path(self.root, child)
        if path is None:
            return False
        placement = placement_of(ctx, index)
        sid = placement.session_id
        client = await self.client()
        if self.enqueue:
            await _off_workflow(self._enqueue, client, sid, path, task, placement.to_json())
        elif await _off_workflow(_status, client, sid) is None:
            return False  # never spread: run it here
        status = await self._ended(client, sid)
        journal = run_journal(ctx)
        assert journal is not None  # spreading needs the run's journal (Context.run checks)
        record = await journal.get_session(sid)
        if record is None or record.status not in TERMINAL:
            outcome = status.output if isinstance(status.output, dict) else {}
            why = outcome.get("error") or (
                f"{status.status}: {status.error}" if status.error else status.status
            )
            raise JournalError(
                f"Branch {sid!r} ended on worker {status.executor_id!r} without an outcome in the journal "
                f"({why}); fix the cause and resume run {sid.split('__', 1)[0]!r}."
            )
        return True

    def _enqueue(
        self, client: Any, sid: str, path: list[PathKey], task: str, placement: dict[str, Any]
    ) -> None:
        options = {
            "queue_name": branch_queue_name(self.target),
            "workflow_name": engine.BRANCH_WORKFLOW,
            "workflow_id": sid,
            "app_version": engine.APP_VERSION,
        }
        client.enqueue(options, self.target, path, task, placement)  # an existing id: that branch

    async def _ended(self, client: Any, sid: str) -> Any:
        while True:
            status = await _off_workflow(_status, client, sid)
            if status is None:
                raise JournalError(
                    f"Branch {sid!r} was queued but its workflow is gone from the DBOS database."
                )
            if status.status in engine.ENDED:
                return status
            await anyio.sleep(self.poll_s)


def _status(client: Any, sid: str) -> Any:
    """Branch `sid`'s workflow status, or None when there is no such workflow."""
    try:
        return client.retrieve_workflow(sid).get_status()
    except engine.dbos().error.DBOSNonExistentWorkflowError:
        return None


async def _off_workflow(function: Any, *args: Any) -> Any:
    """Call blocking DBOS client `function` in a thread, outside the running workflow's DBOS
    context: DBOS numbers what a workflow does in call order, which parallel branches do
    not keep, so the branches are not recorded as the run's child workflows."""
    call = functools.partial(function, *args)
    return await anyio.to_thread.run_sync(functools.partial(contextvars.Context().run, call))
