"""The event log in SQL: SQLite (one machine, several processes) and PostgreSQL (many).

Both sit on a journal store of the same database (`SQLiteJournal`, `PostgresJournal`) and
run every statement through it: its connections, its way to the database (PostgreSQL's
batches in their thread; SQLite's writes as writes of its transactions on the event loop,
its reads in a worker thread: the event loop never waits on the database), its checks (a
file that is not a journal is refused, a newer journal schema too) and its errors
(`JournalError` naming the database, the URL without its password). Two tables beside the
journal's:

- `jeeves_events (root, seq, event)`: one row per event, the event's JSON as the SSE
  endpoint sends it; the primary key `(root, seq)` makes a re-sent batch a no-op.
- `jeeves_event_runs (root, architecture, task, status, last_seq, updated)`: one row per
  run, what `GET /runs` lists and how a follower knows the run ended.

A batch is one transaction: its events and the run's `last_seq` move together, so a
reader that sees `last_seq = N` finds every event up to N.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from jeeves.events import Event, event_from_json, event_to_json
from jeeves.journal.eventlog import ENDED, LoggedRun
from jeeves.journal.pgbatch import Merge, transaction
from jeeves.journal.postgres import PostgresJournal
from jeeves.journal.sqlite import SQLiteJournal

__all__ = ["PostgresEventLog", "SQLiteEventLog"]

T = TypeVar("T")

_TABLES = (
    "CREATE TABLE IF NOT EXISTS jeeves_events ("
    " root TEXT NOT NULL, seq {int} NOT NULL, event TEXT NOT NULL, PRIMARY KEY (root, seq))",
    "CREATE TABLE IF NOT EXISTS jeeves_event_runs ("
    " root TEXT PRIMARY KEY, architecture TEXT NOT NULL, task TEXT NOT NULL, status TEXT NOT NULL,"
    " last_seq {int} NOT NULL, updated {real} NOT NULL)",
)
_RUN_COLUMNS = "root, architecture, task, status, last_seq, updated"


class _SqlEventLog:
    """The statements, written once with `?` placeholders; subclasses say how to connect,
    how a transaction starts, and their dialect."""

    _param = "?"
    _types = {"int": "INTEGER", "real": "REAL"}
    _journal: SQLiteJournal | PostgresJournal

    def __init__(self) -> None:
        self._ready = False

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self._param)

    def _transaction(self, conn: Any) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def _create(self, conn: Any) -> None:
        with self._transaction(conn):
            for statement in _TABLES:
                conn.execute(statement.format(**self._types))

    def _conn(self, conn: Any) -> Any:
        if not self._ready:
            self._create(conn)
            self._ready = True
        return conn

    # -- writing -------------------------------------------------------------------------
    def _start(self, conn: Any, root: str, architecture: str, task: str) -> int:
        conn = self._conn(conn)
        with self._transaction(conn):
            row = conn.execute(
                self._sql("SELECT COALESCE(MAX(seq), 0) FROM jeeves_events WHERE root = ?"), (root,)
            ).fetchone()
            last = int(row[0]) if row else 0
            conn.execute(
                self._sql(
                    f"INSERT INTO jeeves_event_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, 'running', ?, ?) "
                    "ON CONFLICT (root) DO UPDATE SET status = 'running', last_seq = excluded.last_seq, "
                    "updated = excluded.updated"
                ),
                (root, architecture, task, last, time.time()),
            )
        return last

    def _append(self, conn: Any, root: str, rows: list[tuple[str, int, str]]) -> None:
        conn = self._conn(conn)
        with self._transaction(conn):
            conn.cursor().executemany(
                self._sql(
                    "INSERT INTO jeeves_events (root, seq, event) VALUES (?, ?, ?) "
                    "ON CONFLICT (root, seq) DO NOTHING"
                ),
                rows,
            )
            conn.execute(
                self._sql(
                    "UPDATE jeeves_event_runs SET last_seq = CASE WHEN last_seq > ? THEN last_seq ELSE ? END, "
                    "updated = ? WHERE root = ?"
                ),
                (rows[-1][1], rows[-1][1], time.time(), root),
            )

    def _set_status(self, conn: Any, root: str, status: str) -> None:
        self._conn(conn).execute(
            self._sql("UPDATE jeeves_event_runs SET status = ?, updated = ? WHERE root = ?"),
            (status, time.time(), root),
        )

    async def _write(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(connection, *args)`, a write (the store's `_call` unless the store writes
        another way)."""
        return await self._journal._call(fn, *args)

    async def start(self, root: str, *, architecture: str, task: str) -> int:
        return await self._write(self._start, root, architecture, task)

    async def append(self, root: str, events: Sequence[Event], *, status: str | None = None) -> None:
        rows = [(root, event.seq, event_to_json(event)) for event in events]
        if status is not None:
            await self._write(self._append_status, root, rows, status)
        elif rows:
            await self._write(self._append, root, rows)

    def _append_status(self, conn: Any, root: str, rows: list[tuple[str, int, str]], status: str) -> None:
        if rows:
            self._append(conn, root, rows)
        self._set_status(conn, root, status)

    async def set_status(self, root: str, status: str) -> None:
        await self._write(self._set_status, root, status)

    # -- reading -------------------------------------------------------------------------
    def _rows(self, conn: Any, sql: str, *args: object) -> list[Any]:
        return list(self._conn(conn).execute(self._sql(sql), args).fetchall())

    async def after(self, root: str, seq: int, limit: int = 500) -> list[Event]:
        rows = await self._journal._call(
            self._rows,
            "SELECT event FROM jeeves_events WHERE root = ? AND seq > ? ORDER BY seq LIMIT ?",
            root,
            seq,
            limit,
        )
        return [event_from_json(str(text)) for (text,) in rows]

    async def run(self, root: str) -> LoggedRun | None:
        rows = await self._journal._call(
            self._rows, f"SELECT {_RUN_COLUMNS} FROM jeeves_event_runs WHERE root = ?", root
        )
        return _logged(rows[0]) if rows else None

    async def runs(self, limit: int = 200) -> list[LoggedRun]:
        rows = await self._journal._call(
            self._rows, f"SELECT {_RUN_COLUMNS} FROM jeeves_event_runs ORDER BY updated DESC LIMIT ?", limit
        )
        return [_logged(row) for row in rows]

    async def recorded_status(self, root: str) -> str | None:
        """How the journal says run `root` ended (its root session's status), or None while
        it has not (or holds no such run)."""
        record = await self._journal.get_session(root)
        if record is None or record.status not in ENDED:
            return None
        return str(record.status)

    async def aclose(self) -> None:
        await self._journal.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._journal.path)!r})"


