"""SSE over a real uvicorn on 127.0.0.1: disconnecting mid-run, re-attaching, cancel on disconnect."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest

import jeeves.server.wire as wire
from jeeves import Router, event_from_json
from jeeves.events import Event
from jeeves.server import create_app
from jeeves.server.wire import encode_event
from tests.server.conftest import (
    Blocked,
    Gated,
    LiveServer,
    Sse,
    gated_model,
    live_server,
    messages,
    parse_sse,
)
from tests.waiting import ThreadGate, wait_until


def read_until(lines: Iterator[str], stop: str) -> list[Sse]:
    """Read SSE messages until one whose data mentions `stop`, keep-alives dropped."""
    got: list[Sse] = []
    for message in parse_sse(lines):
        if message is not None:
            got.append(message)
            if stop in message.data:
                return got
    raise AssertionError(f"the stream ended before {stop!r}")


def test_a_run_outlives_a_disconnected_follower_and_resumes_exactly_once() -> None:
    gate = ThreadGate()
    app = create_app({"gated": Gated(gate)}, router=lambda: Router({"default": gated_model()}))
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        sid = client.post("/runs", json={"architecture": "gated", "task": "count"}).json()["session_id"]
        with client.stream("GET", f"/runs/{sid}/events") as response:
            lines = response.iter_lines()
            before = read_until(lines, '"session.completed"')  # the first child finished
            assert server.call(lambda: app.state.runs.get(sid).followers) == 1
        record = server.call(lambda: app.state.runs.get(sid))
        wait_until(lambda: server.call(lambda: record.followers) == 0, "the server to notice the disconnect")
        assert server.call(lambda: record.status) == "running"
        gate.open()
        server.wait(record.wait)  # the run ended
        last = before[-1].id
        with client.stream("GET", f"/runs/{sid}/events", headers={"Last-Event-ID": str(last)}) as response:
            after = list(m for m in parse_sse(response.iter_lines()) if m is not None)
        with client.stream("GET", f"/runs/{sid}/events") as response:
            full = list(m for m in parse_sse(response.iter_lines()) if m is not None)
        assert server.call(lambda: app.state.runs.running()) == []
    assert after[-1].event == "end" and after[-1].json()["status"] == "completed"
    assert [m.data for m in before + after] == [m.data for m in full]
    seqs = [event_from_json(m.data).seq for m in before + after[:-1]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert event_from_json(after[-2].data).type == "session.completed"


def test_cancel_on_disconnect_cancels_the_run_and_leaves_no_task_behind() -> None:
    app = create_app({"blocked": Blocked()}, cancel_on_disconnect=True)
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        baseline = server.task_count()
        sid = client.post("/runs", json={"architecture": "blocked", "task": "wait"}).json()["session_id"]
        record = server.call(lambda: app.state.runs.get(sid))
        assert server.call(lambda: record.status) == "running"  # nobody followed yet: it keeps going
        with client.stream("GET", f"/runs/{sid}/events") as response:
            lines = response.iter_lines()  # held: dropping the iterator would close the connection
            got = read_until(lines, '"round.started"')
            assert server.call(lambda: record.followers) == 1
            assert server.call(lambda: record.status) == "running"
        server.wait(record.wait)  # the run ended (cancelled, below)
        assert server.call(lambda: record.status) == "cancelled"
        assert server.call(lambda: app.state.runs.running()) == []
        wait_until(lambda: server.task_count() <= baseline, "the run's and the response's tasks to end")
        summary = client.get(f"/runs/{sid}").json()
    assert [event_from_json(m.data).type for m in got] == ["session.started", "round.started"]
    assert summary["status"] == "cancelled"


def test_idle_streams_get_keepalive_comments() -> None:
    app = create_app({"blocked": Blocked()}, keepalive_s=0.05)
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        sid = client.post("/runs", json={"architecture": "blocked", "task": "wait"}).json()["session_id"]
        with client.stream("GET", f"/runs/{sid}/events") as response:
            seen: list[Sse | None] = []
            for message in parse_sse(response.iter_lines()):
                seen.append(message)
                if seen.count(None) == 2:
                    break
        client.delete(f"/runs/{sid}")
    assert [m.json()["type"] for m in seen if m is not None] == ["session.started", "round.started"]


def test_twenty_followers_over_http_read_the_same_stream_encoded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encodes: list[int] = []

    def counting(event: Event) -> bytes:
        encodes.append(event.seq)
        return encode_event(event)

    monkeypatch.setattr(wire, "encode_event", counting)
    gate = ThreadGate()
    app = create_app({"gated": Gated(gate)}, router=lambda: Router({"default": gated_model()}))

    async def follow(url: str, sid: str, last: int | None = None) -> bytes:
        headers = {} if last is None else {"Last-Event-ID": str(last)}
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            async with client.stream("GET", f"/runs/{sid}/events", headers=headers) as response:
                return b"".join([chunk async for chunk in response.aiter_raw()])

    async def twenty(server: LiveServer, sid: str) -> list[bytes]:
        bodies: list[bytes] = []

        async def reader() -> None:
            bodies.append(await follow(server.url, sid))

        def following() -> int:
            return server.call(lambda: app.state.runs.get(sid).followers)

        async with anyio.create_task_group() as group:
            for _ in range(20):
                group.start_soon(reader)
            await anyio.to_thread.run_sync(lambda: wait_until(lambda: following() == 20, "20 followers"))
            gate.open()  # the run goes on only once all twenty are following
        return bodies

    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        sid = client.post("/runs", json={"architecture": "gated", "task": "count"}).json()["session_id"]
        bodies = anyio.run(twenty, server, sid)
        record = server.call(lambda: app.state.runs.get(sid))
        cut = server.call(lambda: record.last_seq) // 2
        tail = anyio.run(follow, server.url, sid, cut)
        events = server.call(lambda: record.events_after(0))
    assert len(bodies) == 20 and len(set(bodies)) == 1
    got = messages(bodies[0].decode())
    assert [int(m.id or 0) for m in got[:-1]] == [e.seq for e in events] == list(range(1, len(events) + 1))
    assert got[-1].event == "end" and got[-1].json()["status"] == "completed"
    assert sorted(encodes) == [e.seq for e in events]  # once each, for twenty followers and a re-attach
    assert [int(m.id or 0) for m in messages(tail.decode())[:-1]] == list(range(cut + 1, len(events) + 1))
