"""A server that dies, hangs, breaks the protocol, answers too much or changes its schema: a typed
error the model (or the user) reads, and the run keeps its work."""

from __future__ import annotations

from pathlib import Path

import pytest

import jeeves
from jeeves import Agent, MemoryJournal
from jeeves.approvals.decide import Approvals, Decision, record_decision
from jeeves.errors import ReplayDivergence
from jeeves.testing import Reply, ScriptedModel, call
from tests.mcp.conftest import faulty_server, filesystem_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _results(model: ScriptedModel) -> list[str]:
    return [m.content or "" for m in model.requests[-1].messages if m.role == "tool"]


@pytest.mark.anyio
async def test_a_server_that_dies_mid_call_is_an_error_result_and_the_next_call_reconnects() -> None:
    model = ScriptedModel(
        [Reply(tool_calls=[call("die")]), Reply(tool_calls=[call("echo", {"text": "still here"})]), "ok"]
    )
    result = await jeeves.run(Agent("t", tools=[faulty_server()], model=model), "go")
    assert result.text == "ok"
    died, echoed = _results(model)
    assert died.startswith("MCP server 'faulty' tool 'die' failed: the server's connection broke")
    assert echoed == "still here"


@pytest.mark.anyio
async def test_a_hanging_call_times_out_and_the_run_goes_on() -> None:
    model = ScriptedModel([Reply(tool_calls=[call("hang")]), "gave up"])
    result = await jeeves.run(Agent("t", tools=[faulty_server(timeout_s=3)], model=model), "go")
    assert result.text == "gave up"
    assert _results(model) == [
        "MCP server 'faulty' tool 'hang' did not answer within 3 s; the call was abandoned."
    ]


@pytest.mark.anyio
async def test_a_malformed_json_rpc_result_is_an_error_result() -> None:
    model = ScriptedModel([Reply(tool_calls=[call("malformed")]), "noted"])
    result = await jeeves.run(Agent("t", tools=[faulty_server(timeout_s=20)], model=model), "go")
    assert result.text == "noted"
    (text,) = _results(model)
    assert text.startswith("MCP server 'faulty' tool 'malformed' sent a malformed result")


@pytest.mark.anyio
async def test_a_result_too_large_is_truncated_with_a_notice_in_the_journal_too(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 50_000)
    journal = MemoryJournal()
    model = ScriptedModel(
        [Reply(tool_calls=[call("read_text_file", {"path": str(tmp_path / "big.txt")})]), "ok"]
    )
    agent = Agent("t", tools=[filesystem_server(tmp_path, max_result_chars=1000)], model=model)
    await jeeves.run(agent, "read", journal=journal, session_id="b")
    (text,) = _results(model)
    shown, notice = text.split("\n", 1)
    assert shown == "x" * 1000
    assert notice.startswith("[truncated: MCP server 'filesystem' tool 'read_text_file' returned ")
    assert "only the first 1000 are shown (max_result_chars=1000)" in notice
    step = await journal.get_step("b", 2)
    assert step is not None and step.result is not None and len(step.result["text"]) < 1300


@pytest.mark.anyio
async def test_a_tool_whose_schema_changed_before_a_resume_is_a_replay_divergence_naming_it() -> None:
    journal = MemoryJournal()
    script = [Reply(tool_calls=[call("echo", {"text": "hi"})]), "done"]
    first = await jeeves.run(
        Agent("t", tools=[faulty_server(mode="destructive")], model=ScriptedModel(script)),
        "go",
        journal=journal,
        session_id="s",
        approvals=Approvals(),
    )
    (gate,) = first.pending
    await record_decision(journal, gate.gate_id, Decision.approve(gate, by="alice"))
    upgraded = faulty_server(mode="destructive", env={"JEEVES_FAULTY_SCHEMA": "2"})
    with pytest.raises(
        ReplayDivergence, match=r"MCP server 'faulty' changed tool\(s\) 'echo' since session 's'"
    ):
        await jeeves.resume(
            Agent("t", tools=[upgraded], model=ScriptedModel(["done"])),
            "s",
            journal=journal,
            approvals=Approvals(),
        )
