"""The MCP Tasks extension (io.modelcontextprotocol/tasks, 2026-07-28) on `jeeves mcp serve`,
driven by the `mcp` SDK's client sending the extension's requests as raw JSON-RPC (the SDK
has no tasks support): a served run is a task whose id is its root session id, a gate makes
it `input_required`, and the task survives a SIGKILL of the server."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client import advertise
from mcp.shared.exceptions import MCPError
from mcp.types import Request
from pydantic import TypeAdapter

from jeeves.mcp.serve import run_id
from jeeves.mcp.serve.tasks import EXTENSION
from tests.conftest import REPO, subprocess_env
from tests.models.mock_openai import Behaviour, Responder, Text, Tool
from tests.models.mock_openai import serve as serve_openai
from tests.waiting import eventually

ANSWER = TypeAdapter(dict[str, Any])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Raw(Request[Any, Any]):
    """Any JSON-RPC request, for the methods the SDK does not know."""

    method: str
    params: dict[str, Any] | None = None


async def rpc(client: Client, method: str, **params: Any) -> dict[str, Any]:
    return await client.session.send_request(Raw(method=method, params=params), ANSWER)


async def poll(client: Client, task_id: str, until: set[str]) -> dict[str, Any]:
    """`tasks/get` until the task's status is one of `until` (polling is the extension's contract)."""

    async def settled() -> dict[str, Any] | None:
        task = await rpc(client, "tasks/get", taskId=task_id)
        return task if task["status"] in until else None

    found = await eventually(settled, f"task {task_id!r} to be {sorted(until)}", within_s=60)
    assert found is not None
    return found


def _serve(*targets: str, journal: Path, extra: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, "-m", "jeeves", "mcp", "serve", *targets, "--journal", str(journal), *extra]


@pytest.mark.anyio
async def test_a_task_augmented_call_is_a_task_named_by_the_session_and_polls_to_completed(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "runs.db"
    command = _serve("tests.mcp.served:shouter", journal=journal)
    stdio = StdioServerParameters(command=command[0], args=command[1:], env=subprocess_env(), cwd=str(REPO))
    async with Client(stdio, extensions=[advertise(EXTENSION)]) as client:
        created = await rpc(
            client, "tools/call", name="tests_mcp_served_shouter", arguments={"task": "hello"}
        )
        sid = run_id("tests_mcp_served_shouter", "hello")
        assert created["resultType"] == "task" and created["taskId"] == sid
        assert created["status"] in {"working", "completed"} and "result" not in created
        done = await poll(client, sid, {"completed", "failed", "cancelled"})
        with pytest.raises(MCPError, match="no jeeves run 'nope'"):
            await rpc(client, "tasks/get", taskId="nope")
    assert done["status"] == "completed" and done["resultType"] == "complete"
    assert done["result"]["structuredContent"]["output"] == "shouted: HELLO"
    assert done["result"]["isError"] is False


@pytest.mark.anyio
async def test_tasks_cancel_cancels_the_run_and_the_task_reads_cancelled(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    command = _serve("tests.mcp.served:sleeper", journal=journal)
    stdio = StdioServerParameters(command=command[0], args=command[1:], env=subprocess_env(), cwd=str(REPO))
    async with Client(stdio, extensions=[advertise(EXTENSION)]) as client:
        created = await rpc(
            client,
            "tools/call",
            name="tests_mcp_served_sleeper",
            arguments={"task": "wait", "session_id": "s-1"},
        )
        assert created["taskId"] == "s-1" and created["status"] == "working"
        ack = await rpc(client, "tasks/cancel", taskId="s-1")
        cancelled = await poll(client, "s-1", {"completed", "failed", "cancelled"})
    assert ack["resultType"] == "complete"
    assert cancelled["status"] == "cancelled" and "result" not in cancelled


@pytest.mark.anyio
async def test_a_client_without_the_extension_gets_a_plain_result_and_no_tasks(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    command = _serve("tests.mcp.served:shouter", journal=journal)
    stdio = StdioServerParameters(command=command[0], args=command[1:], env=subprocess_env(), cwd=str(REPO))
    async with Client(stdio) as client:
        plain = await rpc(client, "tools/call", name="tests_mcp_served_shouter", arguments={"task": "hi"})
        with pytest.raises(MCPError, match="Missing required client capability") as refused:
            await rpc(client, "tasks/get", taskId=run_id("tests_mcp_served_shouter", "hi"))
    assert plain["structuredContent"]["output"] == "shouted: HI" and "taskId" not in plain
    assert refused.value.error.code == -32021


GATED_SPEC = """
type = "agent"
role = "clerk"
description = "Records a call; every record waits for approval."
instructions = "Record the call."
tools = ["tests.mcp.served:record_call"]

