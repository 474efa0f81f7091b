"""The jeeves SSE wire: one encoding per event for any number of followers, batched writes,
and `Last-Event-ID` exact (jeeves.server.wire, jeeves.server.sse.follow_run)."""

from __future__ import annotations

import json

import anyio
import anyio.lowlevel
import pytest

import jeeves.server.wire as wire
from jeeves.events import Event, ModelDelta, event_to_json
from jeeves.server import RunRegistry
from jeeves.server.runs import RunRecord
from jeeves.server.sse import JeevesFormat, follow_run, sse_message
from jeeves.server.wire import MAX_CHUNK_BYTES, WireCache, encode_event

pytestmark = pytest.mark.anyio


def delta(seq: int, text: str = "word ") -> ModelDelta:
    return ModelDelta(session_id="run", text=text, step=0, seq=seq)


def expected(events: list[Event], record: RunRecord) -> bytes:
    """What a follower must read: each message as `sse_message` writes it, then `end`."""
    body = "".join(sse_message(event_to_json(e), id=e.seq) for e in events)
    end = json.dumps({"session_id": record.session_id, "status": record.status, "last_seq": record.last_seq})
    return (body + sse_message(end, event="end")).encode()


class CountedEncoder:
    """Counts `encode_event` calls (the wire cache looks the function up at each use)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        monkeypatch.setattr(wire, "encode_event", self)

    def __call__(self, event: Event) -> bytes:
        self.calls += 1
        return encode_event(event)


async def read_all(registry: RunRegistry, record: RunRecord, after: int, chunks: list[bytes]) -> None:
    async for chunk in follow_run(registry, record, after, JeevesFormat(), keepalive_s=60):
        chunks.append(chunk)


def test_an_encoded_message_is_what_sse_message_writes_for_the_event() -> None:
    event = delta(7, 'two\nlines and a "quote"')
    assert encode_event(event) == sse_message(event_to_json(event), id=7).encode()


def test_the_cache_encodes_each_event_once_and_only_what_was_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = CountedEncoder(monkeypatch)
    events: list[Event] = []
    seqs: list[int] = []
    cache = WireCache(events, seqs)
    assert cache.chunk_after(0) == (b"", 0)
    for seq in (1, 2, 3):
        events.append(delta(seq))
        seqs.append(seq)
    assert cache.chunk_after(1) == (encode_event(events[1]) + encode_event(events[2]), 3)
    assert cache.chunk_after(0) == (b"".join(encode_event(e) for e in events), 3)
    assert cache.chunk_after(3) == (b"", 3)
    events.append(delta(4))
    seqs.append(4)
    assert cache.chunk_after(3) == (encode_event(events[3]), 4)
    assert counted.calls == 4 and cache.encoded == 4


def test_a_chunk_stops_at_the_byte_bound_on_a_message_boundary_and_always_holds_one() -> None:
    events: list[Event] = [delta(seq, "x" * 1000) for seq in range(1, 201)]
    cache = WireCache(events, [e.seq for e in events])
    chunks: list[bytes] = []
    seen = 0
    while True:
        chunk, seen_now = cache.chunk_after(seen)
        if seen_now == seen:
            break
        chunks.append(chunk)
        seen = seen_now
    assert len(chunks) > 1 and all(len(c) < MAX_CHUNK_BYTES + 1200 for c in chunks)
    assert b"".join(chunks) == b"".join(encode_event(e) for e in events)
    assert all(c.startswith(b"id: ") and c.endswith(b"\n\n") for c in chunks)
    big = delta(1, "y" * (2 * MAX_CHUNK_BYTES))
    assert WireCache([big], [1]).chunk_after(0) == (encode_event(big), 1)


async def test_twenty_followers_read_identical_bytes_and_each_event_is_encoded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted = CountedEncoder(monkeypatch)
    registry = RunRegistry()
    record = RunRecord("run", "test", "task")
    events: list[Event] = [delta(seq) for seq in range(1, 301)]
    bodies: list[list[bytes]] = [[] for _ in range(20)]
    async with anyio.create_task_group() as group:
        for chunks in bodies:
            group.start_soon(read_all, registry, record, 0, chunks)
        await anyio.wait_all_tasks_blocked()
        assert record.followers == 20
        for event in events:  # bursts of 1 to 7 events between trips through the loop
            record._append(event)
            if event.seq % 7 in (0, 3):
                await anyio.lowlevel.checkpoint()
        record._finish("completed", 0.0)
    want = expected(events, record)
    assert all(b"".join(chunks) == want for chunks in bodies)
    assert counted.calls == len(events) and record.wire.encoded == len(events)
    assert record.followers == 0


async def test_a_behind_follower_gets_every_ready_event_in_one_write() -> None:
    record = RunRecord("run", "test", "task")
    events: list[Event] = [delta(seq) for seq in range(1, 51)]
    for event in events:
        record._append(event)
    record._finish("completed", 0.0)
    chunks: list[bytes] = []
    await read_all(RunRegistry(), record, 0, chunks)
    assert len(chunks) == 2  # the 50 events, then `end`
    assert b"".join(chunks) == expected(events, record)


@pytest.mark.parametrize("cut", [0, 1, 17, 49, 50])
async def test_reattaching_with_a_last_event_id_reads_exactly_the_events_after_it(cut: int) -> None:
    record = RunRecord("run", "test", "task")
    events: list[Event] = [delta(seq) for seq in range(1, 51)]
    for event in events:
        record._append(event)
    everything: list[bytes] = []
    async with anyio.create_task_group() as group:
        group.start_soon(read_all, RunRegistry(), record, 0, everything)  # fills the cache first
        await anyio.wait_all_tasks_blocked()
        record._finish("completed", 0.0)
    after: list[bytes] = []
    await read_all(RunRegistry(), record, cut, after)
    assert b"".join(after) == expected([e for e in events if e.seq > cut], record)
    assert b"".join(everything) == expected(events, record)


async def test_a_stream_stops_at_a_disconnect_even_while_every_chunk_is_ready() -> None:
    """An ASGI server's send to a client that left returns at once (uvicorn), and a finished
    run's chunks are all ready: the stream must still hear the disconnect, not write the rest."""
    from jeeves.server.sse import EventStreamResponse

    sent: list[bytes] = []
    produced = 0

    async def body():  # type: ignore[no-untyped-def]
        nonlocal produced
        for i in range(1000):
            produced += 1
            yield f"data: {i}\n\n".encode()

    async def receive() -> dict[str, str]:
        return {"type": "http.disconnect"}  # the client has already gone

    async def send(message: dict[str, object]) -> None:  # never suspends, as on a closed socket
        if message["type"] == "http.response.body":
            sent.append(message["body"])  # type: ignore[arg-type]

    await EventStreamResponse(body())({"type": "http"}, receive, send)
    assert len(sent) <= 2 and produced <= 3, (len(sent), produced)
