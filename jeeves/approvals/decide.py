"""Approval gates, from the outside: the policy types, and deciding gates held in a journal.

A run given `approvals=Approvals(...)` gates the tool calls its policy says to ask about.
A gate is a journaled step (`kind="gate"`): recorded as pending when it is reached, then
given its `Decision` as its result. With a live approver (`jeeves.run(..., approver=fn)`)
the run waits for it; without one the run suspends (`RunResult.status ==
"awaiting_approval"`), and the decision is recorded here, from this process or any other:

```python
gates = await pending_gates("runs.db", "t-881")
await record_decision("runs.db", gates[0].gate_id, Decision.approve(gates[0], by="alice"))
await jeeves.resume(team, "t-881", journal="runs.db")  # or: jeeves resume runs.db t-881
```

See docs/approvals.md.
"""

from __future__ import annotations

import os
import time

from jeeves.approvals.policy import (
    APPROVAL_MODES,
    Allow,
    ApprovalMode,
    Approvals,
    Approver,
    BadGateId,
    Decision,
    PendingGate,
    arguments_hash,
    decided_event,
    gate_hash,
    gate_id,
    parse_gate_id,
)
from jeeves.errors import UserError
from jeeves.journal.open import close_journal, open_journal
from jeeves.journal.records import Journal, StepRecord
from jeeves.journal.store import JournalStore

__all__ = [
    "APPROVAL_MODES",
    "Allow",
    "ApprovalMode",
    "Approvals",
    "Approver",
    "BadGateId",
    "Decision",
    "GateConflict",
    "GateNotFound",
    "PendingGate",
    "arguments_hash",
    "decided_event",
    "gate_hash",
    "gate_id",
    "parse_gate_id",
    "pending_gates",
    "record_decision",
]

JournalLike = Journal | str | os.PathLike[str]


class GateNotFound(UserError):
    """No gate with that id (or no pending gate in that run) is in the journal (HTTP 404)."""


class GateConflict(UserError):
    """The gate cannot take this decision: already decided, expired, or the decision approves
    other arguments than the gate holds (HTTP 409)."""


async def _pending_in(store: Journal, session_id: str) -> list[PendingGate]:
    if not isinstance(store, JournalStore):
        raise UserError(
            f"{store!r} cannot list its steps; name the gate ('SESSION#STEP') instead of the run."
        )
    out: list[PendingGate] = []
    for record in await store.sessions(session_id):
        for index in await store.step_indices(record.session_id):
            step = await store.get_step(record.session_id, index)
            if step is not None and step.kind == "gate" and step.pending:
                out.append(PendingGate.model_validate(step.result))
    return sorted(out, key=lambda g: (g.session_id, g.step))


async def pending_gates(journal: JournalLike, session_id: str) -> list[PendingGate]:
    """Every gate of run `session_id` (and the sessions below it) waiting for a decision."""
    store = open_journal(journal, create=False)
    try:
        return await _pending_in(store, session_id)
    finally:
        if store is not journal:
            await close_journal(store)


async def _gate_record(store: Journal, target: str) -> StepRecord:
    if "#" in target:
        session, step = parse_gate_id(target)
        record = await store.get_step(session, step)
        if record is None or record.kind != "gate":
            raise GateNotFound(f"The journal holds no gate {target!r}; `jeeves runs` lists the pending ones.")
        return record
    found = await _pending_in(store, target)
    if not found:
        raise GateNotFound(f"Run {target!r} has no gate waiting for a decision in {store!r}.")
    if len(found) > 1:
        ids = ", ".join(repr(g.gate_id) for g in found)
        raise GateConflict(f"Run {target!r} has {len(found)} pending gates ({ids}); name one (--gate ID).")
    record = await store.get_step(found[0].session_id, found[0].step)
    assert record is not None
    return record


def check_decision(gate: PendingGate, decision: Decision, now: float) -> None:
    """Refuse a decision the gate cannot take: it approves other arguments, or it came late."""
    if decision.decision == "approve" and decision.arguments_hash != gate.arguments_hash:
        raise GateConflict(
            f"The decision approves arguments with hash {decision.arguments_hash!r}, but gate {gate.gate_id!r} "
            f"holds {gate.tool}({gate.arguments!r}) with hash {gate.arguments_hash!r}; approve what the gate "
            f"shows (Decision.approve(gate, by=...))."
        )
    if decision.decision != "expire" and gate.expires_at is not None and now > gate.expires_at:
        raise GateConflict(
            f"Gate {gate.gate_id!r} expired at {time.ctime(gate.expires_at)}; it can no longer be decided. "
            f"Resume the run to end it as expired, or start a new run."
        )


async def record_decision(journal: JournalLike, target: str, decision: Decision) -> Decision:
    """Write `decision` into the journal as the result of gate `target` (a gate id
    `SESSION#STEP`, or a run's session id when it has exactly one pending gate).

    Returns the decision as recorded (`at` filled in). Raises `GateNotFound` for an unknown
    gate and `GateConflict` for one already decided or expired, or for an approval whose
    `arguments_hash` is not the gate's. Resume the run afterwards to act on it.
    """
    if not isinstance(decision, Decision):
        raise UserError(f"record_decision needs a jeeves.approvals.Decision, got {decision!r}.")
    store = open_journal(journal, create=False)
    try:
        record = await _gate_record(store, target)
        if not record.pending:
            raise GateConflict(
                f"Gate {record.session_id}#{record.index} is already decided: {record.result!r}."
            )
        gate = PendingGate.model_validate(record.result)
        now = time.time()
        check_decision(gate, decision, now)
        decided = decision.model_copy(update={"at": decision.at or now})
        event = decided_event(gate, decided).model_dump(mode="json", exclude={"seq", "ts", "replayed"})
        await store.put_step(
            record.model_copy(
                update={
                    "pending": False,
                    "result": decided.model_dump(mode="json"),
                    "events": [*record.events, event],
                }
            )
        )
        return decided
    finally:
        if store is not journal:
            await close_journal(store)
