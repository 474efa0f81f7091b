"""Gates cannot be confused from outside: strict gate ids, one decision per gate, a hash bound to the gate."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from jeeves.server import create_app
from tests.server.conftest import asgi_client
from tests.server.gated import CALLS, POLICY, refund_entry
from tests.server.test_gates_http import approve, gated_run

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _counts() -> None:
    CALLS.clear()


@pytest.mark.parametrize(
    "gate_id", ["r-1#01", "r-1#\u0661", "r-1#\u00b9", "r-1#+1", "r-1# 1", "r-1#1 ", "r-1#"]
)
async def test_a_gate_id_that_is_not_plain_digits_is_a_404_never_an_alias_of_gate_1(gate_id: str) -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        record = await gated_run(app, client, "r-1")
        gate = (await client.get("/runs/r-1/gates")).json()[0]
        assert gate["gate_id"] == "r-1#1"
        response = await client.post(f"/runs/r-1/gates/{quote(gate_id, safe='')}", json=approve(gate))
        assert response.status_code == 404, response.text
        assert "is not a gate id" in response.json()["error"]
        assert [g.gate_id for g in record.pending()] == ["r-1#1"] and CALLS["issue_refund"] == 0
        assert (await client.post("/runs/r-1/gates/r-1%231", json=approve(gate))).status_code == 200
        await record.wait()
    assert CALLS["issue_refund"] == 1


async def test_a_second_decision_right_after_the_first_is_a_409() -> None:
    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        record = await gated_run(app, client, "r-2")
        gate = (await client.get("/runs/r-2/gates")).json()[0]
        first = await client.post("/runs/r-2/gates/r-2%231", json=approve(gate))
        second = await client.post("/runs/r-2/gates/r-2%231", json=approve(gate, decision="deny", by="bob"))
        await record.wait()
    assert first.status_code == 200, first.text
    assert second.status_code == 409 and "already decided: approve by 'alice'" in second.json()["error"]
    assert CALLS["issue_refund"] == 1


async def test_the_hash_a_gate_shows_binds_its_id_and_tool_not_only_the_arguments() -> None:
    from jeeves.approvals.decide import arguments_hash, gate_hash

    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        record = await gated_run(app, client, "r-3")
        gate = (await client.get("/runs/r-3/gates")).json()[0]
        assert gate["arguments_hash"] == gate_hash("r-3#1", "issue_refund", gate["arguments"])
        assert gate["arguments_hash"] != gate_hash("r-4#1", "issue_refund", gate["arguments"])
        bare = approve(gate, arguments_hash=arguments_hash(gate["arguments"]))  # the old, arguments-only hash
        refused = await client.post("/runs/r-3/gates/r-3%231", json=bare)
        assert refused.status_code == 409 and CALLS["issue_refund"] == 0
        assert record.pending()
        record.cancel()


async def test_an_agui_resume_naming_an_alias_of_the_gate_is_a_404() -> None:
    from tests.server.test_agui_interrupts import agui_body, agui_run, answer

    app = create_app({"refund": refund_entry}, approvals=POLICY)
    async with asgi_client(app) as client:
        first = await agui_run(client, "/agui/refund", agui_body("a-1"))
        (interrupt,) = first[-1].outcome.interrupts
        for alias in ["a-1#01", "a-1#\u0661", "a-1#\u00b9"]:
            entry = {**answer(interrupt), "interruptId": alias}
            response = await client.post("/agui/refund", json=agui_body("x", [entry]))
            assert response.status_code == 404 and "is not a gate id" in response.json()["error"]
        assert CALLS["issue_refund"] == 0
        done = await agui_run(client, "/agui/refund", agui_body("y", [answer(interrupt)]))
        assert done[-1].result == "Refunded order 881."
