"""Approval gates as journaled steps (the kernel's; an Agent reaches them through `pass_gate`).

A gate is a step of its session (`kind="gate"`), keyed `(session_id, index)` like any
other. Its request is the call it guards (tool, call id, arguments, mode, arguments
hash), so a resume that reaches it with other arguments diverges instead of using a
decision made for something else. It is recorded twice at most:

1. when reached: `pending=True`, its result the `PendingGate`, its events the
   `approval.requested` one;
2. when decided (by the live approver here, or from outside with
   `jeeves.approvals.record_decision`): `pending=False`, its result the `Decision`, its
   events `approval.requested` then `approval.decided`.

The hash a decision must carry (`PendingGate.arguments_hash`) is `gating.gate_hash`: it
binds the gate id, the tool and the arguments. A gate recorded before the hash bound them
(its request's hash is `gating.arguments_hash` of the same arguments, a journal of an
earlier jeeves) keeps the hash it was recorded with: its request still matches, a decision
recorded for it is served, and a pending one is decided with the hash it shows. New gates
always get the bound hash.

A decided gate is served like any recorded step; a strict replay re-emits both events,
so it shows who decided. An undecided gate asks the live approver (at most until the
gate's TTL; no answer in time is an `expire` decision) or, with none, suspends the run
(`jeeves._run.state.Suspension`). A gate past its TTL is decided `expire` when it is next
reached. Approver failures propagate: a gate never opens by accident.
"""

from __future__ import annotations

import math
import time
from typing import Any

import anyio

from jeeves._run.state import Session, emit
from jeeves._run.steps import check_recorded, progress, put_whole, unadopted
from jeeves.approvals.policy import (
    ApprovalMode,
    Approvals,
    Decision,
    GateAction,
    PendingGate,
    arguments_hash,
    decided_event,
    gate_hash,
    gate_id,
    requested_event,
)
from jeeves.errors import GateExpired, GateRejected, ReplayDivergence, UserError
from jeeves.journal.records import StepRecord, fingerprint, served_events, step_origin

__all__ = ["approval_action", "deny_ends_run", "gate", "pass_gate", "refusal", "run_policy"]

_EVENT_EXCLUDE = {"seq", "ts", "replayed"}


def _gate_hash(record: StepRecord | None, gid: str, tool: str, arguments: dict[str, Any]) -> str:
    """The hash of gate `gid`: bound to the gate and tool, unless its record is older than that."""
    legacy = arguments_hash(arguments)
    recorded = record.request if record is not None and isinstance(record.request, dict) else {}
    if recorded.get("arguments_hash") == legacy:
        return legacy  # recorded before the hash bound the gate id and tool: keep its hash
    return gate_hash(gid, tool, arguments)


def run_policy(session: Session) -> Approvals | None:
    """The run's approval policy (`jeeves.run(..., approvals=)`); None when nothing is gated.
    An Agent's tools are gated by it through `jeeves.agent.gating.Gated`."""
    return session._state.approvals


def approval_action(
    session: Session, tool: str, mode: ApprovalMode | None, arguments: dict[str, Any]
) -> GateAction:
    """What the run's policy does with this call: run it, ask (a gate), or refuse it.
    Without a policy every call runs."""
    policy = session._state.approvals
    return "run" if policy is None else policy.action(tool, mode, arguments)


def refusal(session: Session, tool: str, mode: ApprovalMode | None) -> str:
    """The refusal the model reads for a call above the run's safety mode."""
    policy = session._state.approvals
    assert policy is not None
    return policy.refusal(tool, mode)


def deny_ends_run(session: Session) -> bool:
    """Whether a denial ends the run (the policy's `deny_ends_run`)."""
    policy = session._state.approvals
    return policy is not None and policy.deny_ends_run


async def pass_gate(
    session: Session,
    tool: str,
    tool_call_id: str,
    arguments: dict[str, Any],
    mode: ApprovalMode,
    *,
    index: int,
) -> str | None:
    """Pass the call's gate: None to run the call, or the text the model reads instead (a
    denial, or an approval of other arguments). An expired gate, or a denial under
    `deny_ends_run`, ends the run (`GateExpired`, `GateRejected`)."""
    session._state.suspension.enter()
    try:
        decision, bound = await _gate(session, tool, tool_call_id, arguments, mode, index)
    finally:
        session._state.suspension.leave()
    where = f"gate {gate_id(session.session_id, index)} ({tool!r})"
    by = decision.by or "the approver"
    why = f" ({decision.note})" if decision.note else ""
    if decision.decision == "expire":
        raise GateExpired(f"{where} expired before anyone decided; the run ends as expired.")
    if decision.decision == "deny":
        if deny_ends_run(session):
            raise GateRejected(f"{where} was denied by {by}{why}; the policy ends the run.")
        return f"Denied by {by}{why}: {tool} was not run. Do without it, or propose something else."
    if decision.arguments_hash != bound:
        return f"Refused: the approval of {where} was for other arguments (or another gate or tool) than this call's; {tool} was not run."
    return None


