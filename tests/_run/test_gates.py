"""Approval gates end to end: crashes at each point, decisions, expiry, parallel gates, replay."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

import jeeves
from jeeves import Agent, MemoryJournal, Supervisor
from jeeves.approvals.decide import (
    Approvals,
    Decision,
    GateConflict,
    PendingGate,
    pending_gates,
    record_decision,
)
from jeeves.events import ApprovalDecided, ApprovalRequested, Progress
from jeeves.journal.open import list_runs
from jeeves.messages import ModelRequest
from jeeves.testing import FunctionModel, Reply, call
from tests.conftest import crash_child, wait_for_line


# -- SIGKILL at each point ---------------------------------------------------------------
def _kill_at(root: Path, point: str) -> None:
    child = crash_child("tests._run.gate_crash_child", str(root), point)
    try:
        wait_for_line(child, "blocked")  # printed at the crash point
        child.send_signal(signal.SIGKILL)
    finally:
        child.communicate(timeout=30)


@pytest.mark.parametrize("point", ["before", "waiting", "after"])
def test_sigkill_at_each_point_then_resume_repeats_no_completed_call(tmp_path: Path, point: str) -> None:
    from tests._run.gate_crash_child import gated_run, resumed

    whole = tmp_path / "whole"
    whole.mkdir()
    uninterrupted = anyio.run(gated_run, whole)
    assert uninterrupted.status == "completed"
    calls_whole = (whole / "calls").read_text().splitlines()
    assert len(calls_whole) == 3

    killed = tmp_path / "killed"
    killed.mkdir()
    _kill_at(killed, point)
    done_before = len((killed / "calls").read_text().splitlines())
    assert done_before == {"before": 1, "waiting": 2, "after": 2}[point]

    result = anyio.run(resumed, killed)
    assert (result.status, result.text) == ("completed", uninterrupted.text)
    assert (killed / "calls").read_text().splitlines() == calls_whole  # each model call made once
    assert result.usage.model_calls == 3 - done_before
    attempts = (killed / "refund_calls").read_text().splitlines()
    applied = (killed / "refunds").read_text().splitlines()
    assert len(applied) == 1  # the refund took effect exactly once
    if point == "after":  # in flight at the kill: at-least-once, with one idempotency key
        assert len(attempts) == 2 and len(set(attempts)) == 1
    else:
        assert len(attempts) == 1


# -- decisions ---------------------------------------------------------------------------
def _refund_agent(seen: list[ModelRequest], ran: list[dict[str, object]]) -> Agent:
    @jeeves.tool(approval="destructive")
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        ran.append({"order_id": order_id, "amount": amount})
        return f"refunded {amount}"

    def act(request: ModelRequest) -> Reply:
        seen.append(request)
        results = [m for m in request.messages if m.role == "tool"]
        if results:
            return Reply(text=f"model read: {results[-1].content}")
        return Reply(tool_calls=[call("issue_refund", {"order_id": "881", "amount": 12.5})])

    return Agent("You refund.", tools=[issue_refund], model=FunctionModel(act))


@pytest.mark.anyio
async def test_approving_other_arguments_is_refused() -> None:
    journal = MemoryJournal()
    seen: list[ModelRequest] = []
    ran: list[dict[str, object]] = []
    agent = _refund_agent(seen, ran)
    first = await jeeves.run(agent, "refund", journal=journal, session_id="r", approvals=Approvals())
    (gate,) = first.pending
    other = Decision(decision="approve", by="mallory", arguments_hash="0" * 64)
    with pytest.raises(GateConflict, match="other|hash"):
        await record_decision(journal, gate.gate_id, other)
    assert await pending_gates(journal, "r") == [gate]  # nothing recorded

    async def sly(g: PendingGate) -> Decision:  # a live approver approving something else
        return Decision(decision="approve", by="mallory", arguments_hash="0" * 64)

    live = await jeeves.run(agent, "refund", journal=MemoryJournal(), approvals=Approvals(), approver=sly)
    assert live.status == "completed" and ran == []
    assert "for other arguments" in live.text


@pytest.mark.anyio
async def test_a_denial_reaches_the_model_and_nothing_runs() -> None:
    seen: list[ModelRequest] = []
    ran: list[dict[str, object]] = []

    async def deny(gate: PendingGate) -> Decision:
        return Decision.deny(gate, by="bob", note="refund window closed")

    result = await jeeves.run(_refund_agent(seen, ran), "refund", approvals=Approvals(), approver=deny)
    assert result.status == "completed" and ran == []
    assert "Denied by bob (refund window closed)" in (seen[-1].messages[-1].content or "")


@pytest.mark.anyio
async def test_a_denial_ends_the_run_when_the_policy_says_so() -> None:
    async def deny(gate: PendingGate) -> Decision:
        return Decision.deny(gate, by="bob")

    policy = Approvals(deny_ends_run=True)
    result = await jeeves.run(_refund_agent([], []), "refund", approvals=policy, approver=deny)
    assert result.status == "rejected"


@pytest.mark.anyio
async def test_an_expired_gate_ends_the_run_as_expired() -> None:
    async def never(gate: PendingGate) -> Decision:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    ran: list[dict[str, object]] = []
    journal = MemoryJournal()
    policy = Approvals(gate_ttl_s=0.05)
    result = await jeeves.run(
        _refund_agent([], ran), "refund", journal=journal, session_id="e", approvals=policy, approver=never
    )
    assert (result.status, ran) == ("expired", [])
    record = await journal.get_session("e")
    assert record is not None and record.status == "expired"
    gate = await journal.get_step("e", 1)
    assert gate is not None and gate.result["decision"] == "expire" and not gate.pending


@pytest.mark.anyio
async def test_a_call_above_the_safety_mode_is_refused_never_run() -> None:
    seen: list[ModelRequest] = []
    ran: list[dict[str, object]] = []
    policy = Approvals(refuse_above="network")
    result = await jeeves.run(_refund_agent(seen, ran), "refund", approvals=policy)
    assert result.status == "completed" and ran == []
    assert "above this run's safety mode (network)" in result.text


# -- parallel gates ----------------------------------------------------------------------
def _team(ran: list[str], calls: list[str]) -> Supervisor:
    def worker(name: str) -> Agent:
        @jeeves.tool(name=f"pay_{name}", approval="destructive")
        def pay() -> str:
            """Pay."""
            ran.append(name)
            return f"{name} paid"

        def act(request: ModelRequest) -> Reply:
            calls.append(request.session_id)
            if any(m.role == "tool" for m in request.messages):
                return Reply(text=f"{name} done")
            return Reply(tool_calls=[call(f"pay_{name}")])

        return Agent(f"You are {name}.", tools=[pay], model=FunctionModel(act))

    def lead(request: ModelRequest) -> Reply:
        calls.append(request.session_id)
        if any(m.role == "tool" for m in request.messages):
            return Reply(text="both paid")
        return Reply(
            tool_calls=[
                call("delegate", {"worker": "a", "instructions": "pay a"}),
                call("delegate", {"worker": "b", "instructions": "pay b"}),
            ]
        )

    return Supervisor({"a": worker("a"), "b": worker("b")}, model=FunctionModel(lead))


@pytest.mark.anyio
async def test_two_parallel_workers_each_at_a_gate_are_both_reported_and_each_tool_runs_once() -> None:
    journal = MemoryJournal()
    ran: list[str] = []
    calls: list[str] = []
    policy = Approvals(auto=("read_only", "local_write", "delegated"))
    team = _team(ran, calls)
    first = await jeeves.run(team, "pay both", journal=journal, session_id="p", approvals=policy)
    assert first.status == "awaiting_approval"
    assert [g.gate_id for g in first.pending] == ["p__a_0#1", "p__b_0#1"]
    assert (await journal.get_session("p")).status == "awaiting_gate"  # type: ignore[union-attr]
    assert ran == [] and sorted(calls) == ["p", "p__a_0", "p__b_0"]

    a, b = first.pending
    await record_decision(journal, a.gate_id, Decision.approve(a, by="alice"))
    second = await jeeves.resume(_team(ran, calls), "p", journal=journal, approvals=policy)
    assert second.status == "awaiting_approval" and [g.gate_id for g in second.pending] == [b.gate_id]
    assert ran == ["a"]

    third = await jeeves.resume(
        _team(ran, calls),
        "p",
        journal=journal,
        approvals=policy,
        decisions={b.gate_id: Decision.approve(b, by="bob")},
    )
    assert (third.status, third.text) == ("completed", "both paid")
    assert sorted(ran) == ["a", "b"]
    assert sorted(calls) == ["p", "p", "p__a_0", "p__a_0", "p__b_0", "p__b_0"]  # none repeated


# -- replay ------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_replay_of_a_gated_run_is_exact_offline_and_shows_who_approved() -> None:
    journal = MemoryJournal()
    ran: list[dict[str, object]] = []
    agent = _refund_agent([], ran)
    first = await jeeves.run(agent, "refund", journal=journal, session_id="g", approvals=Approvals())
    (gate,) = first.pending
    await record_decision(journal, gate.gate_id, Decision.approve(gate, by="alice", note="ok"))
    done = await jeeves.resume(agent, "g", journal=journal, approvals=Approvals())
    assert ran == [{"order_id": "881", "amount": 12.5}]

    events = []
    async with jeeves.stream(agent, "refund", journal=journal, session_id="g", mode="replay") as stream:
        async for event in stream:
            events.append(event)
        replayed = await stream.result()
    assert replayed.text == done.text and len(ran) == 1  # nothing ran
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    assert [(d.by, d.note, d.decision, d.replayed) for d in decided] == [("alice", "ok", "approve", True)]
    assert [e.gate_id for e in events if isinstance(e, ApprovalRequested)] == ["g#1"]
    assert not any(isinstance(e, Progress) for e in events)  # progress is live-only


@pytest.mark.anyio
async def test_a_waiting_gate_reports_progress_and_a_lapsed_lease_shows_paused() -> None:
    journal = MemoryJournal()
    events = []
    async with jeeves.stream(
        _refund_agent([], []), "refund", journal=journal, session_id="w", approvals=Approvals(), progress_s=0
    ) as stream:
        async for event in stream:
            events.append(event)
        result = await stream.result()
    assert result.status == "awaiting_approval"
    progress = [e for e in events if isinstance(e, Progress)]
    assert [(p.gate, p.step, p.completed_steps) for p in progress] == [(None, 0, 1), ("w#1", 1, 1)]
    (run,) = await list_runs(journal)
    assert run.status == "awaiting_gate" and run.progress is not None and run.progress["gate"] == "w#1"

    record = await journal.get_session("w")
    assert record is not None
    await journal.put_session(record.model_copy(update={"status": "in_progress", "lease_renewed_at": 100.0}))
    assert [r.status for r in await list_runs(journal, now=105.0)] == ["in_progress"]
    assert [r.status for r in await list_runs(journal, now=1000.0)] == ["paused"]


@pytest.mark.anyio
async def test_the_session_ttl_is_hard_across_resumes() -> None:
    async def never(gate: PendingGate) -> Decision:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    journal = MemoryJournal()
    agent = _refund_agent([], [])
    result = await jeeves.run(
        agent,
        "refund",
        journal=journal,
        session_id="s",
        approvals=Approvals(),
        approver=never,
        session_ttl_s=0.05,
    )
    assert result.status == "expired"
    record = await journal.get_session("s")
    assert record is not None and record.status == "expired" and record.expires_at is not None
    again = await jeeves.resume(agent, "s", journal=journal)  # the recorded TTL still holds
    assert again.status == "expired"


@pytest.mark.anyio
async def test_a_delegation_is_delegated_mode_so_the_default_policy_gates_it() -> None:
    ran: list[str] = []
    calls: list[str] = []
    journal = MemoryJournal()
    first = await jeeves.run(
        _team(ran, calls), "pay both", journal=journal, session_id="d", approvals=Approvals()
    )
    assert [(g.gate_id, g.tool, g.mode) for g in first.pending] == [
        ("d#1", "delegate", "delegated"),
        ("d#2", "delegate", "delegated"),
    ]
    assert calls == ["d"] and ran == []  # no worker started
    refused = await jeeves.run(_team(ran, calls), "pay both", approvals=Approvals(refuse_above="network"))
    assert refused.status == "completed" and ran == []  # both delegations refused; the lead answered


def test_a_v1_running_record_reads_as_in_progress() -> None:
    from jeeves.journal.records import SessionRecord

    record = SessionRecord.model_validate(
        {"v": 1, "session_id": "r", "role": "a", "architecture": "agent", "status": "running"}
    )
    assert record.status == "in_progress"
