"""The HTTP API in-process (httpx ASGITransport), on asyncio and trio: runs, SSE, auth, CORS."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette

from jeeves import Router, ScriptedModel, event_from_json
from jeeves.server import create_app
from tests.server.conftest import Blocked, asgi_client, messages
from tests.server.nested import nested, nested_router

pytestmark = pytest.mark.anyio


def nested_app(**kwargs: Any) -> Starlette:
    return create_app({"nested": nested, "blocked": Blocked()}, router=nested_router, **kwargs)


async def start(client: httpx.AsyncClient, architecture: str = "nested", **extra: object) -> str:
    response = await client.post("/runs", json={"architecture": architecture, "task": "Add.", **extra})
    assert response.status_code == 201, response.text
    return str(response.json()["session_id"])


async def test_post_runs_then_stream_every_event_with_seq_as_id() -> None:
    async with asgi_client(nested_app()) as client:
        sid = await start(client, session_id="job-1")
        assert sid == "job-1"
        response = await client.get(f"/runs/{sid}/events")
    assert response.headers["content-type"].startswith("text/event-stream")
    got = messages(response.text)
    *events, end = got
    parsed = [event_from_json(m.data) for m in events]
    assert [m.id for m in events] == [str(e.seq) for e in parsed]
    assert [e.seq for e in parsed] == list(range(1, len(parsed) + 1))
    assert parsed[0].type == "session.started" and parsed[0].session_id == "job-1"
    assert parsed[-1].type == "session.completed" and parsed[-1].session_id == "job-1"
    sessions = {e.session_id for e in parsed if e.type == "session.started"}
    assert {"job-1__coder_0", "job-1__writer_0", "job-1__coder_0__critic_1"} <= sessions
    assert end.event == "end"
    assert end.json() == {
        "session_id": "job-1",
        "status": "completed",
        "stop_reason": "completed",
        "last_seq": len(parsed),
    }


async def test_last_event_id_resumes_with_every_later_event_exactly_once() -> None:
    async with asgi_client(nested_app()) as client:
        sid = await start(client)
        full = [m for m in messages((await client.get(f"/runs/{sid}/events")).text) if m.event is None]
        cut = int(full[9].id or 0)
        resumed = messages(
            (await client.get(f"/runs/{sid}/events", headers={"Last-Event-ID": str(cut)})).text
        )
        by_query = messages((await client.get(f"/runs/{sid}/events?last_event_id={cut}")).text)
        at_end = messages(
            (await client.get(f"/runs/{sid}/events", headers={"Last-Event-ID": full[-1].id or ""})).text
        )
        bad = await client.get(f"/runs/{sid}/events", headers={"Last-Event-ID": "soon"})
    later = [m for m in resumed if m.event is None]
    assert [m.data for m in later] == [m.data for m in full[10:]]
    assert [m.data for m in by_query if m.event is None] == [m.data for m in full[10:]]
    assert [m.event for m in at_end] == ["end"]
    assert bad.status_code == 400 and "'soon'" in bad.json()["error"]


async def test_run_summaries_show_status_and_output_but_no_configuration() -> None:
    async with asgi_client(nested_app()) as client:
        sid = await start(client)
        await client.get(f"/runs/{sid}/events")  # wait for the end
        one = (await client.get(f"/runs/{sid}")).json()
        listed = (await client.get("/runs")).json()["runs"]
        names = (await client.get("/architectures")).json()
    assert one["status"] == "completed" and one["output"] == "Done: add is written and documented."
    assert one["usage"]["model_calls"] == 8
    assert listed == [one]
    assert names == {"architectures": ["nested", "blocked"]}
    assert "router" not in str(one) and "scripted" not in str(one)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "needle"),
    [
        (
            "POST",
            "/runs",
            {"architecture": "nope", "task": "x"},
            404,
            "'nope'; this server has: nested, blocked",
        ),
        ("POST", "/runs", {"architecture": "nested"}, 422, "task"),
        ("POST", "/runs", {"architecture": "nested", "task": "x", "session_id": "a__b"}, 422, "'a__b'"),
        ("POST", "/runs", {"architecture": "nested", "task": "x", "extra": 1}, 422, "extra"),
        ("GET", "/runs/missing", None, 404, "'missing'"),
        ("GET", "/runs/missing/events", None, 404, "'missing'"),
        ("DELETE", "/runs/missing", None, 404, "'missing'"),
    ],
)
async def test_bad_requests_get_clear_errors(
    method: str, path: str, body: object, status: int, needle: str
) -> None:
    async with asgi_client(nested_app()) as client:
        response = await client.request(method, path, json=body)
    assert response.status_code == status, response.text
    assert needle in response.json()["error"]


async def test_a_body_that_is_not_json_is_a_400() -> None:
    async with asgi_client(nested_app()) as client:
        response = await client.post("/runs", content=b"{nope", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "not JSON" in response.json()["error"]


async def test_a_session_id_already_held_is_a_conflict() -> None:
    async with asgi_client(nested_app()) as client:
        await start(client, session_id="same")
        again = await client.post("/runs", json={"architecture": "nested", "task": "x", "session_id": "same"})
    assert again.status_code == 409 and "'same'" in again.json()["error"]


async def test_delete_cancels_a_run_and_its_stream_ends_cancelled() -> None:
    app = nested_app()
    async with asgi_client(app) as client:
        sid = await start(client, "blocked")
        record = app.state.runs.get(sid)
        with anyio.fail_after(10):
            await record.wait_after(0, 10)  # its first event
        cancelled = await client.delete(f"/runs/{sid}")
        got = messages((await client.get(f"/runs/{sid}/events")).text)
        again = await client.delete(f"/runs/{sid}")
        assert app.state.runs.running() == []
    assert cancelled.status_code == 202 and cancelled.json() == {"session_id": sid, "cancelled": True}
    assert again.json()["cancelled"] is False
    assert [m.event for m in got] == [None, None, "end"]  # session.started, round.started, end
    assert got[-1].json()["status"] == "cancelled"


async def test_a_failed_run_ends_its_stream_with_the_error() -> None:
    app = create_app({"nested": nested}, router=Router({"default": ScriptedModel({})}))  # nothing to say
    async with asgi_client(app) as client:
        sid = await start(client)
        got = messages((await client.get(f"/runs/{sid}/events")).text)
    end = got[-1].json()
    assert end["status"] == "failed" and end["error"]["type"] == "UnexpectedModelCall"
    assert "no step left" in end["error"]["message"]
    assert [event_from_json(m.data).type for m in got[:-1]] == ["session.started", "session.failed"]


async def test_a_token_guards_everything_but_the_page() -> None:
    app = nested_app(token="s3cret")
    async with asgi_client(app) as client:
        page = await client.get("/")
        script = await client.get("/static/viewer.js")
        anonymous = await client.get("/runs")
        wrong = await client.get("/runs", headers={"Authorization": "Bearer s3crets"})
        right = await client.get("/runs", headers={"Authorization": "Bearer s3cret"})
        query = await client.get("/architectures?access_token=s3cret")
        post = await client.post("/runs", json={"architecture": "nested", "task": "x"})
    assert page.status_code == 200 and script.status_code == 200
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401 and post.status_code == 401
    assert right.status_code == 200 and query.status_code == 200


async def test_no_cors_headers_unless_origins_are_configured() -> None:
    preflight = {"Origin": "http://ui.example", "Access-Control-Request-Method": "POST"}
    async with asgi_client(nested_app()) as client:
        closed = await client.get("/runs", headers={"Origin": "http://ui.example"})
        closed_preflight = await client.options("/runs", headers=preflight)
    async with asgi_client(nested_app(cors_origins=["http://ui.example"])) as client:
        opened = await client.get("/runs", headers={"Origin": "http://ui.example"})
        other = await client.get("/runs", headers={"Origin": "http://evil.example"})
        opened_preflight = await client.options("/runs", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers
    assert "access-control-allow-origin" not in closed_preflight.headers
    assert opened.headers["access-control-allow-origin"] == "http://ui.example"
    assert "access-control-allow-origin" not in other.headers
    assert opened_preflight.status_code == 200


async def test_the_viewer_page_and_its_assets_are_served() -> None:
    async with asgi_client(nested_app()) as client:
        page = await client.get("/")
        css = await client.get("/static/viewer.css")
        missing = await client.get("/static/secrets.txt")
    assert page.headers["content-type"].startswith("text/html")
    assert '<script src="/static/viewer.js">' in page.text
    assert css.headers["content-type"].startswith("text/css")
    assert missing.status_code == 404


def operator_app(requests: list[Any], gate: anyio.Event) -> Starlette:
    """An agent whose tool waits for `gate`, then that follows whatever a human told it."""
    from jeeves import Agent, FunctionModel, tool
    from jeeves.testing import Reply, call

    @tool
    async def look_around() -> str:
        """Look at the box."""
        await gate.wait()
        return "nothing obvious"

    def act(request: Any) -> Reply:
        requests.append(request)
        if len(requests) == 1:
            return Reply(tool_calls=[call("look_around")])
        told = [m.content for m in request.messages if m.role == "user"][1:]
        return Reply(text=f"Did as told: {told[-1]}" if told else "Nothing to do.")

    agent = Agent("You operate a box.", tools=[look_around])
    return create_app({"operator": agent}, router=Router({"default": FunctionModel(act)}))


async def test_post_messages_reaches_the_running_agent_at_its_next_turn() -> None:
    requests: list[Any] = []
    gate = anyio.Event()
    app = operator_app(requests, gate)
    async with asgi_client(app) as client:
        sid = await start(client, "operator", session_id="op-1")
        record = app.state.runs.get(sid)
        with anyio.fail_after(10):
            while "tool.started" not in [e.type for e in record.events_after(0)]:
                await record.wait_after(record.last_seq, 10)
        sent = await client.post(f"/runs/{sid}/messages", json={"text": "Restart web.", "session_id": sid})
        gate.set()
        got = [event_from_json(m.data) for m in messages((await client.get(f"/runs/{sid}/events")).text)[:-1]]
        late = await client.post(f"/runs/{sid}/messages", json={"text": "Anything else?"})
        summary = (await client.get(f"/runs/{sid}")).json()
    assert sent.status_code == 202 and sent.json() == {"session_id": "op-1", "target": "op-1", "queued": True}
    assert requests[1].messages[-1].role == "user" and requests[1].messages[-1].content == "Restart web."
    injected = [e for e in got if e.type == "steering.injected"]
    assert [(e.source, e.message) for e in injected] == [("human", "Restart web.")]
    assert summary["output"] == "Did as told: Restart web."
    assert late.status_code == 409 and "has ended" in late.json()["error"]


@pytest.mark.parametrize(
    ("path", "body", "status", "needle"),
    [
        ("/runs/missing/messages", {"text": "hi"}, 404, "'missing'"),
        ("/runs/RUN/messages", {"message": "hi"}, 422, "text"),
        ("/runs/RUN/messages", {"text": "hi", "session_id": "elsewhere__agent_0"}, 422, "not part of run"),
        ("/runs/RUN/messages", {"text": ""}, 422, "empty"),
    ],
)
async def test_bad_messages_get_clear_errors(path: str, body: object, status: int, needle: str) -> None:
    app = nested_app()
    async with asgi_client(app) as client:
        sid = await start(client, "blocked")
        response = await client.post(path.replace("RUN", sid), json=body)
    assert response.status_code == status, response.text
    assert needle in response.json()["error"]


async def test_messages_pass_the_guard_like_every_write() -> None:
    app = nested_app(token="s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    async with asgi_client(app) as client:
        sid = (
            await client.post("/runs", json={"architecture": "blocked", "task": "x"}, headers=auth)
        ).json()["session_id"]
        anonymous = await client.post(f"/runs/{sid}/messages", json={"text": "hi"})
        foreign = await client.post(
            f"/runs/{sid}/messages", json={"text": "hi"}, headers={**auth, "Origin": "https://evil.example"}
        )
        not_json = await client.post(
            f"/runs/{sid}/messages", content=b"text=hi", headers={**auth, "Content-Type": "text/plain"}
        )
    assert anonymous.status_code == 401
    assert foreign.status_code == 403 and not_json.status_code == 415
