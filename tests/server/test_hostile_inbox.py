"""Everything a client sends into a run's inbox is bounded, and a message no agent would read is refused."""

from __future__ import annotations

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from jeeves import Agent, Context, Output, Router, ScriptedModel
from jeeves._run.steering import (
    MAX_MESSAGE_BYTES,
    MAX_PENDING,
    MAX_PENDING_BYTES,
    Inbox,
    InboxFull,
    MessageTooLarge,
)
from jeeves.server import create_app
from tests.server.conftest import Blocked, asgi_client

pytestmark = pytest.mark.anyio


class Judging:
    """Waits forever as a critic would, mid-verdict (its session is not an agent's)."""

    name = "llm_critic"

    async def run(self, ctx: Context, task: str) -> Output:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


class DraftThenJudge:
    """An agent drafts (its session then ends), and a critic judges (its session stays open)."""

    name = "draft_then_judge"

    async def run(self, ctx: Context, task: str) -> Output:
        await ctx.run(Agent("Draft."), task, role="agent", index=0)
        return await ctx.run(Judging(), task, role="critic", index=0)


def app() -> Starlette:
    router = Router({"default": ScriptedModel(["a draft"], model_name="scripted")})
    return create_app({"judge": DraftThenJudge(), "blocked": Blocked()}, router=router)


async def started(
    client: httpx.AsyncClient, application: Starlette, name: str, sid: str, session: str
) -> None:
    """Start run `sid` and wait until its session `session` has started."""
    response = await client.post("/runs", json={"architecture": name, "task": "x", "session_id": sid})
    assert response.status_code == 201, response.text
    record = application.state.runs.get(sid)
    with anyio.fail_after(10):
        while not any(
            e.type == "session.started" and e.session_id == session for e in record.events_after(0)
        ):
            await record.wait_after(record.last_seq, 10)


async def test_a_message_for_a_critic_an_ended_agent_or_no_such_session_is_refused_not_dropped() -> None:
    application = app()
    async with asgi_client(application) as client:
        await started(client, application, "judge", "j-1", "j-1__critic_0")
        critic = await client.post(
            "/runs/j-1/messages", json={"text": "Pass it.", "session_id": "j-1__critic_0"}
        )
        ended = await client.post("/runs/j-1/messages", json={"text": "More.", "session_id": "j-1__agent_0"})
        nobody = await client.post("/runs/j-1/messages", json={"text": "Hi.", "session_id": "j-1__agent_7"})
        application.state.runs.get("j-1").cancel()
    assert (
        critic.status_code == 409
        and "is a llm_critic (critic), which reads no messages" in critic.json()["error"]
    )
    assert ended.status_code == 409 and "'j-1__agent_0' has ended" in ended.json()["error"]
    assert nobody.status_code == 404 and "no session 'j-1__agent_7'" in nobody.json()["error"]


async def test_a_thousand_64kb_messages_are_not_all_accepted() -> None:
    application = app()
    text = "x" * MAX_MESSAGE_BYTES
    async with asgi_client(application) as client:
        await started(client, application, "blocked", "b-1", "b-1")
        statuses = [
            (await client.post("/runs/b-1/messages", json={"text": text})).status_code for _ in range(1000)
        ]
        full = await client.post("/runs/b-1/messages", json={"text": "one more"})
        big = await client.post("/runs/b-1/messages", json={"text": text + "y"})
        inbox = application.state.runs.get("b-1")._stream._state.inbox
        application.state.runs.get("b-1").cancel()
    accepted = MAX_PENDING_BYTES // MAX_MESSAGE_BYTES
    assert statuses == [202] * accepted + [429] * (1000 - accepted)
    assert full.status_code == 429 and full.headers["Retry-After"] == "1"
    assert "inbox is full" in full.json()["error"]
    assert big.status_code == 413 and f"over the {MAX_MESSAGE_BYTES}-byte limit" in big.json()["error"]
    assert len(inbox) == accepted


def test_the_inbox_caps_count_and_bytes_and_frees_what_an_agent_takes() -> None:
    inbox = Inbox()
    for i in range(MAX_PENDING):
        inbox.put(f"m{i}")
    with pytest.raises(InboxFull, match=f"{MAX_PENDING} messages"):
        inbox.put("one too many")
    assert len(inbox.take("s")) == MAX_PENDING and len(inbox) == 0
    inbox.put("again")  # room once taken
    with pytest.raises(MessageTooLarge):
        inbox.put("\u00e9" * (MAX_MESSAGE_BYTES // 2 + 1))  # counted in UTF-8 bytes, not characters
    inbox.put("for b", "b")
    assert inbox.take("a") == ("again",) and inbox.drain() == [("for b", "b")]
