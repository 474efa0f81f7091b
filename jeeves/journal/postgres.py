"""PostgresJournal: many runs, many writers, one PostgreSQL database.

The store for runs that outgrow one machine: any number of processes on any number of
machines record into one database, and `jeeves runs` / `jeeves replay` read it by URL
(`postgresql://user@host/db`). It keeps the contract of the SQLite store: the same
records, as the same JSON text, under the same schema version (table `jeeves_journal`
says which), a newer schema refused, every record committed before the step returns.

Many writers: every write is one statement in its own transaction, an upsert keyed by
`(session_id, idx)` for steps and `session_id` for sessions (`ON CONFLICT DO UPDATE`, so
a step made again after a takeover replaces the stopped one, the last status of a
session wins, and no writer ever sees a unique violation). The tables are created under
a transaction-scoped advisory lock, so processes starting together on an empty database
do not race on `CREATE TABLE`.

Rows hold the record as JSON text (not `jsonb`, which would reorder keys and refuse the
damage a replay must report), next to the columns it is looked up by. A record holds
whatever `StepRecord` / `SessionRecord` holds; new fields need no new columns.

Reading: the steps of a session are read in one query on its first use and kept
(write-through), so a replay reads each session once. A store object therefore belongs
to one process's view of a run: a worker opens one per run it executes, and a run is
executed by one worker at a time (`jeeves.durable`).

Each call runs in a worker thread (`anyio.to_thread`) on one connection guarded by a
lock, so the event loop never waits on the network, on asyncio and trio alike. A call that
meets a fault of the connection (a server restart, a dead pooled connection) discards it,
and the idle pooled ones of the same database, and runs again on a new one, for at most
the retry bound (`jeeves.journal.retry`, `--db-retry-s`); past it, a `JournalError` names
the database and says to resume. Needs
psycopg 3 (`pip install "jeeves[postgres]"`); `import jeeves` does not import it.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from jeeves.errors import JournalError, UserError
from jeeves.journal.records import DAMAGED, SCHEMA_VERSION, SessionRecord, StepRecord, excerpt
from jeeves.journal.retry import is_transient, retry
from jeeves.journal.snapshot import RunSnapshot
from jeeves.journal.store import StoreBase, decode_text, encode_record

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresJournal", "is_database_url", "display_url"]

T = TypeVar("T")
R = TypeVar("R", StepRecord, SessionRecord)

_SCHEMES = ("postgresql://", "postgres://")
_LOCK_KEY = 0x6A65657665  # "jeeve": serialises schema creation across processes

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS jeeves_journal (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS jeeves_sessions ("
    " seq BIGSERIAL NOT NULL, session_id TEXT PRIMARY KEY, parent_id TEXT, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS jeeves_steps ("
    " session_id TEXT NOT NULL, idx INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (session_id, idx))",
)


def is_database_url(target: object) -> bool:
    """Whether `target` is a PostgreSQL URL (`postgresql://...` or `postgres://...`)."""
    return isinstance(target, str) and target.startswith(_SCHEMES)


def display_url(url: str) -> str:
    """`url` with its password masked, for messages and listings."""
    url = re.sub(r"(://[^:/@?]*:)[^@/?]*@", r"\1***@", url)
    return re.sub(r"(?i)(password=)[^&]*", r"\1***", url)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise UserError(
            "A PostgreSQL journal needs psycopg, which is not installed; install it with "
            "`pip install 'jeeves[postgres]'` (or 'jeeves[dbos]' for workers)."
        ) from exc
    return psycopg


class PostgresJournal(StoreBase):
    """A journal in a PostgreSQL database (any number of runs and of writing processes).

    Args:
        url: A libpq URL, `postgresql://user:password@host:port/dbname` (or `postgres://`).
            The database must exist; jeeves creates its three tables in it.
        create: False to refuse a database that holds no journal yet (replaying and
            listing use this) instead of creating the tables.
        cached_sessions: How many sessions' steps to keep in memory for reading.
        retry_s: How long a fault of the database (a restart, a dead connection) is waited
            out before a call fails with a `JournalError` (default: the process's
            `--db-retry-s`, 60 s; `jeeves.journal.retry`).
    """

    def __init__(
        self, url: str, *, create: bool = True, cached_sessions: int = 64, retry_s: float | None = None
    ) -> None:
        if not is_database_url(url):
            raise UserError(
                f"url={url!r} is not a PostgreSQL URL; pass 'postgresql://user@host:5432/dbname'."
            )
        self.url = url
        self.path = display_url(url)
        """Where the journal is, as messages name it (the URL without its password)."""
        self._create = create
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._cache: OrderedDict[str, dict[int, str]] = OrderedDict()
        self._cache_size = max(1, cached_sessions)

    # -- the connection ------------------------------------------------------------------
    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(functools.partial(self._locked, fn, *args))

    def _locked(self, fn: Callable[..., T], *args: object) -> T:
        psycopg = _psycopg()
        with self._lock:
            try:
                return retry(
                    functools.partial(self._once, fn, *args),
                    where=self.path,
                    discard=self._discard,
                    bound_s=self._retry_s,
                )
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:  # never reached: fail at once
                raise JournalError(
                    f"{self.path}: cannot connect to the journal database ({_line(exc)}); check the URL and "
                    f"that the server is running."
                ) from exc
            except psycopg.Error as exc:
                raise JournalError(f"{self.path}: {_line(exc)}; the journal database refused it.") from exc

    def _once(self, fn: Callable[..., T], *args: object) -> T:
        conn = self._conn if self._conn is not None and not self._conn.closed else self._connect()
        return fn(conn, *args)

    def _discard(self) -> None:
        """A connection fault: close this store's connection, and the idle ones kept for this
        database, which the same restart or network fault has most likely killed too."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None
        _purge_idle(self.url)

    def _connect(self) -> psycopg.Connection[Any]:
        pooled = _take_idle(self.url)
        if pooled is not None:  # prepared already: its tables exist; their version may have moved
            try:
                self._check_version(pooled)
            except BaseException:
                pooled.close()
                raise
            self._conn = pooled
            return pooled
        conn = _psycopg().connect(self.url, autocommit=True, connect_timeout=10)
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return self._conn

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        psycopg = _psycopg()
        try:
            with conn.transaction():
                exists = conn.execute("SELECT to_regclass('jeeves_journal') IS NOT NULL").fetchone()
                if not (exists and exists[0]):
                    if not self._create:
                        raise UserError(
                            f"{self.path} holds no jeeves journal (no table jeeves_journal); check the URL, "
                            f"or record a run into it first."
                        )
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO jeeves_journal (key, value) VALUES ('schema_version', %s) "
                        "ON CONFLICT (key) DO NOTHING",
                        (str(SCHEMA_VERSION),),
                    )
        except psycopg.Error as exc:
            if is_transient(exc):  # the connection failed: retried on a new one
                raise
            raise JournalError(f"{self.path}: cannot prepare the journal tables ({_line(exc)}).") from exc
        self._check_version(conn)

    def _check_version(self, conn: psycopg.Connection[Any]) -> None:
        psycopg = _psycopg()
        try:
            row = conn.execute("SELECT value FROM jeeves_journal WHERE key = 'schema_version'").fetchone()
        except psycopg.Error as exc:
            if is_transient(exc):
                raise
            raise JournalError(
                f"{self.path}: cannot read the journal's schema version ({_line(exc)})."
            ) from exc
        stored = row[0] if row else None
        if not str(stored).isdigit() or int(str(stored)) > SCHEMA_VERSION:
            raise JournalError(
                f"{self.path} was written by a newer jeeves (journal schema v{stored}; this jeeves reads up "
                f"to v{SCHEMA_VERSION}). Upgrade jeeves to read this journal."
            )

    def _drop(self, *, reuse: bool = False) -> None:
        if self._conn is not None:
            if not (reuse and _put_idle(self.url, self._conn)):
                self._conn.close()
            self._conn = None

    # -- steps -------------------------------------------------------------------------
    def _session_steps(self, conn: psycopg.Connection[Any], session_id: str) -> dict[int, str]:
        steps = self._cache.get(session_id)
        if steps is None:
            rows = conn.execute("SELECT idx, record FROM jeeves_steps WHERE session_id = %s", (session_id,))
            steps = self._cache[session_id] = {int(idx): str(text) for idx, text in rows}
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(session_id)
        return steps

    def _put_step(self, conn: psycopg.Connection[Any], record: StepRecord, text: str) -> None:
        conn.execute(
            "INSERT INTO jeeves_steps (session_id, idx, record) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id, idx) DO UPDATE SET record = excluded.record",
            (record.session_id, record.index, text),
        )
        cached = self._cache.get(record.session_id)
        if cached is not None:
            cached[record.index] = text

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        cached = self._cache.get(session_id)
        steps = cached if cached is not None else await self._call(self._session_steps, session_id)
        text = steps.get(index)
        return None if text is None else self._step(session_id, index, text)

    def _step(self, session_id: str, index: int, text: str) -> StepRecord:
        what = f"session {session_id!r} step {index}"
        record = decode_text(text, f"{self.path} ({what})", StepRecord)
        if (record.session_id, record.index) != (session_id, index):  # a row copied or edited by hand
            raise JournalError(
                f"{self.path} ({what}): the row holds step {record.index} of {excerpt(record.session_id)}. {DAMAGED}"
            )
        return record

    async def put_step(self, record: StepRecord) -> None:
        await self._call(self._put_step, record, encode_record(record))

    async def step_indices(self, session_id: str) -> list[int]:
        cached = self._cache.get(session_id)
        if cached is not None:  # written through, so as current as the table for this object
            return sorted(cached)
        rows = await self._call(
            self._rows, "SELECT idx FROM jeeves_steps WHERE session_id = %s ORDER BY idx", session_id
        )
        return [int(idx) for (idx,) in rows]

    # -- sessions ------------------------------------------------------------------------
    def _rows(self, conn: psycopg.Connection[Any], sql: str, *args: object) -> list[Any]:
        cursor = conn.execute(sql, args)
        return cursor.fetchall() if cursor.description is not None else []

    async def get_session(self, session_id: str) -> SessionRecord | None:
        rows = await self._call(
            self._rows, "SELECT record FROM jeeves_sessions WHERE session_id = %s", session_id
        )
        if not rows:
            return None
        return decode_text(str(rows[0][0]), f"{self.path} (session {session_id!r})", SessionRecord)

    async def put_session(self, record: SessionRecord) -> None:
        await self._call(
            self._rows,
            "INSERT INTO jeeves_sessions (session_id, parent_id, record) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id) DO UPDATE SET record = excluded.record",
            record.session_id,
            record.parent_id,
            encode_record(record),
        )

    async def sessions(self, root: str | None = None) -> list[SessionRecord]:
        if root is None:
            rows = await self._call(self._rows, "SELECT session_id, record FROM jeeves_sessions ORDER BY seq")
        else:
            sql = (
                "SELECT session_id, record FROM jeeves_sessions WHERE session_id = %s "
                "OR left(session_id, %s) = %s ORDER BY seq"
            )
            rows = await self._call(self._rows, sql, root, len(root) + 2, root + "__")
        return [decode_text(str(text), f"{self.path} (session {sid!r})", SessionRecord) for sid, text in rows]

    # -- a whole run ---------------------------------------------------------------------
    def _read_run(self, conn: psycopg.Connection[Any], root: str) -> tuple[list[Any], list[Any]]:
        where = "WHERE session_id = %s OR left(session_id, %s) = %s"
        args = (root, len(root) + 2, root + "__")
        with conn.transaction():  # both tables as of one moment
            sessions = conn.execute(
                f"SELECT session_id, record FROM jeeves_sessions {where} ORDER BY seq", args
            )
            steps = conn.execute(f"SELECT session_id, idx, record FROM jeeves_steps {where}", args)
            return sessions.fetchall(), steps.fetchall()

    async def read_run(self, root: str) -> RunSnapshot:
        """Root session `root` and its subtree, every session and step, read in one round trip
        (one query per table) and decoded on first use."""
        session_rows, step_rows = await self._call(self._read_run, root)
        return RunSnapshot.from_rows(
            session_rows,
            step_rows,
            decode_session=lambda sid, text: decode_text(
                text, f"{self.path} (session {sid!r})", SessionRecord
            ),
            decode_step=self._step,
        )

    # -- closing -------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._drop(reuse=True)  # kept for the next store of this process on this database
            self._cache.clear()

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)

    def __repr__(self) -> str:
        return f"PostgresJournal({self.path!r})"


