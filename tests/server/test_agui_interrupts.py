"""AG-UI interrupts: a gate ends the AG-UI run with outcome `interrupt`; `resume` decides it and continues.

In-process (the package's own types and encoder, asyncio and trio) and with the real
@ag-ui/client under node (marked `node`).
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from jeeves.server import create_app
from jeeves.server.runs import RunRecord
from tests.server.conftest import asgi_client, live_server, messages
from tests.server.gated import CALLS, POLICY, REFUND, refund_entry, team_entry
from tests.server.test_agui import AGUI, check_well_formed
from tests.server.test_agui_client import CLIENT, node  # noqa: F401 - the node fixture

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _counts() -> None:
    CALLS.clear()


def agui_body(run_id: str, resume: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "threadId": "thread-1",
        "runId": run_id,
        "messages": [{"id": "m1", "role": "user", "content": "Refund order 881"}],
    }
    if resume is not None:
        body["resume"] = resume
    return body


async def agui_run(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> list[Any]:
    response = await client.post(path, json=body, headers={"Accept": "text/event-stream"})
    assert response.status_code == 200, response.text
    return [AGUI.validate_python(json.loads(m.data)) for m in messages(response.text)]


def answer(interrupt: Any, decision: str = "approve", **extra: Any) -> dict[str, Any]:
    payload = {
        "decision": decision,
        "arguments_hash": interrupt.response_schema["properties"]["arguments_hash"]["const"],
    }
    return {"interruptId": interrupt.id, "status": "resolved", "payload": {**payload, **extra}}


async def test_a_gate_ends_the_agui_run_with_an_interrupt_and_resume_finishes_it() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY.model_copy(update={"gate_ttl_s": 600.0}))
    async with asgi_client(app) as client:
        first = await agui_run(client, "/agui/refund", agui_body("t-1"))
        check_well_formed(first)
        finished = first[-1]
        assert finished.type == "RUN_FINISHED" and finished.outcome.type == "interrupt"
        (interrupt,) = finished.outcome.interrupts
        assert interrupt.id == "t-1#1" and interrupt.reason == "tool_approval"
        assert interrupt.tool_call_id == "t-1/c1" and interrupt.subagent_run_id is None
        starts = [e for e in first if e.type == "TOOL_CALL_START"]
        assert [s.tool_call_id for s in starts] == ["t-1/c1"]  # the interrupt names a call the client has
        assert interrupt.response_schema["required"] == ["decision", "arguments_hash", "by"]
        assert interrupt.metadata["jeeves"]["arguments"] == REFUND
        assert datetime.fromisoformat(interrupt.expires_at).timestamp() > 0
        record: RunRecord = app.state.runs.get("t-1")
        assert record.status == "running" and [g.gate_id for g in record.pending()] == ["t-1#1"]
        assert CALLS == {"model": 1}

        second = await agui_run(
            client, "/agui/refund", agui_body("t-1-resume", [answer(interrupt, by="carol")])
        )
        check_well_formed(second, first)
        assert second[0].type == "RUN_STARTED" and second[0].run_id == "t-1-resume"
        assert second[-1].type == "RUN_FINISHED" and second[-1].outcome is None
        assert second[-1].result == "Refunded order 881."
        customs = [e.value for e in second if e.type == "CUSTOM" and e.name == "jeeves.approval.decided"]
        assert [(c["decision"], c["by"]) for c in customs] == [("approve", "carol")]
        results = [e for e in second if e.type == "TOOL_CALL_RESULT"]
        assert [(r.tool_call_id, r.content) for r in results] == [("t-1/c1", "refunded 12.5 on order 881")]
        assert not [e for e in second if e.type == "TOOL_CALL_START"]  # not sent again
    assert CALLS == {"model": 2, "issue_refund": 1}


async def test_a_gate_in_a_worker_suspends_that_subagent() -> None:
    app = create_app({"team": team_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        first = await agui_run(client, "/agui/team", agui_body("t-2"))
        check_well_formed(first)
        (interrupt,) = first[-1].outcome.interrupts
        assert interrupt.id == "t-2__refunds_0#1" and interrupt.subagent_run_id == "t-2__refunds_0"
        assert interrupt.tool_call_id == "t-2__refunds_0/c1"
        (suspended,) = [e for e in first if e.type == "SUBAGENT_FINISHED"]
        assert suspended.subagent_run_id == "t-2__refunds_0" and suspended.outcome.type == "suspended"
        assert suspended.outcome.interrupt_ids == ["t-2__refunds_0#1"]

        second = await agui_run(client, "/agui/team", agui_body("t-2b", [answer(interrupt)]))
        check_well_formed(second, first)
        reopened = [e for e in second if e.type == "SUBAGENT_STARTED"]
        assert [e.subagent_run_id for e in reopened] == ["t-2__refunds_0"]  # the same invocation continues
        assert (
            reopened[0].parent_tool_call_id
            == first[[e.type for e in first].index("SUBAGENT_STARTED")].parent_tool_call_id
        )
        ended = [e for e in second if e.type == "SUBAGENT_FINISHED"]
        assert [(e.subagent_run_id, e.outcome) for e in ended] == [("t-2__refunds_0", None)]
        assert second[-1].result == "Done: order 881 is refunded."
    assert CALLS["issue_refund"] == 1


async def test_a_cancelled_interrupt_denies_the_gate_and_the_model_reads_it() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        first = await agui_run(client, "/agui/refund", agui_body("t-3"))
        (interrupt,) = first[-1].outcome.interrupts
        cancelled = {"interruptId": interrupt.id, "status": "cancelled"}
        second = await agui_run(client, "/agui/refund", agui_body("t-3b", [cancelled]))
        check_well_formed(second, first)
        assert second[-1].result.startswith("Could not refund: Denied by ag-ui")
    assert CALLS.get("issue_refund", 0) == 0


async def test_bad_resume_input_is_refused_and_the_gate_keeps_waiting() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        first = await agui_run(client, "/agui/refund", agui_body("t-4"))
        (interrupt,) = first[-1].outcome.interrupts
        wrong = answer(interrupt)
        wrong["payload"]["arguments_hash"] = "f" * 64
        assert (await client.post("/agui/refund", json=agui_body("x1", [wrong]))).status_code == 409
        unknown = {**answer(interrupt), "interruptId": "t-4#7"}
        assert (await client.post("/agui/refund", json=agui_body("x2", [unknown]))).status_code == 404
        nobody = {**answer(interrupt), "interruptId": "zz#1"}
        assert (await client.post("/agui/refund", json=agui_body("x3", [nobody]))).status_code == 404
        no_payload = {"interruptId": interrupt.id, "status": "resolved"}
        refused = await client.post("/agui/refund", json=agui_body("x4", [no_payload]))
        assert refused.status_code == 422 and "responseSchema" in refused.json()["error"]
        record: RunRecord = app.state.runs.get("t-4")
        assert [g.gate_id for g in record.pending()] == ["t-4#1"]
        done = await agui_run(client, "/agui/refund", agui_body("x5", [answer(interrupt)]))
        assert done[-1].result == "Refunded order 881."


async def test_resume_after_a_server_restart_skips_what_the_client_has(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    first_app = create_app({"refund": refund_entry}, approvals=POLICY, journal=journal)
    async with asgi_client(first_app) as client:
        first = await agui_run(client, "/agui/refund", agui_body("t-5"))
    (interrupt,) = first[-1].outcome.interrupts
    second_app = create_app({"refund": refund_entry}, approvals=POLICY, journal=journal)
    async with asgi_client(second_app) as client:
        second = await agui_run(client, "/agui/refund", agui_body("t-5b", [answer(interrupt)]))
    check_well_formed(second, first)
    assert second[-1].result == "Refunded order 881."
    kinds = [e.type for e in second]
    assert "TOOL_CALL_START" not in kinds  # the replayed model turn is the client's already
    texts = [e.delta for e in second if e.type == "TEXT_MESSAGE_CONTENT"]
    assert "".join(texts).strip() == "Refunded order 881."
    assert CALLS == {"model": 2, "issue_refund": 1}


# -- the real TypeScript client -------------------------------------------------------------


def run_resume_client(node_bin: str, url: str, run_id: str) -> tuple[int, list[dict[str, Any]]]:
    done = subprocess.run(
        [node_bin, "interrupt.mjs", url, "Refund order 881", run_id],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stderr
    return done.returncode, lines


@pytest.mark.node
def test_the_typescript_client_sees_the_interrupt_and_resumes_the_run(node: str) -> None:  # noqa: F811
    app: Starlette = create_app(
        {"team": team_entry}, approvals=POLICY.model_copy(update={"gate_ttl_s": 600.0})
    )
    with live_server(app) as server:
        code, lines = run_resume_client(node, f"{server.url}/agui/team", "node-gate")
    outcome = lines[-1]
    assert code == 0 and outcome["kind"] == "result", outcome
    interrupted = next(line for line in lines if line["kind"] == "interrupt")
    (pending,) = interrupted["pendingInterrupts"]
    assert pending["id"] == "node-gate__refunds_0#1" and pending["toolCallId"] == "node-gate__refunds_0/c1"
    assert pending["subagentRunId"] == "node-gate__refunds_0" and not interrupted["expired"]
    runs = [[e for e in line["events"]] for line in lines if line["kind"] in ("interrupt", "result")]
    assert runs[0][-1]["outcome"]["type"] == "interrupt" and runs[1][-1]["type"] == "RUN_FINISHED"
    assert outcome["result"] == "Done: order 881 is refunded." and outcome["pendingInterrupts"] == []
    results = [m for m in outcome["messages"] if m["role"] == "tool" and m["toolCallId"].endswith("/c1")]
    assert [r["content"] for r in results] == ["refunded 12.5 on order 881"]
    assert CALLS["issue_refund"] == 1