[approvals]
auto = ["read_only"]

[models]
default = {{ model = "openai/gpt-4o-mini", params = {{ api_base = "{base_url}" }} }}
"""


def clerk(ran: Path) -> Responder:
    """The clerk's model (a mock OpenAI server, so a resumed run asks it again): record, then report."""

    def respond(body: dict[str, Any]) -> Behaviour:
        if any(m.get("role") == "tool" for m in body["messages"]):
            return Text("recorded once")
        return Tool("record_call", json.dumps({"path": str(ran)}))

    return respond


@contextmanager
def _http(command: list[str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    errors = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(
        [*command, "--http", "127.0.0.1:0"],
        cwd=REPO,
        env=subprocess_env() | {"OPENAI_API_KEY": "sk-test"},
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:
            found = re.search(r"serving MCP at (http://127\.0\.0\.1:\d+/mcp)", line)
            if found:
                yield found.group(1), server
                break
        else:
            errors.seek(0)
            raise AssertionError(f"jeeves mcp serve did not start: {errors.read()}")
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
        errors.close()


@pytest.mark.anyio
async def test_a_gated_task_survives_sigkill_and_approved_through_the_task_runs_the_tool_once(
    tmp_path: Path,
) -> None:
    journal, ran = tmp_path / "runs.db", tmp_path / "ran.txt"
    spec = tmp_path / "clerk.toml"
    with serve_openai(clerk(ran)) as model:
        spec.write_text(GATED_SPEC.format(base_url=model.base_url))
        await _gated_run_across_a_sigkill(_serve(str(spec), journal=journal), ran)
    assert len(model.requests) == 2  # one call before the gate, one after: none repeated


async def _gated_run_across_a_sigkill(command: list[str], ran: Path) -> None:

    with _http(command) as (url, server):
        async with Client(url, extensions=[advertise(EXTENSION)]) as client:
            created = await rpc(
                client, "tools/call", name="clerk", arguments={"task": "record", "session_id": "t-1"}
            )
            assert created["resultType"] == "task" and created["taskId"] == "t-1"
            waiting = await poll(client, "t-1", {"input_required", "completed", "failed"})
        assert waiting["status"] == "input_required", waiting
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
    assert not await anyio.Path(ran).exists()

    with _http(command) as (url, _server):
        async with Client(url, extensions=[advertise(EXTENSION)]) as client:
            again = await rpc(client, "tasks/get", taskId="t-1")  # a server that never saw the run
            assert again["status"] == "input_required"
            [(key, request)] = again["inputRequests"].items()
            assert key in waiting["inputRequests"]  # the same gate, the same key
            assert request["method"] == "elicitation/create" and "record_call" in request["params"]["message"]
            ack = await rpc(
                client,
                "tasks/update",
                taskId="t-1",
                inputResponses={key: {"action": "accept", "content": {"approve": True}}},
            )
            assert ack["resultType"] == "complete"
            done = await poll(client, "t-1", {"completed", "failed", "cancelled"})
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"]["output"] == "recorded once"
    assert await anyio.Path(ran).read_text() == "ran\n"  # the gated tool ran exactly once


@pytest.mark.anyio
async def test_a_declined_elicitation_denies_the_gate_and_the_tool_never_runs(tmp_path: Path) -> None:
    journal, ran, spec = tmp_path / "runs.db", tmp_path / "ran.txt", tmp_path / "clerk.toml"
    with serve_openai(clerk(ran)) as model:
        spec.write_text(GATED_SPEC.format(base_url=model.base_url))
        command = _serve(str(spec), journal=journal)
        env = subprocess_env() | {"OPENAI_API_KEY": "sk-test"}
        stdio = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO))
        async with Client(stdio, extensions=[advertise(EXTENSION)]) as client:
            await rpc(client, "tools/call", name="clerk", arguments={"task": "record", "session_id": "d-1"})
            waiting = await poll(client, "d-1", {"input_required", "completed", "failed"})
            [key] = waiting["inputRequests"]
            await rpc(client, "tasks/update", taskId="d-1", inputResponses={"nope#9": {"action": "accept"}})
            still = await rpc(client, "tasks/get", taskId="d-1")  # an unknown key is ignored
            assert still["status"] == "input_required"
            await rpc(client, "tasks/update", taskId="d-1", inputResponses={key: {"action": "decline"}})
            done = await poll(client, "d-1", {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    assert not await anyio.Path(ran).exists()  # denied: never ran
    denied = [m for m in model.requests[-1]["messages"] if m.get("role") == "tool"]
    assert denied and "den" in str(denied[0]["content"]).lower()
