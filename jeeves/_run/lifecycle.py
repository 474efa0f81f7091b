"""A run's life around its root session: lease heartbeat, session TTL, suspension at gates.

`supervise` runs the root session in a task group beside two helpers (a run with no
journal, no approval policy and no TTL needs neither, and runs the root alone):

- the heartbeat renews the run's lease in the root's session record every
  `HEARTBEAT_S` seconds (and writes the latest progress envelope there), so
  `jeeves runs` shows a run whose process died as `paused` once `LEASE_S`
  (2 × `HEARTBEAT_S`) passed;
- the suspension watcher waits for `Suspension.settled()` (a gate with no approver,
  everything in flight recorded) and cancels the root's tree.

Both end when the root returns or raises (a `done` event, `Suspension.end`), not by a
cancellation: on asyncio a cancelled task's traceback holds its frames, and through them the
run's state, in reference cycles only the cyclic collector frees.

The session TTL is a cancel scope around all of it, whose deadline comes from the root's
record (`expires_at`), so it holds across resumes and while the run waits at gates.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import anyio

from jeeves._run.context import Architecture, Context, Output, execute
from jeeves._run.state import RunState
from jeeves.approvals.policy import Approvals, enforced_policy
from jeeves.errors import SessionExpired
from jeeves.journal.records import HEARTBEAT_S, TERMINAL, SessionRecord, SessionStatus

__all__ = ["Outcome", "prepare", "set_root_status", "supervise"]


@dataclass
class Outcome:
    output: Output | None = None
    suspended: bool = False


async def prepare(
    state: RunState,
    root_id: str,
    session_ttl_s: float | None,
    *,
    read: bool = True,
    existing: SessionRecord | None = None,
) -> bool:
    """Load what the root's record carries into `state` (creation time, TTL end, policy);
    False when the session TTL already ran out (the record is then marked expired). With
    `read` False the caller already read the record: `existing`."""
    journal = state.journal
    if read and journal is not None:
        existing = await journal.get_session(root_id)
    state.fresh = journal is not None and existing is None and state.mode != "replay"
    now = time.time()
    state.created_at = existing.created_at if existing is not None and existing.created_at else now
    if existing is not None and existing.expires_at is not None:
        state.expires_at = existing.expires_at
    elif session_ttl_s is not None:
        state.expires_at = state.created_at + session_ttl_s
    recorded = existing.approvals if existing is not None else None
    if state.mode == "replay":  # nothing runs live: the recorded policy only lays out the steps
        if state.approvals is None and recorded is not None:
            state.approvals = Approvals.model_validate(recorded)
    if state.mode != "replay" and existing is not None and existing.progress is not None:
        state.progress = existing.progress  # a resume shows where the last attempt was until it moves on
    if state.mode != "replay" and state.expires_at is not None and now >= state.expires_at:
        await set_root_status(state, root_id, "expired", stop_reason="session_ttl", ran=False)
        return False
    if state.mode != "replay":  # enforced: the code's policy, never the journal's copy
        state.approvals = enforced_policy(state.approvals, recorded, root_id)
    return True


async def set_root_status(
    state: RunState, root_id: str, status: SessionStatus, *, stop_reason: str | None = None, ran: bool = True
) -> None:
    """Move the root's record to `status` (a terminal record is never moved again). When the
    tree `ran` in this attempt, the record takes what it spent (as a completed run's does), so
    a cancelled, expired or suspended run does not list as free."""
    journal = state.journal
    if journal is None or state.mode == "replay":
        return
    with anyio.CancelScope(shield=True):
        async with state.root_lock:
            record = await journal.get_session(root_id)
            if record is None or (record.status in TERMINAL and status != record.status):
                return
            update: dict[str, Any] = {
                "status": status,
                "lease_owner": None,
                "lease_renewed_at": None,
                "progress": state.progress if state.progress is not None else record.progress,
            }
            if stop_reason is not None:
                update["stop_reason"] = stop_reason
            if ran:
                update["usage"] = state.tree_usage(root_id).model_dump()
            await journal.put_session(record.model_copy(update=update))


async def _heartbeat(state: RunState, root_id: str, done: anyio.Event) -> None:
    """Renew the lease every `HEARTBEAT_S` seconds until `done` (the root returned or raised)."""
    journal = state.journal
    if journal is None or state.mode == "replay":
        return
    while True:
        with anyio.move_on_after(HEARTBEAT_S):
            await done.wait()
        if done.is_set():
            return
        async with state.root_lock:
            record = await journal.get_session(root_id)
            if record is None or record.status != "in_progress":
                continue
            state.lease_renewed_at = time.time()
            await journal.put_session(
                record.model_copy(
                    update={
                        "lease_owner": state.owner,
                        "lease_renewed_at": state.lease_renewed_at,
                        # a resume keeps its last attempt's envelope until it completes a step
                        "progress": state.progress if state.progress is not None else record.progress,
                    }
                )
            )


def _helped(state: RunState) -> bool:
    """Whether the root needs its helpers: a lease to renew (a live journal) or gates that
    may park (an approval policy; gates come only from one, see `jeeves._run.gates.run_policy`)."""
    return (state.journal is not None and state.mode != "replay") or state.approvals is not None


def unsupervised(state: RunState) -> bool:
    """Whether a run's root runs alone, with nothing to supervise: no session TTL, no lease to
    renew and no gate to park at. Its caller may then await `root.execute` itself (one
    coroutine frame fewer per run in flight than `supervise`)."""
    return state.expires_at is None and not _helped(state)


async def supervise(
    state: RunState, root: Context, arch: Architecture, task: str, *, index: int = 0
) -> Outcome:
    """Run the root session under the lease, the session TTL and the suspension watcher.

    A branch (`jeeves._run.branch`: a child session executed apart from its run) runs under the
    suspension watcher only: the lease and the TTL are its run's root's."""
    outcome = Outcome()
    error: BaseException | None = None
    branch = root.parent_id is not None
    deadline = state.expires_at - time.time() if state.expires_at is not None else None
    if deadline is None and not _helped(state):  # nothing to renew, no gate to park at (`unsupervised`)
        outcome.output = await execute(root, arch, task, index)
        return outcome
    done, work = anyio.Event(), anyio.CancelScope()
    with anyio.move_on_after(deadline if deadline is not None else float("inf")) as ttl:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                if await state.suspension.settled():
                    outcome.suspended = True
                    work.cancel()  # the root's tree only: the heartbeat ends by `done`

            state.suspension.watched = True
            group.start_soon(watch)
            if not branch:
                group.start_soon(_heartbeat, state, root.session_id, done)
            try:
                with work:
                    outcome.output = await execute(root, arch, task, index)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                error = exc
            finally:  # the helpers end by themselves: no cancelled task's traceback holds the run
                done.set()
                state.suspension.end()
    if error is not None:
        try:
            raise error
        finally:
            del error  # its traceback holds this frame: not a cycle through this local
    if ttl.cancelled_caught and outcome.output is None and not outcome.suspended:
        await set_root_status(state, root.session_id, "expired", stop_reason="session_ttl")
        raise SessionExpired(
            f"Run {root.session_id!r} reached its session TTL; it stopped with a terminal 'expired' record. "
            f"Start a new session to go on.",
        )
    if outcome.suspended and not branch:
        await set_root_status(state, root.session_id, "awaiting_gate")
    return outcome
