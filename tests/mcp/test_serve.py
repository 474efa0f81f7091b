"""`jeeves mcp serve`, called by the `mcp` SDK's own client over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

import jeeves
from jeeves import Agent
from jeeves.journal.open import RunSummary, list_runs
from jeeves.mcp import MCPServer
from jeeves.mcp.serve import run_id
from jeeves.testing import Reply, ScriptedModel, call
from tests.conftest import REPO, jeeves_cli, subprocess_env
from tests.waiting import eventually


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _serve_command(journal: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "jeeves",
        "mcp",
        "serve",
        "tests.mcp.served:shouter",
        "tests.mcp.served:sleeper",
        "--journal",
        str(journal),
        *extra,
    ]


def _stdio(journal: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=_serve_command(journal), env=subprocess_env(), cwd=str(REPO)
    )


@pytest.mark.anyio
async def test_the_sdk_client_calls_a_served_architecture_with_progress_and_a_deterministic_session(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "runs.db"
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with Client(_stdio(journal)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["tests_mcp_served_shouter", "tests_mcp_served_sleeper"]
        assert "shouts the task" in (tools["tests_mcp_served_shouter"].description or "")
        result = await client.call_tool(
            "tests_mcp_served_shouter", {"task": "hello"}, progress_callback=on_progress
        )
        again = await client.call_tool("tests_mcp_served_shouter", {"task": "hello"})  # the same run, served
    assert again.structured_content == result.structured_content
    assert not result.is_error
    served = result.structured_content
    assert served is not None
    sid = run_id("tests_mcp_served_shouter", "hello")
    assert served["session_id"] == sid and served["status"] == "completed"
    assert served["output"] == "shouted: HELLO"
    messages = [m or "" for _, m in progress]
    assert all(sid in m for m in messages)
    assert any("tool.completed" in m for m in messages) and any("session.completed" in m for m in messages)
    assert [v for v, _ in progress] == sorted(v for v, _ in progress)
    runs = await list_runs(str(journal))
    assert [r.session_id for r in runs] == [sid]


@pytest.mark.anyio
async def test_a_call_jeeves_refuses_says_why_to_the_client(tmp_path: Path) -> None:
    async with Client(_stdio(tmp_path / "runs.db")) as client:
        refused = await client.call_tool("tests_mcp_served_shouter", {"task": "hi", "session_id": "../x"})
        fine = await client.call_tool("tests_mcp_served_shouter", {"task": "hi"})  # the server serves on
    assert refused.is_error and not fine.is_error
    [text] = [c.text for c in refused.content if c.type == "text"]
    assert text.startswith(
        "Error executing tool tests_mcp_served_shouter: UserError: Invalid session_id '../x'"
    )


@pytest.mark.anyio
async def test_a_cancelled_call_cancels_the_run(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    started = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if value > 0:  # an event of the run: its journal is open (progress 0 is sent before)
            started.set()

    async with Client(_stdio(journal)) as client:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                await client.call_tool(
                    "tests_mcp_served_sleeper",
                    {"task": "wait", "session_id": "slow-1"},
                    progress_callback=on_progress,
                )

            group.start_soon(call)
            with anyio.fail_after(30):
                await started.wait()
            group.cancel_scope.cancel()

        async def ended() -> list[RunSummary]:  # the server writes the journal in its own process
            runs = await list_runs(str(journal))
            return runs if runs and runs[0].status != "in_progress" else []

        runs = await eventually(ended, "the served run to end in the journal", within_s=20)
    assert runs[0].session_id == "slow-1"
    assert runs[0].status == "cancelled"


@contextmanager
def _http_server(journal: Path, *extra: str) -> Iterator[str]:
    """`jeeves mcp serve ... --http 127.0.0.1:0`; yields its MCP URL once it prints it, then
    stops it with SIGINT (it must exit cleanly)."""
    errors = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(
        [sys.executable, *_serve_command(journal, "--http", "127.0.0.1:0", *extra)],
        cwd=REPO,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    try:
        assert server.stdout is not None
        lines: list[str] = []
        for line in server.stdout:
            lines.append(line)
            found = re.search(r"serving MCP at (http://127\.0\.0\.1:\d+/mcp)", line)
            if found:
                yield found.group(1)
                break
        else:
            raise AssertionError(f"jeeves mcp serve did not report its address: {''.join(lines)}")
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
        errors.seek(0)
        err = errors.read()
        errors.close()
    assert server.returncode == 0, err


@pytest.mark.anyio
async def test_streamable_http_is_behind_the_host_guard_and_the_token(tmp_path: Path) -> None:
    with _http_server(tmp_path / "runs.db", "--token", "s3cret") as url:
        async with httpx.AsyncClient() as http:
            hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            no_token = await http.post(url, json=hello)
            assert no_token.status_code == 401
            foreign = await http.post(
                url, json=hello, headers={"Host": "evil.example", "Authorization": "Bearer s3cret"}
            )
            assert foreign.status_code == 400 and "evil.example" in foreign.text
            cross_site = await http.post(
                url, json=hello, headers={"Origin": "http://evil.example", "Authorization": "Bearer s3cret"}
            )
            assert cross_site.status_code == 403

        transport = _authorized(url, "s3cret")
        async with Client(transport) as client:
            result = await client.call_tool("tests_mcp_served_shouter", {"task": "over http"})
        # Both directions: a jeeves Agent whose tool is the served jeeves architecture.
        remote = MCPServer.http(url, name="team", headers={"Authorization": "Bearer s3cret"})
        model = ScriptedModel(
            [Reply(tool_calls=[call("tests_mcp_served_shouter", {"task": "via agent"})]), "relayed"]
        )
        relayed = await jeeves.run(Agent("Delegate.", tools=[remote], model=model), "go")
    assert result.structured_content is not None
    assert result.structured_content["output"] == "shouted: OVER HTTP"
    assert result.structured_content["session_id"] == run_id("tests_mcp_served_shouter", "over http")
    assert relayed.text == "relayed"
    answered = json.loads(model.requests[1].messages[-1].content or "")
    assert answered["output"] == "shouted: VIA AGENT" and answered["status"] == "completed"


def _authorized(url: str, token: str) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            streamable_http_client(url, http_client=http) as streams,
        ):
            yield streams

    return transport()


def test_bad_targets_and_addresses_are_one_line_errors() -> None:
    missing = jeeves_cli("mcp", "serve", "nosuchmod:thing")
    assert missing.returncode == 2 and missing.stderr.startswith("error: Cannot import 'nosuchmod'")
    address = jeeves_cli("mcp", "serve", "tests.mcp.served:shouter", "--http", "nonsense")
    assert address.returncode == 2
    assert address.stderr.strip() == "error: --http 'nonsense' is not HOST:PORT; e.g. --http 127.0.0.1:8765."
