"""A server's sampling and elicitation requests (server-everything's trigger tools), answered
through the run: a model call of role `mcp_sampling`, an approval gate per elicitation."""

from __future__ import annotations

import pytest

import jeeves
from jeeves import Agent, MemoryJournal
from jeeves.approvals.decide import Approvals, Decision, PendingGate, record_decision
from jeeves.testing import Reply, ScriptedModel, call
from tests.mcp.conftest import everything_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _results(model: ScriptedModel) -> list[str]:
    agent_requests = [r for r in model.requests if r.role_path == ("agent",)]
    return [m.content or "" for m in agent_requests[-1].messages if m.role == "tool"]


@pytest.mark.anyio
async def test_a_sampling_request_is_a_journaled_model_call_of_role_mcp_sampling() -> None:
    journal = MemoryJournal()
    model = ScriptedModel(
        {
            "agent": [Reply(tool_calls=[call("trigger-sampling-request", {"prompt": "a haiku"})]), "done"],
            "mcp_sampling": ["An old silent pond"],
        }
    )
    result = await jeeves.run(
        Agent("t", tools=[everything_server()]), "go", model=model, journal=journal, session_id="s"
    )
    assert result.text == "done"
    (answered,) = _results(model)
    assert "An old silent pond" in answered
    sampling = [r for r in model.requests if r.role_path[-1:] == ("mcp_sampling",)]
    assert len(sampling) == 1 and "a haiku" in (sampling[0].messages[-1].content or "")
    assert sampling[0].session_id == "s__mcp_sampling_200"  # the tool call is step 2 of session s
    assert await journal.get_session("s__mcp_sampling_200") is not None


@pytest.mark.anyio
async def test_an_elicitation_is_an_approval_gate_whose_note_is_the_answer() -> None:
    asked: list[PendingGate] = []

    async def approve(gate: PendingGate) -> Decision:
        asked.append(gate)
        return Decision.approve(gate, by="ada", note='{"name": "Ada Lovelace"}')

    model = ScriptedModel([Reply(tool_calls=[call("trigger-elicitation-request")]), "done"])
    await jeeves.run(
        Agent("t", tools=[everything_server()]), "go", model=model, approver=approve, approvals=Approvals()
    )
    (gate,) = asked
    assert gate.tool == "everything.elicitation" and gate.arguments["tool"] == "trigger-elicitation-request"
    assert "Please provide inputs" in gate.arguments["message"]
    (answered,) = [m.content or "" for m in model.requests[-1].messages if m.role == "tool"]
    assert "Ada Lovelace" in answered


@pytest.mark.anyio
async def test_an_undecided_elicitation_suspends_the_run_and_a_resume_answers_it() -> None:
    journal = MemoryJournal()
    model = ScriptedModel([Reply(tool_calls=[call("trigger-elicitation-request")])])
    agent = Agent("t", tools=[everything_server()], model=model)
    first = await jeeves.run(agent, "go", journal=journal, session_id="e", approvals=Approvals())
    assert first.status == "awaiting_approval"
    (gate,) = first.pending
    assert gate.session_id == "e__mcp_elicitation_200"
    await record_decision(journal, gate.gate_id, Decision.deny(gate, by="bob"))
    finishing = ScriptedModel(["declined, fine"])
    done = await jeeves.resume(
        Agent("t", tools=[everything_server()], model=finishing), "e", journal=journal, approvals=Approvals()
    )
    assert done.text == "declined, fine"
    (answered,) = [m.content or "" for m in finishing.requests[-1].messages if m.role == "tool"]
    assert "declined" in answered
