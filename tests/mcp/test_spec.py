"""`[[mcp]]` tables in TOML specs: servers by command or URL, named by the agents that use them."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

import jeeves
from jeeves.errors import UserError
from jeeves.mcp import MCPServer
from jeeves.spec import build, parse_spec
from tests.conftest import jeeves_cli, offline_env


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _data(server: dict[str, Any], *, uses: tuple[str, ...] = ("time",)) -> dict[str, Any]:
    return {
        "instructions": "Tell the time.",
        "mcp_servers": list(uses),
        "mcp": [{"name": "time", **server}],
        "demo": {
            "script": {
                "default": [
                    {"tool_calls": [{"name": "get_current_time", "arguments": {"timezone": "UTC"}}]},
                    "It is now.",
                ]
            }
        },
    }


@pytest.mark.anyio
async def test_an_agent_of_a_spec_uses_the_mcp_server_it_names() -> None:
    data = _data({"command": [sys.executable, "-m", "mcp_server_time"], "modes": {"*": "network"}})
    arch, router = build(parse_spec(data), offline=True)
    (server,) = arch.toolsets  # type: ignore[attr-defined]
    assert isinstance(server, MCPServer) and server.name == "time" and server.modes == {"*": "network"}
    result = await jeeves.run(arch, "What time is it?", router=router)
    assert result.text == "It is now."


def test_bad_mcp_tables_are_problems_naming_them() -> None:
    with pytest.raises(UserError, match="needs either command"):
        parse_spec(_data({"command": ["x"], "url": "http://127.0.0.1:1/mcp"}))
    with pytest.raises(
        UserError, match=r"mcp_servers\[0\]: no \[\[mcp\]\] table is named 'clock' \(the spec has: time\)"
    ):
        build(parse_spec(_data({"command": ["x"]}, uses=("clock",))))


def test_jeeves_run_runs_the_example_spec_offline_against_the_real_server() -> None:
    env = offline_env()  # `python` in the spec is the one on PATH: this environment's
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    done = jeeves_cli("run", "examples/mcp_clock.toml", "--offline", "--json", env=env)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    completed = [e for e in events if e["type"] == "tool.completed"]
    assert completed and json.loads(completed[0]["result"])["timezone"] == "Asia/Tokyo"


def always(task: str, output: str) -> bool:
    """A success critic a dump can name by import path."""
    return True


def test_an_agents_mcp_servers_dump_to_mcp_tables_that_build_back_the_same_servers() -> None:
    from jeeves import Agent, Goal
    from jeeves.spec import dump, dumps

    clock = MCPServer.stdio(
        sys.executable, "-m", "mcp_server_time", name="clock", modes={"convert_*": "read_only"}
    )
    web = MCPServer.http("http://127.0.0.1:9/mcp", name="web", headers={"X-Team": "a"}, timeout_s=5)
    goal = Goal(Agent("Tell the time.", tools=[clock, web]), goal="the time is known", success=always)
    table = dump(Agent("Tell the time.", tools=[clock, web]))
    assert table["mcp_servers"] == ["clock", "web"]
    assert table["mcp"] == [
        {
            "name": "clock",
            "command": [sys.executable, "-m", "mcp_server_time"],
            "modes": {"convert_*": "read_only"},
        },
        {"name": "web", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Team": "a"}, "timeout_s": 5.0},
    ]
    rebuilt, _ = build(parse_spec(table))
    assert isinstance(rebuilt, Agent)
    assert [s.identity for s in rebuilt.toolsets] == [clock.identity, web.identity]
    assert dump(rebuilt) == table
    assert dump(goal)["agent"]["mcp_servers"] == ["clock", "web"] and len(dump(goal)["mcp"]) == 2
    assert "[[mcp]]" in dumps(goal)


def test_a_dump_refuses_two_different_servers_of_one_name() -> None:
    from jeeves import Agent, PlanExecute
    from jeeves.spec import dump

    first = MCPServer.stdio("uvx", "mcp-server-time", name="time")
    other = MCPServer.stdio("uvx", "mcp-server-git", name="time")
    arch = PlanExecute(Agent("a", tools=[first]), workers={"w": Agent("b", tools=[other])})
    with pytest.raises(UserError, match="two different MCP servers named 'time'"):
        dump(arch)
