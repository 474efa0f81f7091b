"""A Goal keeps its agent's MCP toolsets: the goal's agent is a copy with the goal's tools
added, and an MCP server given to the agent is among them."""

from __future__ import annotations

import pytest

import jeeves
from jeeves import Agent, Goal, MemoryJournal
from jeeves.testing import Reply, ScriptedModel, call
from tests.mcp.conftest import time_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_goals_agent_calls_the_tools_of_its_mcp_server() -> None:
    model = ScriptedModel(
        {"agent": [Reply(tool_calls=[call("get_current_time", {"timezone": "UTC"})]), "I read the time."]}
    )
    goal = Goal(
        Agent("Tell the time.", tools=[time_server()], max_turns=4),
        goal="the time is known",
        success=lambda task, output: "time" in output,
    )
    journal = MemoryJournal()
    result = await jeeves.run(goal, "What time is it?", model=model, journal=journal, session_id="g")
    model.assert_consumed()
    assert result.stop_reason == "verified", result
    offered = [t.name for t in model.requests[0].tools]
    assert "get_current_time" in offered and "claim_complete" in offered
    session = "g__agent_0"
    steps = [await journal.get_step(session, i) for i in await journal.step_indices(session)]
    assert any(s is not None and s.kind == "tool" and s.name == "get_current_time" for s in steps)
