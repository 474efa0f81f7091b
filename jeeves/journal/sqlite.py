"""SQLiteJournal: many runs in one file, written in WAL mode, queried off the event loop.

Every statement runs in the store's own thread (`jeeves.journal.handoff`) on one connection
guarded by a lock, so a slow disk never stalls the loop. Each record is committed before the
step returns (a child session's record goes out with the next call: `SQLStore.put_session`);
in WAL mode with `synchronous=NORMAL` that survives the process being killed
(a power cut may lose the last steps, never corrupt the file). Several processes may write
to one file: WAL lets readers run beside a writer and `busy_timeout` waits for the write
lock.

Writes are committed in groups: the thread takes every call queued since it last looked and
commits all their writes in one transaction, then answers the reads, and wakes each waiting
event loop once; each writer returns only once its own record is committed. A lone run
pays one hand-off (a queue put and a loop wake-up) and one commit per record (~90 µs of
CPU a `put_step`, ~180 through `anyio.to_thread`); a thousand concurrent runs pay one
hand-off and one commit per group instead of per record.

Rows hold the record as JSON text next to the columns they are looked up by. The file
says which schema it was written with (table `jeeves_journal`), and a newer schema is
refused. Steps of recently used sessions are cached (write-through), so a replay reads
each session once instead of once per step (a cached read needs no hand-off); a strict
replay reads its whole run at once (`read_run`: one query per table, on the primary keys).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio.to_thread

from jeeves.errors import JournalError, UserError
from jeeves.journal.handoff import Handoff, Job
from jeeves.journal.records import SCHEMA_VERSION, SessionRecord, StepRecord
from jeeves.journal.retry import mark_reached, retry
from jeeves.journal.sql import SQLStore
from jeeves.journal.store import encode_record

__all__ = ["SQLiteJournal"]

T = TypeVar("T")
R = TypeVar("R", StepRecord, SessionRecord)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jeeves_journal (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY, parent_id TEXT, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS steps (
    session_id TEXT NOT NULL, idx INTEGER NOT NULL, record TEXT NOT NULL,
    PRIMARY KEY (session_id, idx));
"""