async def gate(
    session: Session,
    tool: str,
    tool_call_id: str,
    arguments: dict[str, Any],
    mode: ApprovalMode,
    *,
    index: int,
) -> Decision:
    """The decision for one gated call at step `index` (allocated in call order).

    Returns the recorded decision, or asks the live approver, or (no approver) parks
    the run's branch until the runner suspends the run.
    """
    session._state.suspension.enter()
    try:
        return (await _gate(session, tool, tool_call_id, arguments, mode, index))[0]
    finally:
        session._state.suspension.leave()


async def _gate(
    session: Session, tool: str, tool_call_id: str, arguments: dict[str, Any], mode: ApprovalMode, index: int
) -> tuple[Decision, str]:
    """The decision, and the hash an approval of this call must carry."""
    state = session._state
    journal = state.journal
    record = await journal.get_step(session.session_id, index) if journal is not None else None
    h = _gate_hash(record, gate_id(session.session_id, index), tool, arguments)
    request = {
        "tool": tool,
        "tool_call_id": tool_call_id,
        "arguments": arguments,
        "mode": mode,
        "arguments_hash": h,
    }
    fp = fingerprint(request)
    adopted = session._adopted
    if record is not None:
        check_recorded(record, session.session_id, "gate", tool, fp, request)
        where = step_origin(record, journal)
        for event in served_events(record, where, replayed=not adopted):
            await emit(session, event)
        if not record.pending:
            session._replayed += 0 if adopted else 1
            return Decision.model_validate(record.result), h
        gate = PendingGate.model_validate(record.result)
    if adopted:
        raise unadopted(session, index, f"gate {tool!r}")
    if state.mode == "replay":
        raise ReplayDivergence(
            f"Session {session.session_id!r} reached gate {gate_id(session.session_id, index)} ({tool!r}), which the "
            f"recorded run holds undecided or not at all: replay a run that went past its gates, or resume it.",
            session_id=session.session_id,
            step=index,
        )
    if record is None:
        gate = _new_gate(session, tool, tool_call_id, arguments, mode, h, index)
        requested = requested_event(gate)
        await emit(session, requested)
        await _write(session, gate, fp, request, pending=True, events=[requested], result=gate)
    decision = await _decide(session, gate)
    decided = decision.model_copy(update={"at": decision.at or time.time()})
    event = decided_event(gate, decided)
    await emit(session, event)
    await _write(
        session, gate, fp, request, pending=False, events=[requested_event(gate), event], result=decided
    )
    return decided, h


def _new_gate(
    session: Session,
    tool: str,
    call_id: str,
    arguments: dict[str, Any],
    mode: ApprovalMode,
    h: str,
    index: int,
) -> PendingGate:
    now = time.time()
    policy = session._state.approvals
    ttl = policy.gate_ttl_s if policy is not None else None
    return PendingGate(
        session_id=session.session_id,
        step=index,
        gate_id=gate_id(session.session_id, index),
        tool=tool,
        tool_call_id=call_id,
        arguments=arguments,
        mode=mode,
        arguments_hash=h,
        requested_at=now,
        expires_at=None if ttl is None else now + ttl,
    )


async def _decide(session: Session, gate: PendingGate) -> Decision:
    state = session._state
    expired = Decision(decision="expire", by="jeeves", arguments_hash=gate.arguments_hash)
    left = math.inf if gate.expires_at is None else gate.expires_at - time.time()
    if left <= 0:
        return expired
    waiting = progress(session, gate.step, gate.gate_id)
    state.progress = waiting.model_dump(mode="json", exclude={"seq", "ts", "replayed", "type"})
    if state.progress_interval_s is not None:
        await emit(session, waiting)
    if state.approver is None:
        state.suspension.leave()  # parked, not in flight (the caller's step counts as one)
        try:
            await state.suspension.park(gate)
        finally:
            state.suspension.enter()
        raise AssertionError("unreachable: a parked gate is cancelled")  # pragma: no cover
    decision: Any = expired
    with anyio.move_on_after(left):
        decision = await state.approver(gate)
    if not isinstance(decision, Decision):
        raise UserError(
            f"The approver returned {decision!r} for gate {gate.gate_id!r}; it must return a "
            f"jeeves.approvals.Decision (Decision.approve(gate, by=...) or Decision.deny(...))."
        )
    return decision


async def _write(
    session: Session,
    gate: PendingGate,
    fp: str,
    request: dict[str, Any],
    *,
    pending: bool,
    events: list[Any],
    result: PendingGate | Decision,
) -> None:
    journal = session._state.journal
    if journal is None:
        return
    state = session._state
    state.suspension.enter()
    try:
        await put_whole(
            journal.put_step,
            StepRecord(
                session_id=session.session_id,
                index=gate.step,
                kind="gate",
                name=gate.tool,
                fingerprint=fp,
                request=request,
                result=result.model_dump(mode="json"),
                pending=pending,
                events=[e.model_dump(mode="json", exclude=_EVENT_EXCLUDE) for e in events],
            ),
        )
    finally:
        state.suspension.leave()
