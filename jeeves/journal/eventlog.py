"""The event log: a run's jeeves events, persisted so another process can follow the run.

A durable worker writes the events of each run it executes into the database its journal
lives in (`EventRecorder`), and `jeeves serve --database` on any machine reads them
(`after`) to stream the run over SSE, live, with `Last-Event-ID` re-attach. The log of one
run is keyed by its root session id and holds one gap-free sequence: event `seq` 1, 2, 3...
exactly as the SSE endpoint sends them, across takeovers and gate resumes (how the
recorder keeps it so is in `jeeves.journal.recorder`).

`EventLog` is the seam, kept small: register a run, append a batch, read after a seq, set
the run's status, list runs. The SQL stores (`jeeves.journal.eventlog_sql`) sit on the
journal stores' own connections, so the log is wherever the journal is: a SQLite file
(one machine, several processes) or a PostgreSQL database (many machines).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from jeeves.errors import UserError
from jeeves.events import Event

__all__ = ["ENDED", "EventLog", "LoggedRun", "open_event_log", "same_event"]

ENDED = frozenset({"completed", "failed", "expired", "rejected", "cancelled"})
"""The statuses after which a run's log gets no more events (a `RunResult.status`, but not
`awaiting_approval`: a run waiting at a gate goes on when it is decided)."""


@dataclass(frozen=True)
class LoggedRun:
    """One run in an event log, as `GET /runs` lists it."""

    session_id: str
    """The root session id (the DBOS workflow id of a submitted run)."""
    architecture: str
    """The target the worker ran (a spec's stem, or a `module:attr` reference)."""
    task: str
    status: str
    """`running`, `awaiting_approval`, or how it ended (`ENDED`)."""
    last_seq: int
    """The seq of the last persisted event (0: none yet)."""
    updated: float
    """When the status or the events last changed (the writer's clock, Unix seconds)."""

    @property
    def ended(self) -> bool:
        """No more events will come: a follower that has `last_seq` is done."""
        return self.status in ENDED

    def summary(self) -> dict[str, object]:
        """What `GET /runs` shows for it (the keys a server's own runs have)."""
        return {
            "session_id": self.session_id,
            "architecture": self.architecture,
            "task": self.task,
            "status": self.status,
            "events": self.last_seq,
            "last_seq": self.last_seq,
            "source": "database",
        }


class EventLog(Protocol):
    """Where runs' events are persisted and read back, by root session id."""

    async def start(self, root: str, *, architecture: str, task: str) -> int:
        """Register run `root` as running (again, after a takeover); returns its last seq."""
        ...

    async def append(self, root: str, events: Sequence[Event], *, status: str | None = None) -> None:
        """Persist `events` (their `seq` is their place in the log, contiguous after the
        last one) in one transaction; a seq already there is left as it is. With `status`,
        the run's status too, in the same transaction (a run's last events and how it ended
        reach a follower together, in one write)."""
        ...

    async def after(self, root: str, seq: int, limit: int = 500) -> list[Event]:
        """Up to `limit` events of `root` with a seq above `seq`, in order."""
        ...

    async def set_status(self, root: str, status: str) -> None:
        """Record the run's status (`ENDED` ones tell followers no more events come)."""
        ...

    async def run(self, root: str) -> LoggedRun | None:
        """Run `root`, or None when the log has no such run."""
        ...

    async def runs(self, limit: int = 200) -> list[LoggedRun]:
        """The most recently updated runs, newest first."""
        ...

    async def recorded_status(self, root: str) -> str | None:
        """How the journal beside the log says run `root` ended (`ENDED`), or None while it
        has not: what a reader trusts when the log's own status write was lost."""
        ...

    async def aclose(self) -> None: ...


def open_event_log(
    target: str | os.PathLike[str], *, create: bool = True, retry_s: float | None = None
) -> EventLog:
    """The event log in the database at `target`: a `postgresql://` URL, or a SQLite
    journal file (a path, or `sqlite:///path`). `create=False` refuses a database that
    holds no journal yet, instead of creating one; `retry_s` bounds how long a database
    fault is waited out (default: the process's `--db-retry-s`). Connects on first use."""
    from jeeves.journal.eventlog_sql import PostgresEventLog, SQLiteEventLog
    from jeeves.journal.postgres import is_database_url

    if is_database_url(target):
        return PostgresEventLog(str(target), create=create, retry_s=retry_s)
    if isinstance(target, str) and target.startswith("sqlite:///"):
        target = target.removeprefix("sqlite:///")
    if isinstance(target, str | os.PathLike) and str(target) and not str(target).endswith(".jsonl"):
        return SQLiteEventLog(target, create=create, retry_s=retry_s)
    raise UserError(
        f"database={target!r} cannot hold an event log; give 'postgresql://user@host/db' or a SQLite "
        f"journal file ('runs.db', 'sqlite:///runs.db')."
    )


_VOLATILE = {"seq", "ts", "replayed"}


def same_event(a: Event, b: Event) -> bool:
    """Whether `a` and `b` are the same event of a run, but for where and when they were
    emitted: `seq`, `ts`, and `replayed` (a resumed run serves from its journal the steps
    the first attempt ran live)."""
    return type(a) is type(b) and a.model_dump(exclude=_VOLATILE) == b.model_dump(exclude=_VOLATILE)