class SQLiteJournal(SQLStore):
    """A journal in a SQLite file (one file, any number of runs).

    Args:
        path: The database file; created (with its folder) on first use.
        create: False to refuse a missing file (replaying and listing use this).
        cached_sessions: How many sessions' steps to keep in memory for reading.
        retry_s: How long a locked file is waited for before a call fails (default: the
            process's `--db-retry-s`; `jeeves.journal.retry`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        cached_sessions: int = 64,
        retry_s: float | None = None,
    ) -> None:
        self.path = Path(path)
        self._create = create
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        super().__init__(cached_sessions)
        self._handoff = Handoff(self._run_batch, name=f"jeeves journal {self.path.name}")

    # -- the connection ------------------------------------------------------------------
    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(connection, *args)` in the store's thread."""
        job = await self._handoff.submit(_Call(fn, args))
        return cast(T, job.value)

    def _run_batch(self, jobs: list[Job]) -> None:
        """A batch, in the store's thread: its writes committed in one transaction (a failure
        fails each of them), then its calls, each alone."""
        writes = [job for job in jobs if isinstance(job, _Write)]
        if writes:
            try:
                self._commit(writes)
            except Exception as exc:
                for write in writes:
                    write.error = exc
        for job in jobs:
            if isinstance(job, _Call):
                try:
                    job.value = self._locked(job.fn, *job.args)
                except Exception as exc:
                    job.error = exc

    def _locked(self, fn: Callable[..., T], *args: object) -> T:
        with self._lock:
            conn = self._conn if self._conn is not None else self._connect()
            mark_reached(str(self.path))  # opened: a locked file is waited for (`jeeves.journal.retry`)
            try:
                return retry(functools.partial(fn, conn, *args), where=str(self.path), bound_s=self._retry_s)
            except sqlite3.DatabaseError as exc:
                raise JournalError(f"{self.path}: {exc}; the journal file is damaged or locked.") from exc

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            if not self._create:
                raise UserError(f"There is no journal at {str(self.path)!r}; check the path.")
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise JournalError(f"{self.path}: cannot open the journal ({exc}).") from exc
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA busy_timeout = 5000")
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "jeeves_journal" not in tables:
                raise JournalError(
                    f"{self.path} is a SQLite database but not a jeeves journal (tables: {sorted(tables)!r}); "
                    f"give jeeves a file of its own."
                )
            _use_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.executescript(_SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO jeeves_journal (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            (stored,) = conn.execute(
                "SELECT value FROM jeeves_journal WHERE key = 'schema_version'"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path} is not a jeeves journal or is damaged ({exc}).") from exc
        if not str(stored).isdigit() or int(stored) > SCHEMA_VERSION:
            raise JournalError(
                f"{self.path} was written by a newer jeeves (journal schema v{stored}; this jeeves reads up "
                f"to v{SCHEMA_VERSION}). Upgrade jeeves to read this journal."
            )

    # -- writes ------------------------------------------------------------------------
    def _commit(self, writes: list[_Write]) -> None:
        """Commit `writes` in one transaction (in the store's thread; a busy file retries it whole)."""
        self._locked(self._transaction, writes)

    def _transaction(self, conn: sqlite3.Connection, writes: list[_Write]) -> None:
        conn.execute("BEGIN IMMEDIATE")  # take the write lock now: busy_timeout waits for it
        try:
            for write in writes:
                conn.execute(write.sql, write.args)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT leaves it open: the retry starts clean
                conn.execute("ROLLBACK")
            raise
        for write in writes:  # committed: write the steps through to the cache
            if write.step is not None:
                self._cache_step(write.step[0], write.step[1], write.args[2])

    async def put_step(self, record: StepRecord) -> None:
        args = (record.session_id, record.index, encode_record(record))
        await self._handoff.submit(_Write(_PUT_STEP, args, (record.session_id, record.index)))

    _SELECT_STEPS = "SELECT idx, record FROM steps WHERE session_id = ?"
    _SELECT_INDICES = "SELECT idx FROM steps WHERE session_id = ? ORDER BY idx"
    _SELECT_SESSION = "SELECT record FROM sessions WHERE session_id = ?"
    _SELECT_SESSIONS = "SELECT session_id, record FROM sessions ORDER BY rowid"
    _SELECT_TREE = (
        "SELECT session_id, record FROM sessions WHERE session_id = ? "
        "OR substr(session_id, 1, ?) = ? ORDER BY rowid"
    )

    def _rows(self, conn: sqlite3.Connection, sql: str, *args: object) -> list[Any]:
        return conn.execute(sql, args).fetchall()

    def _in_use(self) -> bool:
        return self._conn is not None

    def _leave_session(self, record: SessionRecord, text: str) -> None:
        self._handoff.post(_session_write(record, text))

    async def _write_session(self, record: SessionRecord, text: str) -> None:
        await self._handoff.submit(_session_write(record, text))

    # -- a whole run ---------------------------------------------------------------------
    def _read_run(self, conn: sqlite3.Connection, root: str) -> tuple[list[Any], list[Any]]:
        # `root` and the ids in [root__, root_`): exactly those starting `root__` (the column's
        # collation is binary), so both statements search the primary key's index.
        where = "WHERE session_id = ? OR (session_id >= ? AND session_id < ?)"
        args = (root, root + "__", root + "_`")
        conn.execute("BEGIN")  # one read transaction: both tables as of one moment
        try:
            sessions = conn.execute(f"SELECT session_id, record FROM sessions {where} ORDER BY rowid", args)
            steps = conn.execute(f"SELECT session_id, idx, record FROM steps {where}", args)
            return sessions.fetchall(), steps.fetchall()
        finally:
            conn.execute("COMMIT")

    # -- closing -------------------------------------------------------------------------
    def close(self) -> None:
        """Commit what was left behind, then close the file (raising a left-behind write's
        error)."""
        left = [job for job in self._handoff.take_left() if isinstance(job, _Write)]
        try:
            if left:
                self._commit(left)
        finally:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                self._cache.clear()
            self._handoff.stop()
        self._handoff.raise_left()

    async def aclose(self) -> None:
        """Commit what was left behind (in order, in the store's thread), then close."""
        try:
            await self._handoff.flush()
        finally:
            await anyio.to_thread.run_sync(self.close)

    def __repr__(self) -> str:
        return f"SQLiteJournal({str(self.path)!r})"


_PUT_STEP = (
    "INSERT INTO steps (session_id, idx, record) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id, idx) DO UPDATE SET record = excluded.record"
)
_PUT_SESSION = (
    "INSERT INTO sessions (session_id, parent_id, record) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET record = excluded.record"
)


class _Write(Job):
    """One statement of a group commit: its SQL, its arguments, and the step it writes, if
    any (session id, index), for the cache."""

    __slots__ = ("args", "sql", "step")

    def __init__(self, sql: str, args: tuple[Any, ...], step: tuple[str, int] | None = None) -> None:
        super().__init__()
        self.sql, self.args, self.step = sql, args, step


def _session_write(record: SessionRecord, text: str) -> _Write:
    """The write of a session's record (`text`, its JSON)."""
    return _Write(_PUT_SESSION, (record.session_id, record.parent_id, text))


class _Call(Job):
    """`fn(connection, *args)`, run alone (a read, or an event log's own transaction)."""

    __slots__ = ("args", "fn")

    def __init__(self, fn: Callable[..., Any], args: tuple[object, ...]) -> None:
        super().__init__()
        self.fn, self.args = fn, args


def _use_wal(conn: sqlite3.Connection, *, attempts: int = 100) -> None:
    """Put the file in WAL mode (once: the mode is stored in the file). Switching needs the
    file to itself, and SQLite can refuse the switch as "locked" without waiting while other
    connections (a worker's other runs, a server following them) open a new journal at the
    same time: so look first, and retry a refused switch for up to about 10 s. Runs in a
    worker thread, never on the event loop."""
    for attempt in range(attempts):
        try:
            (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
            if str(mode).lower() == "wal":
                return
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.1)
