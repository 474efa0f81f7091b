"""Gates cannot be confused or forged from outside the code: strict ids, a hash bound to the gate,
old journals still resume, and the policy a resume enforces is the code's, never the journal's."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, MemoryJournal
from jeeves.approvals.decide import (
    Approvals,
    BadGateId,
    Decision,
    GateConflict,
    PendingGate,
    arguments_hash,
    gate_hash,
    parse_gate_id,
    pending_gates,
    record_decision,
)
from jeeves.approvals.policy import PolicyMismatch
from jeeves.journal.records import fingerprint
from jeeves.messages import ModelRequest
from jeeves.testing import FunctionModel, Reply, call
from tests.conftest import REPO, subprocess_env

REFUND = {"order_id": "881", "amount": 12.5}


def test_gate_ids_parse_strictly() -> None:
    assert parse_gate_id("t-881__refunds_0#3") == ("t-881__refunds_0", 3)
    assert parse_gate_id("r#0") == ("r", 0)
    for bad in ["r#01", "r#\u0661", "r#\u00b9", "r#+1", "r#-1", "r# 1", "r#1\n", "r#", "#1", "r", "r#1#2", 3]:
        with pytest.raises(BadGateId, match="is not a gate id"):
            parse_gate_id(bad)


def refund_agent(
    ran: list[dict[str, Any]], *, twice: bool = False, looked: anyio.Event | None = None
) -> Agent:
    """Refunds order 881 (destructive): once, or twice in one turn with the same arguments.
    With `looked`, it first looks the order up (read-only), a lookup that waits for `looked`."""

    @jeeves.tool(approval="destructive")
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        ran.append({"order_id": order_id, "amount": amount})
        return f"refunded {amount}"

    @jeeves.tool(approval="read_only")
    async def lookup(order_id: str) -> str:
        """Look an order up."""
        if looked is not None:
            await looked.wait()
        return "paid 12.5"

    def act(request: ModelRequest) -> Reply:
        results = [m for m in request.messages if m.role == "tool"]
        if looked is not None and not results:
            return Reply(tool_calls=[call("lookup", {"order_id": "881"})])
        if looked is not None and len(results) == 1 or looked is None and not results:
            refunds = [call("issue_refund", REFUND, id=f"c{i}") for i in range(2 if twice else 1)]
            return Reply(tool_calls=refunds)
        return Reply(text=f"model read: {results[-1].content}")

    return Agent("You refund.", tools=[issue_refund, lookup], model=FunctionModel(act))


@pytest.mark.anyio
async def test_a_decision_for_one_gate_approves_no_other_gate_with_the_same_arguments() -> None:
    journal = MemoryJournal()
    ran: list[dict[str, Any]] = []
    first = await jeeves.run(
        refund_agent(ran, twice=True), "x", journal=journal, session_id="r", approvals=Approvals()
    )
    a, b = first.pending
    assert (a.arguments, a.tool) == (b.arguments, b.tool) and a.arguments_hash != b.arguments_hash
    assert a.arguments_hash == gate_hash(a.gate_id, "issue_refund", REFUND)
    with pytest.raises(GateConflict, match="approve what the gate shows"):
        await record_decision(journal, b.gate_id, Decision.approve(a, by="mallory"))
    with pytest.raises(BadGateId):
        await record_decision(journal, a.gate_id.replace("#", "#0"), Decision.approve(a, by="mallory"))
    assert await pending_gates(journal, "r") == [a, b]


@pytest.mark.anyio
async def test_a_journal_written_with_the_arguments_only_hash_still_resumes() -> None:
    journal = MemoryJournal()
    ran: list[dict[str, Any]] = []
    agent = refund_agent(ran)
    (gate,) = (await jeeves.run(agent, "x", journal=journal, session_id="old", approvals=Approvals())).pending
    step = await journal.get_step("old", gate.step)
    assert step is not None
    legacy = arguments_hash(REFUND)  # what jeeves recorded before the hash bound the gate and tool
    request = {**step.request, "arguments_hash": legacy}
    result = {**step.result, "arguments_hash": legacy}
    await journal.put_step(
        step.model_copy(update={"request": request, "result": result, "fingerprint": fingerprint(request)})
    )

    (shown,) = await pending_gates(journal, "old")
    assert shown.arguments_hash == legacy
    await record_decision(journal, shown.gate_id, Decision.approve(shown, by="alice"))
    done = await jeeves.resume(agent, "old", journal=journal, approvals=Approvals())
    assert (done.status, done.text) == ("completed", "model read: refunded 12.5") and ran == [REFUND]


async def _interrupted_after_the_model_asked_for_a_lookup(
    journal: MemoryJournal, ran: list[dict[str, Any]]
) -> None:
    """Run under the default policy until the model asked for the lookup, then stop it there."""
    with anyio.move_on_after(30):
        async with jeeves.stream(
            refund_agent(ran, looked=anyio.Event()),
            "x",
            journal=journal,
            session_id="p",
            approvals=Approvals(),
        ) as events:
            async for event in events:
                if event.type == "tool.started":
                    break
    record = await journal.get_session("p")
    assert record is not None and record.approvals is not None and ran == []


@pytest.mark.anyio
async def test_an_edited_journal_policy_is_not_enforced_the_codes_is() -> None:
    journal = MemoryJournal()
    ran: list[dict[str, Any]] = []
    await _interrupted_after_the_model_asked_for_a_lookup(journal, ran)
    record = await journal.get_session("p")
    assert record is not None
    loose = {
        **(record.approvals or {}),
        "auto": ["read_only", "local_write", "network", "delegated", "destructive"],
    }
    await journal.put_session(record.model_copy(update={"approvals": loose}))  # someone edits the journal

    looked = anyio.Event()
    looked.set()
    with pytest.raises(jeeves.errors.UserError, match=r"recorded under an approval policy .* none is given"):
        await jeeves.resume(refund_agent(ran, looked=looked), "p", journal=journal)
    with pytest.warns(PolicyMismatch, match="not the one its journal records"):
        resumed = await jeeves.resume(
            refund_agent(ran, looked=looked), "p", journal=journal, approvals=Approvals()
        )
    assert resumed.status == "awaiting_approval" and ran == []  # the destructive refund waits at its gate
    assert [g.tool for g in resumed.pending] == ["issue_refund"]


@pytest.mark.anyio
async def test_the_same_policy_resumes_without_a_warning() -> None:
    journal = MemoryJournal()
    ran: list[dict[str, Any]] = []
    (gate,) = (
        await jeeves.run(refund_agent(ran), "x", journal=journal, session_id="s", approvals=Approvals())
    ).pending
    await record_decision(journal, gate.gate_id, Decision.approve(gate, by="alice"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PolicyMismatch)
        done = await jeeves.resume(refund_agent(ran), "s", journal=journal, approvals=Approvals())
    assert done.status == "completed" and ran == [REFUND]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jeeves", *args],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )


def test_the_cli_takes_the_policy_from_code_and_refuses_a_bad_gate_id(tmp_path: Path) -> None:
    journal = str(tmp_path / "refunds.db")
    started = subprocess.run(
        [sys.executable, "examples/refund_with_approval.py", "start", "--journal", journal],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert started.returncode == 0, started.stderr
    for bad in ["t-881#01", "t-881#\u0661", "t-881#\u00b9"]:
        refused = cli("approve", journal, "t-881", "--gate", bad, "--by", "alice")
        assert refused.returncode == 2 and "is not a gate id" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert cli("approve", journal, "t-881", "--by", "alice").returncode == 0
    ungoverned = cli("resume", journal, "t-881")
    assert ungoverned.returncode == 2 and "--approvals MODULE:ATTR" in ungoverned.stderr
    wrong = cli("resume", journal, "t-881", "--approvals", "examples.refund_with_approval:build")
    assert wrong.returncode == 2 and "not a jeeves.approvals.Approvals policy" in wrong.stderr
    done = cli("resume", journal, "t-881", "--approvals", "examples.refund_with_approval:POLICY")
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout and "refunded 42.00" in done.stdout


def test_pending_gate_from_the_journal_has_the_bound_hash() -> None:
    gate = PendingGate(
        session_id="s",
        step=1,
        gate_id="s#1",
        tool="pay",
        arguments={},
        arguments_hash=gate_hash("s#1", "pay", {}),
    )
    assert Decision.approve(gate, by="a").arguments_hash == gate_hash("s#1", "pay", {})