def _logged(row: Sequence[Any]) -> LoggedRun:
    root, architecture, task, status, last_seq, updated = row
    return LoggedRun(str(root), str(architecture), str(task), str(status), int(last_seq), float(updated))


class SQLiteEventLog(_SqlEventLog):
    """The event log in a SQLite journal file (WAL: followers read beside the writer)."""

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, retry_s: float | None = None
    ) -> None:
        super().__init__()
        self._journal: SQLiteJournal = SQLiteJournal(path, create=create, retry_s=retry_s)

    async def _write(self, fn: Callable[..., T], *args: object) -> T:
        return await self._journal._write_call(fn, *args)  # on the loop, in the store's transaction

    def _transaction(self, conn: Any) -> contextlib.AbstractContextManager[Any]:
        """None of its own: a write is one of the store's transaction's (`_write`); the tables'
        creation on the reading connection commits each statement."""
        return contextlib.nullcontext(conn)


_LOCK_KEY = 0x6A65657666  # serialises the event tables' creation across processes
_APPEND = (
    "WITH a AS (SELECT e->>0 AS root, (e->>1)::bigint AS seq, (e->>2)::float8 AS updated, e->>4 AS status, "
    "e->3 AS events FROM jsonb_array_elements(%s::jsonb) AS e), "
    "added AS (INSERT INTO jeeves_events (root, seq, event) SELECT a.root, (x->>0)::bigint, x->>1 "
    "FROM a, jsonb_array_elements(a.events) AS x ON CONFLICT (root, seq) DO NOTHING), "
    "m AS (SELECT root, max(seq) AS seq, max(updated) AS updated, max(status) AS status FROM a GROUP BY root) "
    "UPDATE jeeves_event_runs AS r SET last_seq = GREATEST(r.last_seq, m.seq), updated = m.updated, "
    "status = COALESCE(m.status, r.status) FROM m WHERE r.root = m.root AND r.root = ANY(ARRAY(SELECT root FROM m))"
)
"""Appends of one run or more, each with its run's `last_seq` (and its status, when the append
carries one), in one statement. The rows are one JSON array (escaped by the C encoder, not
row by row in Python) of `[root, last seq, time, [[seq, event JSON], ...], status]`, one per
`append` (`null` for no events, no status): a batch's appends merge into it
(`jeeves.journal.pgbatch.Merge`; a run's recorder has one append in flight at a time). It is
parsed once, as `jsonb` (as `json`, every `->>` parses its element's text again: an append's
whole text for its root and time, at each of its events), and the runs' rows are found by
their key (`= ANY(ARRAY(...))`: the planner cannot tell how few roots a JSON array holds,
and joined on them it read the whole runs table at every batch, which grows with every run
ever logged)."""


