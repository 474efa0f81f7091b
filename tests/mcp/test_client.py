"""An MCP server's tools inside an Agent: journaled calls, offline replay, resume, several servers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import jeeves
from jeeves import Agent, MemoryJournal
from jeeves.errors import ProviderError, UserError
from jeeves.mcp import MCPServer, MCPServerError
from jeeves.messages import ModelRequest
from jeeves.testing import FunctionModel, Reply, ScriptedModel, call
from tests.mcp.conftest import git, git_server, time_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's stdio client is tested on asyncio; the kernel's trio runs cover the rest


NOWHERE = "/nonexistent/jeeves-mcp-test"
"""A working directory no process can start in: a server given it is certainly absent."""


def _clock(model: ScriptedModel, server: MCPServer) -> tuple[Agent, ScriptedModel]:
    return Agent("Tell the time.", tools=[server], model=model), model


async def _steps(journal: MemoryJournal, session_id: str) -> list[dict[str, object]]:
    steps = [await journal.get_step(session_id, i) for i in await journal.step_indices(session_id)]
    return [{"kind": s.kind, "name": s.name, "request": s.request, "result": s.result} for s in steps if s]


@pytest.mark.anyio
async def test_a_call_is_a_journaled_step_naming_server_and_tool_and_replays_without_the_server() -> None:
    journal = MemoryJournal()
    model = ScriptedModel([Reply(tool_calls=[call("get_current_time", {"timezone": "UTC"})]), "It is late."])
    agent, _ = _clock(model, time_server())
    result = await jeeves.run(agent, "What time is it?", journal=journal, session_id="t")
    assert result.text == "It is late."
    assert [t.name for t in model.requests[0].tools] == ["get_current_time", "convert_time"]
    answered = model.requests[1].messages[-1].content or ""
    assert json.loads(answered)["timezone"] == "UTC"

    steps = await _steps(journal, "t")
    assert [(s["kind"], s["name"]) for s in steps] == [
        ("function", "mcp.tools:time"),
        ("model", ""),
        ("tool", "get_current_time"),
        ("model", ""),
    ]
    request = steps[2]["request"]
    assert isinstance(request, dict)
    assert request["server"] == "time" and request["transport"] == "stdio"
    assert request["tool"] == "get_current_time" and json.loads(request["arguments"]) == {"timezone": "UTC"}
    assert request["command"][1:3] == ["-m", "mcp_server_time"]

    absent = time_server(cwd=NOWHERE)  # same identity; would fail to start if anything asked it
    replayed = await jeeves.run(
        Agent("Tell the time.", tools=[absent]),
        "What time is it?",
        journal=journal,
        session_id="t",
        mode="replay",
    )
    assert replayed.text == "It is late."


@pytest.mark.anyio
async def test_a_completed_call_is_never_repeated_when_a_failed_run_resumes_without_the_server(
    repo: Path,
) -> None:
    (repo / "notes.txt").write_text("todo\n")
    git(repo, "add", "notes.txt")
    journal = MemoryJournal()
    commit = call("git_commit", {"repo_path": str(repo), "message": "add notes"})

    def failing(request: ModelRequest) -> Reply:
        if len(request.messages) > 2:  # after the tool's result: the provider is down
            raise ProviderError("the provider is down")
        return Reply(tool_calls=[commit])

    agent = Agent("Commit the staged work.", tools=[git_server(repo)], model=FunctionModel(failing))
    with pytest.raises(ProviderError):
        await jeeves.run(agent, "commit", journal=journal, session_id="g")
    assert git(repo, "rev-list", "--count", "HEAD") == "2"

    finishing = ScriptedModel(["Committed."])
    again = Agent("Commit the staged work.", tools=[git_server(repo, cwd=NOWHERE)], model=finishing)
    resumed = await jeeves.resume(again, "g", journal=journal)
    assert resumed.text == "Committed."
    assert git(repo, "rev-list", "--count", "HEAD") == "2"  # the commit ran once
    assert git(repo, "log", "-1", "--format=%s") == "add notes"


@pytest.mark.anyio
async def test_two_servers_at_once_with_colliding_names_are_namespaced(repo: Path) -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    call("get_current_time", {"timezone": "UTC"}),
                    call("clock_get_current_time", {"timezone": "Europe/Paris"}),
                    call("git_status", {"repo_path": str(repo)}),
                ]
            ),
            "done",
        ]
    )
    agent = Agent(
        "Use the tools.", tools=[time_server(), time_server(name="clock"), git_server(repo)], model=model
    )
    await jeeves.run(agent, "go")
    names = [t.name for t in model.requests[0].tools]
    assert names[:4] == ["get_current_time", "convert_time", "clock_get_current_time", "clock_convert_time"]
    assert "git_status" in names
    results = [m for m in model.requests[1].messages if m.role == "tool"]
    assert json.loads(results[0].content or "")["timezone"] == "UTC"
    assert json.loads(results[1].content or "")["timezone"] == "Europe/Paris"
    assert "On branch main" in (results[2].content or "")


@pytest.mark.anyio
async def test_one_connection_serves_several_runs_inside_async_with() -> None:
    server = time_server()
    async with server:
        for sid in ("a", "b"):
            model = ScriptedModel([Reply(tool_calls=[call("get_current_time", {"timezone": "UTC"})]), "ok"])
            await jeeves.run(Agent("t", tools=[server], model=model), "go", session_id=sid)
            assert '"timezone": "UTC"' in (model.requests[1].messages[-1].content or "")
        connection = server.connection()
        assert connection.is_open
    assert not connection.is_open


@pytest.mark.anyio
async def test_a_server_that_cannot_start_is_a_typed_error_naming_it_and_the_run_keeps_its_work() -> None:
    journal = MemoryJournal()
    broken = MCPServer.stdio("jeeves-no-such-mcp-server-binary", name="ghost", startup_timeout_s=20)
    agent = Agent("t", tools=[broken], model=ScriptedModel(["unused"]))
    with pytest.raises(MCPServerError, match=r"MCP server 'ghost' could not be started.*Check its command"):
        await jeeves.run(agent, "go", journal=journal, session_id="x")
    assert (
        await journal.step_indices("x") == []
    )  # nothing recorded for the failed start: a resume tries again


def test_bad_configuration_is_a_one_line_user_error() -> None:
    with pytest.raises(UserError, match=r"needs an http\(s\) URL, got 'ftp://x'"):
        MCPServer.http("ftp://x")
    with pytest.raises(UserError, match=r"'sometimes' is not an approval mode"):
        MCPServer.stdio("x", modes={"write_file": "sometimes"})  # type: ignore[dict-item]
    with pytest.raises(UserError, match="Invalid MCP server name 'Bad Name'"):
        MCPServer.stdio("x", name="Bad Name")
    with pytest.raises(UserError, match="used outside a scope"):
        MCPServer.stdio(sys.executable).connection()


def test_default_names_come_from_the_package_the_command_runs() -> None:
    assert (
        MCPServer.stdio("npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp").name == "filesystem"
    )
    assert MCPServer.stdio(sys.executable, "-m", "mcp_server_time").name == "time"
    assert MCPServer.stdio("uvx", "mcp-server-git").name == "git"
    entry = "/x/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    assert MCPServer.stdio("node", entry, "stdio").name == "everything"
    assert MCPServer.stdio(sys.executable, "tests/mcp/faulty_server.py").name == "faulty_server"
    assert MCPServer.http("http://127.0.0.1:8765/mcp").name == "http_127_0_0_1"
