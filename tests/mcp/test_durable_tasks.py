"""`jeeves mcp serve --database URL` on a real PostgreSQL: a served call is queued for a
`jeeves worker` (DBOS), not run by the server, so the task survives a SIGKILL of the server
while the worker holds it, and the gated tool runs once, on the worker, once approved through
a restarted server."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client import advertise
from mcp.shared.exceptions import MCPError

from jeeves.mcp.serve.tasks import EXTENSION
from tests.conftest import REPO, subprocess_env
from tests.mcp.test_task_notifications import TasksWithNotifications, frames_until, listen
from tests.mcp.test_tasks import _http, poll, rpc

pytest.importorskip("dbos", reason="durable workers need DBOS: pip install -e '.[dev,dbos]'")

pytestmark = pytest.mark.anyio

CLERK, SHOUTER = "tests.mcp.served:clerk", "tests.mcp.served:shouter"
FAST = ("--heartbeat", "0.2", "--takeover-after", "4", "--poll", "0.1")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def worker(database: str, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """`jeeves worker` serving both test targets, gating destructive tools; once it is ready."""
    command = [sys.executable, "-m", "jeeves", "worker", CLERK, SHOUTER, "--database", database, *extra]
    process = subprocess.Popen(
        [*command, "--ask", "destructive", *FAST],
        cwd=REPO,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if re.match(r"jeeves worker \S+ ready", line):
                break
        else:
            raise AssertionError(f"the worker exited before it was ready:\n{''.join(lines)}")
        yield process
    finally:
        process.terminate()
        process.communicate(timeout=30)


def serve(database: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "jeeves", "mcp", "serve", CLERK, SHOUTER, "--database", database, *extra]


@pytest.mark.postgres
async def test_a_queued_task_survives_sigkill_of_the_server_and_its_gated_tool_runs_once_on_the_worker(
    postgres_url: str, tmp_path: Path
) -> None:
    ran = tmp_path / "ran.txt"
    with worker(postgres_url) as runner:
        with _http(serve(postgres_url)) as (url, server):
            async with Client(url, extensions=[advertise(EXTENSION)]) as client:
                created = await rpc(
                    client,
                    "tools/call",
                    name="tests_mcp_served_clerk",
                    arguments={"task": str(ran), "session_id": "w-1"},
                )
                assert created["resultType"] == "task" and created["taskId"] == "w-1"
                waiting = await poll(client, "w-1", {"input_required", "completed", "failed"})
            assert waiting["status"] == "input_required", waiting
            server.kill()  # SIGKILL: the worker holds the run at its gate
            server.wait(timeout=30)
        assert not await anyio.Path(ran).exists()

        with _http(serve(postgres_url)) as (url, _server):
            async with Client(url, extensions=[advertise(EXTENSION)]) as client:
                again = await rpc(client, "tasks/get", taskId="w-1")  # a server that never saw the run
                assert again["status"] == "input_required", again
                [key] = again["inputRequests"]
                assert key in waiting["inputRequests"]
                answer = {"action": "accept", "content": {"approve": True}}
                await rpc(client, "tasks/update", taskId="w-1", inputResponses={key: answer})
                done = await poll(client, "w-1", {"completed", "failed", "cancelled"})
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"]["output"] == f"clerk: recorded in {ran}"
        assert await anyio.Path(ran).read_text() == f"{runner.pid}\n"  # once, and by the worker


@pytest.mark.postgres
async def test_a_plain_call_is_run_by_a_worker_and_answered_with_its_result(postgres_url: str) -> None:
    with worker(postgres_url), _http(serve(postgres_url)) as (url, _server):
        async with Client(url) as client:
            result = await rpc(
                client, "tools/call", name="tests_mcp_served_shouter", arguments={"task": "hi"}
            )
    assert result["structuredContent"]["output"] == "shouted: HI"
    assert result["structuredContent"]["status"] == "completed"


@pytest.mark.postgres
async def test_a_call_no_worker_serves_is_an_error_saying_to_start_one(postgres_url: str) -> None:
    with _http(serve(postgres_url)) as (url, _server):
        async with Client(url, extensions=[advertise(EXTENSION)]) as client:
            with pytest.raises(MCPError, match="no worker on .* serves target 'tests.mcp.served:shouter'"):
                await rpc(client, "tools/call", name="tests_mcp_served_shouter", arguments={"task": "hi"})


async def test_on_a_sqlite_database_a_worker_runs_the_task_and_a_listening_client_is_told_it_completed(
    tmp_path: Path,
) -> None:
    database, journal = f"sqlite:///{tmp_path / 'dbos.sqlite'}", str(tmp_path / "runs.db")
    tasks = TasksWithNotifications()
    with tasks.send, tasks.frames, worker(database, "--journal", journal) as runner:
        with _http(serve(database, "--journal", journal)) as (url, _):
            async with Client(url, extensions=[tasks]) as client:
                arguments = {"task": str(tmp_path / "ran.txt"), "session_id": "s-1"}
                created = await rpc(client, "tools/call", name="tests_mcp_served_clerk", arguments=arguments)
                assert created["taskId"] == "s-1"
                async with anyio.create_task_group() as group:
                    group.start_soon(listen, client, ["s-1"], {})
                    # changes a worker makes reach the listener: the gate, then the result
                    waiting = await frames_until(tasks.frames, "input_required")
                    [key] = waiting[-1]["inputRequests"]
                    answer = {"action": "accept", "content": {"approve": True}}
                    await rpc(client, "tasks/update", taskId="s-1", inputResponses={key: answer})
                    done = await frames_until(tasks.frames, "completed")
                    group.cancel_scope.cancel()
    assert done[-1]["result"]["structuredContent"]["output"] == f"clerk: recorded in {tmp_path / 'ran.txt'}"
    assert (tmp_path / "ran.txt").read_text() == f"{runner.pid}\n"
