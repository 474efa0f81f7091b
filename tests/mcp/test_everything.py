"""`@modelcontextprotocol/server-everything` over stdio and Streamable HTTP: text, images,
structured content and a call that outlasts its timeout."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import jeeves
from jeeves import Agent
from jeeves.approvals.decide import Approvals
from jeeves.mcp import MCPServer
from jeeves.testing import Reply, ScriptedModel, call
from tests.mcp.conftest import LOOPBACK, everything_server, node_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _results(model: ScriptedModel) -> list[str]:
    return [m.content or "" for m in model.requests[-1].messages if m.role == "tool"]


async def _calls(server: MCPServer) -> list[str]:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    call("echo", {"message": "hi"}),
                    call("get-tiny-image"),
                    call("get-sum", {"a": 2, "b": 3}),
                ]
            ),
            Reply(tool_calls=[call("trigger-long-running-operation", {"duration": 30, "steps": 3})]),
            "ok",
        ]
    )
    await jeeves.run(Agent("t", tools=[server], model=model), "go")
    first = [m.content or "" for m in model.requests[1].messages if m.role == "tool"]
    return [*first, *_results(model)[3:]]


@pytest.mark.anyio
async def test_server_everything_over_stdio() -> None:
    echo, image, total, slow = await _calls(everything_server(timeout_s=5))
    assert echo == "Echo: hi"
    assert re.search(r"\[image: image/png, \d+ bytes, not shown\]", image)
    assert "5" in total
    assert slow.endswith("did not answer within 5 s; the call was abandoned.")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _everything_http() -> Iterator[str]:
    """server-everything's Streamable HTTP transport on a loopback port (a preload makes it
    bind 127.0.0.1); yields its URL once it says it listens."""
    entry = node_server("server-everything")
    port = _free_port()
    errors = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(
        ["node", "--import", LOOPBACK.as_uri(), str(entry), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=errors,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        for line in server.stderr:
            if f"listening on port {port}" in line:
                break
        else:
            raise AssertionError("server-everything did not start listening")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.communicate(timeout=30)  # drains and closes its stderr
        errors.close()


@pytest.mark.anyio
async def test_server_everything_over_streamable_http() -> None:
    with _everything_http() as url:
        echo, image, total, slow = await _calls(MCPServer.http(url, name="everything", timeout_s=5))
    assert echo == "Echo: hi"
    assert re.search(r"\[image: image/png, \d+ bytes, not shown\]", image)
    assert "5" in total
    assert slow.endswith("did not answer within 5 s; the call was abandoned.")


@pytest.mark.anyio
async def test_resources_and_prompts_are_readable_through_two_read_only_tools() -> None:
    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    call(
                        "everything_read_resource", {"uri": "demo://resource/static/document/architecture.md"}
                    ),
                    call("everything_get_prompt", {"name": "args-prompt", "arguments": {"city": "Paris"}}),
                ]
            ),
            "ok",
        ]
    )
    asked: list[str] = []

    async def approver(gate: Any) -> Any:
        asked.append(gate.tool)
        raise AssertionError("read_only tools are not gated")

    server = everything_server(resources=True)
    await jeeves.run(Agent("t", tools=[server], model=model), "go", approvals=Approvals(), approver=approver)
    document, prompt = _results(model)
    assert document.startswith("# Everything Server – Architecture")
    assert "Paris" in prompt and prompt.startswith("user: ")
    assert asked == []
