"""GET /runs/{id}/gates and POST /runs/{id}/gates/{gate_id}: live gates, the guard, a journal across app restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from jeeves.approvals.decide import Approvals
from jeeves.server import create_app
from jeeves.server.runs import RunRecord
from tests.server.conftest import asgi_client
from tests.server.gated import CALLS, POLICY, REFUND, refund_entry, team_entry

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _counts() -> None:
    CALLS.clear()


async def gated_run(app: Starlette, client: httpx.AsyncClient, sid: str, name: str = "refund") -> RunRecord:
    """Start run `sid` and wait until it waits on a gate (or ended)."""
    started = await client.post(
        "/runs", json={"architecture": name, "task": "Refund order 881", "session_id": sid}
    )
    assert started.status_code == 201, started.text
    record: RunRecord = app.state.runs.get(sid)
    while not record.pending() and not record.finished:
        await record.changed()
    return record


def approve(gate: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {
        "decision": "approve",
        "by": "alice",
        "note": "checked",
        "arguments_hash": gate["arguments_hash"],
        **over,
    }


async def test_a_run_waits_at_its_gate_until_it_is_approved_over_http() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        record = await gated_run(app, client, "t-1")
        gates = (await client.get("/runs/t-1/gates")).json()
        assert [(g["gate_id"], g["tool"], g["arguments"], g["mode"]) for g in gates] == [
            ("t-1#1", "issue_refund", REFUND, "destructive")
        ]
        assert (await client.get("/runs/t-1")).json()["pending_gates"] == ["t-1#1"]
        assert CALLS["issue_refund"] == 0 and record.status == "running"

        decided = await client.post("/runs/t-1/gates/t-1%231", json=approve(gates[0]))
        assert decided.status_code == 200, decided.text
        assert decided.json()["decision"] == "approve" and decided.json()["by"] == "alice"
        await record.wait()
        assert record.status == "completed" and record.result is not None
        assert record.result.text == "Refunded order 881."
        assert CALLS["issue_refund"] == 1 and CALLS["model"] == 2
        assert (await client.get("/runs/t-1/gates")).json() == []
        again = await client.post("/runs/t-1/gates/t-1%231", json=approve(gates[0]))
        assert again.status_code == 409 and "already decided" in again.json()["error"]
        types = [e.type for e in record.events_after(0)]
        assert (
            types.index("approval.requested")
            < types.index("approval.decided")
            < types.index("tool.completed")
        )


async def test_wrong_decisions_are_refused_and_the_gate_keeps_waiting() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        record = await gated_run(app, client, "t-2")
        gate = (await client.get("/runs/t-2/gates")).json()[0]
        other = await client.post("/runs/t-2/gates/t-2%231", json=approve(gate, arguments_hash="0" * 64))
        assert other.status_code == 409 and "approve what the gate shows" in other.json()["error"]
        unknown = await client.post("/runs/t-2/gates/t-2%239", json=approve(gate))
        assert unknown.status_code == 404, unknown.text
        foreign = await client.post("/runs/t-2/gates/t-9%231", json=approve(gate))
        assert foreign.status_code == 404 and "does not belong" in foreign.json()["error"]
        missing = await client.post("/runs/t-2/gates/t-2%231", json={"decision": "approve"})
        assert missing.status_code == 422
        assert (await client.post("/runs/nope/gates/nope%231", json=approve(gate))).status_code == 404
        assert [g.gate_id for g in record.pending()] == ["t-2#1"] and CALLS["issue_refund"] == 0
        denied = await client.post("/runs/t-2/gates/t-2%231", json=approve(gate, decision="deny", by="bob"))
        assert denied.status_code == 200
        await record.wait()
    assert record.status == "completed" and CALLS["issue_refund"] == 0
    result = next(e for e in record.events_after(0) if e.type == "tool.completed")
    assert result.is_error and "Denied by bob (checked)" in result.result  # type: ignore[union-attr]


async def test_the_guard_and_the_token_cover_the_gate_routes() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY, token="s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    async with asgi_client(app) as client:
        client.headers.update(auth)
        record = await gated_run(app, client, "t-3")
        gate = record.pending()[0].model_dump(mode="json")
        url = "/runs/t-3/gates/t-3%231"
        assert (
            await client.get("/runs/t-3/gates", headers={"Authorization": "Bearer no"})
        ).status_code == 401
        assert (
            await client.post(url, json=approve(gate), headers={"Origin": "https://evil.example"})
        ).status_code == 403
        plain = await client.post(
            url, content=b'{"decision": "approve"}', headers={"Content-Type": "text/plain"}
        )
        assert plain.status_code == 415
        assert (await client.get("/runs/t-3/gates", headers={"Host": "evil.example"})).status_code == 400
        assert record.pending() and CALLS["issue_refund"] == 0
        assert (await client.post(url, json=approve(gate))).status_code == 200
        await record.wait()
    assert record.status == "completed"


async def test_a_gate_in_a_nested_worker_is_listed_with_its_session() -> None:
    app = create_app({"team": team_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        record = await gated_run(app, client, "t-4", "team")
        (gate,) = (await client.get("/runs/t-4/gates")).json()
        assert gate["gate_id"] == "t-4__refunds_0#1" and gate["session_id"] == "t-4__refunds_0"
        assert (
            await client.post("/runs/t-4/gates/t-4__refunds_0%231", json=approve(gate))
        ).status_code == 200
        await record.wait()
    assert record.status == "completed" and record.result is not None
    assert record.result.text == "Done: order 881 is refunded." and CALLS["issue_refund"] == 1


async def test_a_gate_nobody_decides_in_time_ends_the_run_expired() -> None:
    app = create_app({"refund": refund_entry}, approvals=Approvals(gate_ttl_s=0.05))
    async with asgi_client(app) as client:
        started = await client.post(
            "/runs", json={"architecture": "refund", "task": "Refund", "session_id": "t-5"}
        )
        assert started.status_code == 201
        record: RunRecord = app.state.runs.get("t-5")
        await record.wait()
        assert record.status == "expired" and (await client.get("/runs/t-5")).json()["status"] == "expired"
        late = await client.post(
            "/runs/t-5/gates/t-5%231", json={"decision": "approve", "by": "a", "arguments_hash": "x"}
        )
        assert late.status_code == 409, late.text
    assert CALLS["issue_refund"] == 0


async def test_a_restarted_app_on_the_same_journal_holds_the_gated_run_and_resumes_it(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    first = create_app({"refund": refund_entry}, approvals=POLICY, journal=journal)
    async with asgi_client(first) as client:
        await gated_run(first, client, "t-6")
    assert CALLS == {"model": 1}  # the app stopped (its runs cancelled) while the gate waited

    second = create_app({"refund": refund_entry}, approvals=POLICY, journal=journal)
    async with asgi_client(second) as client:
        held = (await client.get("/runs/t-6")).json()
        assert held["status"] == "awaiting_approval" and held["pending_gates"] == ["t-6#1"]
        (gate,) = (await client.get("/runs/t-6/gates")).json()
        assert gate["arguments"] == REFUND
        decided = await client.post("/runs/t-6/gates/t-6%231", json=approve(gate))
        assert decided.status_code == 200, decided.text
        record: RunRecord = second.state.runs.get("t-6")
        await record.wait()
        assert record.status == "completed" and record.result is not None
        assert record.result.text == "Refunded order 881."
        again = await client.post("/runs/t-6/gates/t-6%231", json=approve(gate))
        assert again.status_code == 409
    assert CALLS == {"model": 2, "issue_refund": 1}  # the first model call was served, not repeated
