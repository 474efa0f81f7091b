"""Runs this server did not start: followed live from the event log of a shared database.

`create_app(database=...)` / `jeeves serve --database URL` reads the event log durable
workers write (`jeeves.journal.eventlog`), so the run list and `GET /runs/{id}/events` show
runs executed by any worker on any machine. The stream is the same as for the server's own
runs: `id:` = seq, `data:` = the event's JSON, `event: end` once the run ended and the
client has everything; `Last-Event-ID: N` (or `?last_event_id=N`) resumes after seq N.

Following is a poll of the log: it is read at once, then again after `poll_s`, doubling
while nothing comes up to `max_poll_s` (back to `poll_s` at the next event), so a follower
lags a flushed event by at most `max_poll_s` and an idle one costs two small queries per
`max_poll_s`. Each read runs in a worker thread; the event loop never waits on the
database. Keep-alive comments go out every `keepalive_s` while nothing happens.

Faults of the database: a read waits a fault out for at most `read_retry_s` (2 s), then
`GET /runs` and `GET /runs/{id}` answer 503 with `Retry-After` (`DatabaseUnreachable`),
never 500; a follower keeps its stream open through an outage (keep-alives) and goes on
from where it was when the database is back, up to `event: end`.

Reconciling: a run whose log still says it runs, with nothing written for `stale_s`, is
looked up in the journal beside the log; when its root session ended there (the worker's
last write to the log was lost), that status is what the server shows, and writes back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import AsyncGenerator, Iterator

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jeeves.errors import JeevesError, JournalError
from jeeves.events import Event
from jeeves.journal.eventlog import EventLog, LoggedRun, open_event_log
from jeeves.server.sse import KEEPALIVE, sse_message
from jeeves.server.wire import encode_event

__all__ = ["RETRY_AFTER_S", "DatabaseRuns", "DatabaseUnreachable", "database_unreachable"]

RETRY_AFTER_S = 5
"""What a 503 during a database outage tells the client to wait before asking again."""


class DatabaseUnreachable(JeevesError):
    """The followed database did not answer a read in time; the client should retry."""


async def database_unreachable(request: Request, exc: Exception) -> Response:
    """A read during an outage: 503 with `Retry-After`, the reason in one line."""
    return JSONResponse({"error": str(exc)}, status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)})


class DatabaseRuns:
    """The runs of the event log in `database` (a `postgresql://` URL or a SQLite journal file).

    Args:
        database: Where durable workers record (their journal).
        poll_s: The first wait between two reads of a run's log while nothing comes.
        max_poll_s: The longest wait between two reads.
    """

    def __init__(
        self,
        database: str,
        *,
        poll_s: float = 0.05,
        max_poll_s: float = 0.5,
        read_retry_s: float = 2.0,
        stale_s: float = 5.0,
    ) -> None:
        self.database = database
        self.poll_s = poll_s
        self.max_poll_s = max_poll_s
        self.read_retry_s = read_retry_s
        self.stale_s = stale_s
        self._log: EventLog | None = None
        self._checked: dict[str, float] = {}

    async def open(self) -> None:
        """Connect and read once, so a wrong URL or a database without a journal fails now,
        at start, rather than at the first request."""
        self._log = open_event_log(self.database, create=False, retry_s=self.read_retry_s)
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
        with _unreachable():
            return [(await self._reconciled(run)).summary() for run in await self.log.runs()]

    async def get(self, root: str) -> LoggedRun | None:
        with _unreachable():
            run = await self.log.run(root)
            return None if run is None else await self._reconciled(run)

    async def _reconciled(self, run: LoggedRun) -> LoggedRun:
        """`run`, with the status its journal gives when the log's says it still runs but
        nothing was written for `stale_s` (looked up at most once per `stale_s` per run)."""
        now = time.time()
        if run.ended or now - run.updated < self.stale_s:
            return run
        if now - self._checked.get(run.session_id, 0.0) < self.stale_s:
            return run
        self._checked[run.session_id] = now
        status = await self.log.recorded_status(run.session_id)
        if status is None:
            return run
        with contextlib.suppress(JeevesError):  # best effort: the next reader reconciles again
            await self.log.set_status(run.session_id, status)
        self._checked.pop(run.session_id, None)
        return dataclasses.replace(run, status=status)

    async def _read(self, root: str, seen: int) -> tuple[LoggedRun | None, list[Event]] | None:
        """The run and its events after `seen`, or None when the database does not answer."""
        try:
            run = await self.log.run(root)  # read before the events: if it had ended, all are in
            events = await self.log.after(root, seen)
            if run is not None and not events:
                run = await self._reconciled(run)
        except JournalError:  # an outage: the follower waits, and goes on when it is over
            return None
        return run, events

    async def follow(self, root: str, after: int, *, keepalive_s: float) -> AsyncGenerator[bytes, None]:
        """SSE bytes for a follower of run `root` that has seen events up to seq `after`: each
        read's events in one chunk. Through a database outage it waits (keep-alives), then
        goes on: a follower always gets every event and `event: end`."""
        seen, wait, idle = after, self.poll_s, 0.0
        while True:
            read = await self._read(root, seen)
            if read is not None:
                run, events = read
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


@contextlib.contextmanager
def _unreachable() -> Iterator[None]:
    try:
        yield
    except JournalError as exc:
        raise DatabaseUnreachable(
            f"The runs database does not answer now ({exc}); retry in {RETRY_AFTER_S} s."
        ) from exc
