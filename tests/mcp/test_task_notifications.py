"""`notifications/tasks` on `jeeves mcp serve`: a client of the `mcp` SDK that declares the tasks
extension and listens for a task id (`subscriptions/listen` with `taskIds`) is sent the task's
state at once and on each status change, and waits for those frames instead of polling."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import Client, StdioServerParameters
from mcp.client import advertise
from mcp.client.extension import ClientExtension, NotificationBinding
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict

from jeeves.mcp.serve import run_id
from jeeves.mcp.serve.tasks import EXTENSION
from tests.conftest import REPO, subprocess_env
from tests.mcp.test_tasks import GATED_SPEC, _serve, clerk, rpc
from tests.models.mock_openai import serve as serve_openai

ORDER = {"working": 0, "input_required": 0, "completed": 1, "failed": 1, "cancelled": 1}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class TaskFrame(BaseModel):
    """A `notifications/tasks` frame's params: a DetailedTask and the listen stream's `_meta`."""

    model_config = ConfigDict(extra="allow")
    taskId: str
    status: str


class TasksWithNotifications(ClientExtension):
    """The tasks extension on the client, observing `notifications/tasks` into a stream."""

    identifier = EXTENSION

    def __init__(self) -> None:
        self.send, self.frames = anyio.create_memory_object_stream[dict[str, Any]](100)

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return [NotificationBinding(method="notifications/tasks", params_type=TaskFrame, handler=self._got)]

    async def _got(self, params: TaskFrame) -> None:
        await self.send.send(params.model_dump())


@pytest.fixture
def tasks() -> Iterator[TasksWithNotifications]:
    extension = TasksWithNotifications()
    with extension.send, extension.frames:
        yield extension


async def next_frame(frames: MemoryObjectReceiveStream[dict[str, Any]]) -> dict[str, Any]:
    with anyio.fail_after(60):
        return await frames.receive()


async def frames_until(
    frames: MemoryObjectReceiveStream[dict[str, Any]], status: str
) -> list[dict[str, Any]]:
    seen = [await next_frame(frames)]
    while seen[-1]["status"] != status:
        assert ORDER[seen[-1]["status"]] == 0, seen  # nothing after a terminal status
        seen.append(await next_frame(frames))
    return seen


async def listen(client: Client, task_ids: list[str], acked: dict[str, Any]) -> None:
    """Hold a `subscriptions/listen` request open (its response is the stream) until cancelled."""
    acked.update(await rpc(client, "subscriptions/listen", notifications={"taskIds": task_ids}))


@pytest.mark.anyio
async def test_a_listening_client_is_sent_each_status_of_a_gated_task_through_to_its_result(
    tmp_path: Path, tasks: TasksWithNotifications
) -> None:
    journal, ran, spec = tmp_path / "runs.db", tmp_path / "ran.txt", tmp_path / "clerk.toml"
    acks: list[Any] = []

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/subscriptions/acknowledged":
            acks.append(message.params.notifications.model_dump(by_alias=True, exclude_none=True))

    with serve_openai(clerk(ran)) as model:
        spec.write_text(GATED_SPEC.format(base_url=model.base_url))
        command = _serve(str(spec), journal=journal)
        env = subprocess_env() | {"OPENAI_API_KEY": "sk-test"}
        stdio = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO))
        async with Client(stdio, extensions=[tasks], message_handler=on_message) as client:
            created = await rpc(
                client, "tools/call", name="clerk", arguments={"task": "r", "session_id": "n-1"}
            )
            assert created["taskId"] == "n-1"
            async with anyio.create_task_group() as group:
                group.start_soon(listen, client, ["n-1", "unknown-task"], {})
                waiting = await frames_until(tasks.frames, "input_required")
                [key] = waiting[-1]["inputRequests"]
                await rpc(
                    client,
                    "tasks/update",
                    taskId="n-1",
                    inputResponses={key: {"action": "accept", "content": {"approve": True}}},
                )
                done = await frames_until(tasks.frames, "completed")
                polled = await rpc(client, "tasks/get", taskId="n-1")
                group.cancel_scope.cancel()
    assert acks == [{"taskIds": ["n-1"]}]  # the unknown id is not honoured
    frames = waiting + done
    assert all(f["taskId"] == "n-1" and "createdAt" in f and "lastUpdatedAt" in f for f in frames)
    assert all(f["_meta"]["io.modelcontextprotocol/subscriptionId"] is not None for f in frames)
    statuses = [f["status"] for f in frames]
    assert statuses.count("input_required") == 1 and statuses.count("completed") == 1  # one frame per change
    assert statuses.index("input_required") < statuses.index("completed")
    assert done[-1]["result"]["structuredContent"]["output"] == "recorded once"
    assert {k: v for k, v in done[-1].items() if k != "_meta"} == {
        k: v for k, v in polled.items() if k not in {"resultType", "_meta"}
    }  # the frame is what tasks/get answers
    assert await anyio.Path(ran).read_text() == "ran\n"


@pytest.mark.anyio
async def test_a_task_that_ended_before_the_listen_is_sent_its_final_state_at_once(
    tmp_path: Path, tasks: TasksWithNotifications
) -> None:
    journal = tmp_path / "runs.db"
    command = _serve("tests.mcp.served:shouter", journal=journal)
    stdio = StdioServerParameters(command=command[0], args=command[1:], env=subprocess_env(), cwd=str(REPO))
    async with Client(stdio, extensions=[tasks]) as client:
        sid = run_id("tests_mcp_served_shouter", "hey")
        await rpc(client, "tools/call", name="tests_mcp_served_shouter", arguments={"task": "hey"})
        async with anyio.create_task_group() as group:
            group.start_soon(listen, client, [sid], {})
            done = await frames_until(tasks.frames, "completed")
            group.cancel_scope.cancel()
    assert done[-1]["result"]["structuredContent"]["output"] == "shouted: HEY"


@pytest.mark.anyio
async def test_listening_for_task_ids_without_the_extension_is_the_missing_capability_error(
    tmp_path: Path,
) -> None:
    command = _serve("tests.mcp.served:shouter", journal=tmp_path / "runs.db")
    stdio = StdioServerParameters(command=command[0], args=command[1:], env=subprocess_env(), cwd=str(REPO))
    async with Client(stdio, extensions=[advertise("com.example/other")]) as client:
        with pytest.raises(MCPError, match="Missing required client capability") as refused:
            await rpc(client, "subscriptions/listen", notifications={"taskIds": ["x"]})
    assert refused.value.error.code == -32021
