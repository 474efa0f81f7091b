"""Server-sent events: the wire format, a response that notices disconnects, jeeves' own stream.

`EventStreamResponse` differs from Starlette's `StreamingResponse` in two ways that matter
for long-lived streams: it always watches for the client's disconnect while it waits for
the next chunk (not only when the next send fails), and it always closes its body
iterator, shielded, before it returns. So a follower that goes away is counted out at
once, and `cancel_on_disconnect` does not wait for the next keep-alive or for the garbage
collector.

The jeeves stream (`GET /runs/{id}/events`): every message has `id:` = the event's `seq`
and `data:` = one jeeves event as JSON. A client reconnecting with `Last-Event-ID: N`
receives every event with a seq above N, exactly once. Comments (`: keep-alive`) are sent
while nothing happens, so proxies keep the connection open. When the run has ended and
the client has everything, one last message `event: end` carries the run's status; an
`EventSource` should close on it (it would reconnect otherwise).

Throughput: a follower writes every event that is ready in one chunk (one send to the
connection for a burst, not one per event), and the jeeves stream's bytes for an event
are made once per run and shared by all its followers (`jeeves.server.wire`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from typing import Protocol

import anyio
import anyio.lowlevel
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from jeeves.errors import UserError
from jeeves.events import Event
from jeeves.server.runs import RunRecord, RunRegistry

__all__ = [
    "KEEPALIVE",
    "BadLastEventId",
    "EventStreamResponse",
    "JeevesFormat",
    "StreamFormat",
    "each_event",
    "follow_run",
    "last_event_id",
    "sse_message",
]

KEEPALIVE = ": keep-alive\n\n"
"""An SSE comment: ignored by clients, keeps idle connections open."""
_KEEPALIVE = KEEPALIVE.encode()

MAX_BATCH_EVENTS = 256
"""A format that maps events one by one (AG-UI) writes at most this many per chunk."""


def sse_message(data: str, *, id: int | None = None, event: str | None = None) -> str:
    """One SSE message; multi-line data is split over several `data:` lines."""
    head = ""
    if event is not None:
        head += f"event: {event}\n"
    if id is not None:
        head += f"id: {id}\n"
    return head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n"


class BadLastEventId(UserError):
    """`Last-Event-ID` is not a seq."""


def last_event_id(request: Request) -> int:
    """The seq a client has already seen: `Last-Event-ID`, else `?last_event_id=`, else 0."""
    raw = request.headers.get("last-event-id") or request.query_params.get("last_event_id") or "0"
    try:
        seq = int(raw)
    except ValueError:
        seq = -1
    if seq < 0:
        raise BadLastEventId(f"Last-Event-ID must be an event seq (an integer >= 0), got {raw!r}.")
    return seq


class EventStreamResponse(Response):
    """A `text/event-stream` response over an async iterator of SSE bytes (one send per chunk)."""

    media_type = "text/event-stream"

    def __init__(self, body: AsyncGenerator[bytes, None], *, headers: dict[str, str] | None = None) -> None:
        self.body_iterator = body
        self.status_code = 200
        self.background = None
        self.init_headers({"Cache-Control": "no-store", "X-Accel-Buffering": "no", **(headers or {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async with anyio.create_task_group() as group:

                async def watch_disconnect() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(watch_disconnect)
                try:
                    async for chunk in self.body_iterator:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                        # a server's send to a client that left returns at once, and a run's
                        # ready events never wait: let the watcher see the disconnect
                        await anyio.lowlevel.checkpoint()
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except OSError:  # the client went away while we were sending (ASGI 2.4 servers)
                    pass
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()


class StreamFormat(Protocol):
    """How a followed run is written: the opening, its events, the closing.

    `chunk_after` writes the events of the record after `seq` that are ready (all of
    them, or a bounded batch) and returns the bytes with the seq of the last event it
    took; it returns `seq` itself when there is none. A format may write nothing for an
    event it takes (the bytes are then empty but the seq moves on).

    `interrupt` is asked after every change of the run (an event, a gate arriving or
    leaving): text to end the stream with while the run goes on (the AG-UI stream ends
    when the run waits on a gate), or None to keep following.
    """

    def opening(self) -> list[str]: ...

    def chunk_after(self, record: RunRecord, seq: int) -> tuple[bytes, int]: ...

    def interrupt(self, record: RunRecord) -> list[str] | None: ...

    def closing(self, record: RunRecord) -> list[str]: ...


class JeevesFormat:
    """jeeves' own stream: `id:` = seq, `data:` = the event's JSON; `event: end` last.

    The bytes come from the record's `WireCache`: encoded once, shared by every follower.
    """

    def opening(self) -> list[str]:
        return []

    def chunk_after(self, record: RunRecord, seq: int) -> tuple[bytes, int]:
        return record.wire.chunk_after(seq)

    def interrupt(self, record: RunRecord) -> list[str] | None:
        return None  # jeeves' own stream follows a run through its gates

    def closing(self, record: RunRecord) -> list[str]:
        summary = record.summary()
        keep = ("session_id", "status", "stop_reason", "error", "last_seq")
        return [sse_message(json.dumps({k: summary[k] for k in keep if k in summary}), event="end")]


def each_event(record: RunRecord, seq: int, write: Callable[[Event], list[str]]) -> tuple[bytes, int]:
    """`chunk_after` for a format that writes events one at a time (`write(event)`)."""
    events = record.events_after(seq)[:MAX_BATCH_EVENTS]
    if not events:
        return b"", seq
    return "".join(text for event in events for text in write(event)).encode(), events[-1].seq


async def follow_run(
    registry: RunRegistry, record: RunRecord, after: int, fmt: StreamFormat, *, keepalive_s: float
) -> AsyncGenerator[bytes, None]:
    """SSE bytes for a follower of `record` that has seen events up to `after`.

    Counted as a follower while it runs (see `RunRegistry.following`); every event that
    is ready goes out in one chunk (a behind follower catches up in few writes); yields a
    keep-alive comment whenever `keepalive_s` pass without an event; ends after the
    run's last event and `fmt.closing`.
    """
    with registry.following(record):
        opening = fmt.opening()
        if opening:
            yield "".join(opening).encode()
        seen = after
        while True:
            change = record.change_token()  # taken before looking: a change while we yield is not lost
            while True:
                chunk, upto = fmt.chunk_after(record, seen)
                if upto == seen:
                    break
                seen = upto
                if chunk:
                    yield chunk
            ending = fmt.interrupt(record)
            if ending is not None:
                yield "".join(ending).encode()
                return
            if record.finished and record.last_seq <= seen:
                yield "".join(fmt.closing(record)).encode()
                return
            with anyio.move_on_after(keepalive_s) as idle:
                await change.wait()
            if idle.cancelled_caught:
                yield _KEEPALIVE
