"""What the server refuses before routing (in-process, on asyncio and trio): foreign hosts,
cross-site writes, bodies that are not JSON, bodies over the limit."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from jeeves.errors import UserError
from jeeves.server import create_app
from jeeves.server.guard import host_names
from tests.server.conftest import Blocked, asgi_client

pytestmark = pytest.mark.anyio

START = {"architecture": "blocked", "task": "wait"}


def blocked_app(**kwargs: Any) -> Starlette:
    return create_app({"blocked": Blocked()}, **kwargs)


async def test_a_cross_origin_text_plain_post_starts_no_run() -> None:
    app = blocked_app()
    async with asgi_client(app) as client:
        simple = await client.post(
            "/runs",
            content=b'{"architecture": "blocked", "task": "wait"}',
            headers={"Content-Type": "text/plain", "Origin": "http://evil.example"},
        )
        untyped = await client.post("/runs", content=b'{"architecture": "blocked", "task": "wait"}')
        as_json = await client.post("/runs", json=START, headers={"Origin": "http://evil.example"})
        null = await client.post("/runs", json=START, headers={"Origin": "null"})
        delete = await client.delete("/runs/any", headers={"Origin": "http://evil.example"})
        held = app.state.runs.runs()
    assert simple.status_code == 403 and "'http://evil.example'" in simple.json()["error"]
    assert untyped.status_code == 415 and "application/json" in untyped.json()["error"]
    assert as_json.status_code == 403 and null.status_code == 403 and delete.status_code == 403
    assert held == []


async def test_same_origin_and_allowed_origins_may_write() -> None:
    app = blocked_app(cors_origins=["http://ui.example"])
    async with asgi_client(app) as client:
        same = await client.post("/runs", json=START, headers={"Origin": "http://localhost"})
        allowed = await client.post("/runs", json=START, headers={"Origin": "http://ui.example"})
        tool = await client.post("/runs", json=START)  # not a browser: no Origin
        other_port = await client.post("/runs", json=START, headers={"Origin": "http://localhost:9999"})
        charset = await client.post(
            "/runs",
            content=b'{"architecture": "blocked", "task": "wait"}',
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
        app.state.runs.cancel_all()
    assert [r.status_code for r in (same, allowed, tool, charset)] == [201] * 4
    assert other_port.status_code == 403


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_a_foreign_host_is_refused_before_anything_else(method: str) -> None:
    app = blocked_app()
    async with asgi_client(app) as client:
        response = await client.request(method, "/runs", json=START, headers={"Host": "attacker.example"})
        loopback = await client.get("/runs", headers={"Host": "127.0.0.1:8000"})
        ipv6 = await client.get("/runs", headers={"Host": "[::1]:8000"})
        held = app.state.runs.runs()
    assert response.status_code == 400 and "'attacker.example'" in response.json()["error"]
    assert "--allow-host" in response.json()["error"]
    assert loopback.status_code == 200 and ipv6.status_code == 200
    assert held == []


async def test_allowed_hosts_are_answered_to() -> None:
    async with asgi_client(blocked_app(allowed_hosts=["Jeeves.Internal"])) as client:
        named = await client.get("/runs", headers={"Host": "jeeves.internal:8000"})
        other = await client.get("/runs", headers={"Host": "attacker.example"})
    async with asgi_client(blocked_app(allowed_hosts=["*"], token="t")) as client:
        anyone = await client.get("/runs", headers={"Host": "attacker.example", "Authorization": "Bearer t"})
    assert named.status_code == 200 and other.status_code == 400 and anyone.status_code == 200


@pytest.mark.parametrize("bad", ["jeeves.internal:8000", "http://jeeves.internal", "", "a b"])
def test_an_allowed_host_must_be_a_bare_name(bad: str) -> None:
    with pytest.raises(UserError, match="bare host name"):
        host_names([bad])


def test_ipv6_hosts_are_bracketed() -> None:
    assert "[fe80::1]" in host_names(["fe80::1"])


async def test_a_body_over_the_limit_is_a_413_by_its_content_length() -> None:
    app = blocked_app(max_body_bytes=1000)
    async with asgi_client(app) as client:
        big = await client.post("/runs", json={**START, "task": "x" * 1000})
        unknown = await client.post("/runs", json={"architecture": "nope", "task": "x" * 1000})
        agui = await client.post("/agui", json={"padding": "x" * 1000})
        fits = await client.post("/runs", json=START)
        app.state.runs.cancel_all()
    assert big.status_code == 413 and "1000 bytes" in big.json()["error"]
    assert unknown.status_code == 413 and agui.status_code == 413  # refused before routing
    assert fits.status_code == 201


class Endless(httpx.AsyncByteStream):
    """50 MB in 10 kB chunks, counting what was taken (an iterator object, not a generator,
    so a stream left unfinished needs no finalising)."""

    def __init__(self) -> None:
        self.sent = 0

    def __aiter__(self) -> Endless:
        return self

    async def __anext__(self) -> bytes:
        if self.sent >= 50_000_000:
            raise StopAsyncIteration
        self.sent += 10_000
        return b" " * 10_000


async def test_a_streamed_body_is_cut_off_at_the_limit() -> None:
    body = Endless()
    async with asgi_client(blocked_app(max_body_bytes=100_000)) as client:
        request = client.build_request("POST", "/runs", headers={"Content-Type": "application/json"})
        request.stream = body
        response = await client.send(request)
    assert response.status_code == 413
    assert body.sent <= 120_000  # read up to the limit, not the 50 MB


async def test_too_many_runs_at_once_is_a_429_with_retry_after() -> None:
    app = blocked_app(max_runs=2)
    async with asgi_client(app) as client:
        first = [await client.post("/runs", json=START) for _ in range(2)]
        refused = await client.post("/runs", json=START)
        agui = await client.post(
            "/agui/blocked",
            json={
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "m", "role": "user", "content": "wait"}],
            },
        )
        sid = first[0].json()["session_id"]
        await client.delete(f"/runs/{sid}")
        await app.state.runs.get(sid).wait()
        after = await client.post("/runs", json=START)
        app.state.runs.cancel_all()
    assert [r.status_code for r in first] == [201, 201]
    assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
    assert "2 runs" in refused.json()["error"]
    assert agui.status_code == 429
    assert after.status_code == 201


def test_limits_must_be_positive() -> None:
    with pytest.raises(UserError, match="max_body_bytes"):
        blocked_app(max_body_bytes=0)
    with pytest.raises(UserError, match="max_runs"):
        blocked_app(max_runs=0)


async def test_the_page_still_works_with_a_token_and_writes_with_it() -> None:
    async with asgi_client(blocked_app(token="s3cret")) as client:
        page = await client.get("/")
        post = await client.post(
            "/runs", json=START, headers={"Authorization": "Bearer s3cret", "Origin": "http://localhost"}
        )
    assert page.status_code == 200 and post.status_code == 201
