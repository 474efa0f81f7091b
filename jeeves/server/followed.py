"""Runs this server did not start: followed live from the event log of a shared database.

`create_app(database=...)` / `jeeves serve --database URL` reads the event log durable
workers write (`jeeves.replay.eventlog`), so the run list and `GET /runs/{id}/events` show
runs executed by any worker on any machine. The stream is the same as for the server's own
runs: `id:` = seq, `data:` = the event's JSON, `event: end` once the run ended and the
client has everything; `Last-Event-ID: N` (or `?last_event_id=N`) resumes after seq N.

Following is a poll of the log: it is read at once, then again after `poll_s`, doubling
while nothing comes up to `max_poll_s` (back to `poll_s` at the next event), so a follower
lags a flushed event by at most `max_poll_s` and an idle one costs two small queries per
`max_poll_s`. Each read runs in a worker thread; the event loop never waits on the
database. Keep-alive comments go out every `keepalive_s` while nothing happens.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

import anyio

from jeeves.replay.eventlog import EventLog, LoggedRun, open_event_log
from jeeves.server.sse import KEEPALIVE, sse_message
from jeeves.server.wire import encode_event

__all__ = ["DatabaseRuns"]


class DatabaseRuns:
    """The runs of the event log in `database` (a `postgresql://` URL or a SQLite journal file).

    Args:
        database: Where durable workers record (their journal).
        poll_s: The first wait between two reads of a run's log while nothing comes.
        max_poll_s: The longest wait between two reads.
    """

    def __init__(self, database: str, *, poll_s: float = 0.05, max_poll_s: float = 0.5) -> None:
        self.database = database
        self.poll_s = poll_s
        self.max_poll_s = max_poll_s
        self._log: EventLog | None = None

    async def open(self) -> None:
        """Connect and read once, so a wrong URL or a database without a journal fails now,
        at start, rather than at the first request."""
        self._log = open_event_log(self.database, create=False)
        await self._log.runs(limit=1)

    async def aclose(self) -> None:
        if self._log is not None:
            await self._log.aclose()

    @property
    def log(self) -> EventLog:
        if self._log is None:
            raise RuntimeError("DatabaseRuns.open() was not called (the app's lifespan does it)")
        return self._log

    async def summaries(self) -> list[dict[str, object]]:
        return [run.summary() for run in await self.log.runs()]

    async def get(self, root: str) -> LoggedRun | None:
        return await self.log.run(root)

    async def follow(self, root: str, after: int, *, keepalive_s: float) -> AsyncGenerator[bytes, None]:
        """SSE bytes for a follower of run `root` that has seen events up to seq `after`: each
        read's events in one chunk."""
        seen, wait, idle = after, self.poll_s, 0.0
        while True:
            run = await self.log.run(root)  # read before the events: if it had ended, all are in
            events = await self.log.after(root, seen)
            if events:
                seen = events[-1].seq
                yield b"".join(encode_event(event) for event in events)
                wait, idle = self.poll_s, 0.0
                continue
            if run is None or (run.ended and run.last_seq <= seen):
                end = {"session_id": root, "status": run.status if run else "unknown", "last_seq": seen}
                yield sse_message(json.dumps(end), event="end").encode()
                return
            await anyio.sleep(wait)
            idle += wait
            wait = min(wait * 2, self.max_poll_s)
            if idle >= keepalive_s:
                idle = 0.0
                yield KEEPALIVE.encode()