_IDLE: list[tuple[str, psycopg.Connection[Any]]] = []
_IDLE_LOCK = threading.Lock()
IDLE_MAX = 16
"""How many closed stores' connections a process keeps (all databases together, the most
recent) for its next stores to reuse. A worker opens a store (and an event log on one) per
run it executes: connecting and checking the tables cost more database CPU than a short
run's steps (bench/results/DURABLE.md), so a closed store hands its connection on."""


def _take_idle(url: str) -> psycopg.Connection[Any] | None:
    """An idle pooled connection to `url` that is still usable, or None."""
    psycopg = _psycopg()
    while True:
        with _IDLE_LOCK:
            found = next((i for i in range(len(_IDLE) - 1, -1, -1) if _IDLE[i][0] == url), None)
            if found is None:
                return None
            _, conn = _IDLE.pop(found)
        if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            return conn
        conn.close()


def _purge_idle(url: str) -> None:
    """Close every idle pooled connection to `url` (after a fault of one of them)."""
    with _IDLE_LOCK:
        dropped = [conn for kept, conn in _IDLE if kept == url]
        _IDLE[:] = [(kept, conn) for kept, conn in _IDLE if kept != url]
    for conn in dropped:
        with contextlib.suppress(Exception):
            conn.close()


def _put_idle(url: str, conn: psycopg.Connection[Any]) -> bool:
    """Keep `conn` for reuse if it is healthy (the oldest kept one is closed when the pool is
    full); whether it was kept."""
    psycopg = _psycopg()
    if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return False
    with _IDLE_LOCK:
        _IDLE.append((url, conn))
        evicted = _IDLE.pop(0)[1] if len(_IDLE) > IDLE_MAX else None
    if evicted is not None:
        evicted.close()
    return True


def _line(exc: BaseException) -> str:
    """A database error as one short line (libpq messages span lines)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