class PostgresEventLog(_SqlEventLog):
    """The event log in a PostgreSQL journal database (any number of writers and readers)."""

    _param = "%s"
    _types = {"int": "BIGINT", "real": "DOUBLE PRECISION"}

    def __init__(self, url: str, *, create: bool = True, retry_s: float | None = None) -> None:
        super().__init__()
        self._journal = self._pg = PostgresJournal(url, create=create, retry_s=retry_s)

    def _transaction(self, conn: Any) -> contextlib.AbstractContextManager[Any]:
        return transaction(conn)  # the batch's, when the call is in one (`_pgbatch`)

    async def append(self, root: str, events: Sequence[Event], *, status: str | None = None) -> None:
        """Lazily without a status (`jeeves.journal.pgbatch`): the run does not wait for its
        events, so they ride in the transaction of the next journal write of any run of this
        process; the appends of every run in that batch are one statement (`_APPEND`)."""
        if events or status is not None:
            last = events[-1].seq if events else None
            row = (root, last, time.time(), [[event.seq, event_to_json(event)] for event in events], status)
            merge = Merge(_APPEND, row, 2) if self._ready else None  # merged once the tables are checked
            await self._pg._call(self._append_runs, row, lazy=status is None, merge=merge)

    def _start(self, conn: Any, root: str, architecture: str, task: str) -> int:
        """One statement: where the log ends, and the run registered running there."""
        row = (
            self._conn(conn)
            .execute(
                f"INSERT INTO jeeves_event_runs ({_RUN_COLUMNS}) VALUES (%s, %s, %s, 'running', "
                "(SELECT COALESCE(MAX(seq), 0) FROM jeeves_events WHERE root = %s), %s) "
                "ON CONFLICT (root) DO UPDATE SET status = 'running', last_seq = excluded.last_seq, "
                "updated = excluded.updated RETURNING last_seq",
                (root, architecture, task, root, time.time()),
            )
            .fetchone()
        )
        return int(row[0])

    def _append_runs(
        self, conn: Any, row: tuple[str, int | None, float, list[list[Any]], str | None]
    ) -> None:
        """`_APPEND` of one `append` (alone in its batch, or the store's first)."""
        self._conn(conn).execute(_APPEND, (json.dumps([row], ensure_ascii=False),))

    def _create(self, conn: Any) -> None:
        with transaction(conn):  # CREATE TABLE IF NOT EXISTS races itself: take a lock first
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            for statement in _TABLES:
                conn.execute(statement.format(**self._types))
