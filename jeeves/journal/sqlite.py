"""SQLiteJournal: many runs in one file, written in WAL mode on the event loop's thread.

A write is committed on the event loop's own thread, on a connection of its own, before the
step that wrote it returns (a child session's record goes out with the next write:
`SQLStore.put_session`). In WAL mode with `synchronous=NORMAL` that survives the process
being killed (a power cut may lose the last steps, never corrupt the file), and a commit
never calls fsync: it appends its pages to the WAL. The loop never waits on the disk or on
another process:

- the writing connection has no busy timeout: when another process (or connection) holds
  the file's write lock, the commit fails at once and the write waits on the event loop
  (`anyio.sleep`, from 1 ms doubling to 100 ms) and tries again, up to the retry bound
  (`--db-retry-s`, `jeeves.journal.retry`; then the same `JournalError` as every database
  wait). The writes the loop's other runs make meanwhile join the waiting one and are
  committed with it, in one transaction (group commit, when it pays: a commit that goes
  through at once is one transaction per record, ~40 µs of CPU);
- its automatic checkpoints are off (`wal_autocheckpoint = 0`): once `CHECKPOINT_ROWS`
  rows were written since the last one began, a thread of its own copies the WAL back into
  the file, fsync included: first beside the writers (PASSIVE), then the rest holding the
  write lock (RESTART, waiting at most 0.1 s for another writer or an old reader: a write
  meanwhile waits as for another process's lock), so the next write starts the WAL over.
  Writes that outrun a checkpoint by as many rows again wait for it (off the loop), so the
  WAL stays bounded.

Reads (a session's steps, a strict replay's whole run, the session listing, the explorer)
run in a worker thread on a second connection, under a lock: they can be large, and WAL
lets them read beside the writer. Several processes may write to one file.

Rows hold the record as JSON text next to the columns they are looked up by. The file says
which schema it was written with (table `jeeves_journal`), and a newer schema is refused.
Steps of recently used sessions are cached (write-through), so a replay reads each session
once instead of once per step; a strict replay reads its whole run at once (`read_run`: one
query per table, on the primary keys).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from jeeves.errors import JournalError, UserError
from jeeves.journal.handoff import running_loop
from jeeves.journal.records import DAMAGED, SCHEMA_VERSION, SessionRecord, StepRecord
from jeeves.journal.retry import Backoff, is_transient, mark_reached, retry
from jeeves.journal.sql import SQLStore
from jeeves.journal.store import encode_record, unusable_path

__all__ = ["CHECKPOINT_ROWS", "SQLiteJournal"]

T = TypeVar("T")
R = TypeVar("R", StepRecord, SessionRecord)

CHECKPOINT_ROWS = 400
"""Rows written since the last checkpoint past which a checkpoint starts (in its thread)."""
_FIRST_WAIT_S, _MOST_WAIT_S = 0.001, 0.1  # a write's pauses while another holds the write lock
_RESTART_WAIT_MS = 100
"""How long a checkpoint's RESTART waits for another writer or an old reader (it holds the
write lock meanwhile); past it the WAL starts over at a later checkpoint."""

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
        """The reading connection's (reads, the opening, checkpoints: all in worker threads)."""
        self._conn: sqlite3.Connection | None = None
        self._writer: sqlite3.Connection | None = None
        self._write_lock = threading.Lock()
        """The writing connection's, held for one commit (never across a wait): event loops
        of several threads may share the store."""
        self._waiting: dict[object, _Group] = {}
        """Per event loop: the writes it left behind, or that wait for a locked file."""
        self._left_error: BaseException | None = None
        self._checkpoint_at = 0
        self._checkpointer: threading.Thread | None = None
        self._catching_up: dict[object, anyio.Event] = {}
        super().__init__(cached_sessions)

    # -- reads, in a worker thread ---------------------------------------------------------
    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(connection, *args)` in a worker thread, on the reading connection, after what
        this loop left behind is committed (a read sees every write made before it)."""
        await self._flush()
        return await anyio.to_thread.run_sync(functools.partial(self._locked, fn, *args))

    def _locked(self, fn: Callable[..., T], *args: object) -> T:
        with self._lock:
            conn = self._conn if self._conn is not None else self._open()
            try:
                return retry(functools.partial(fn, conn, *args), where=str(self.path), bound_s=self._retry_s)
            except sqlite3.DatabaseError as exc:
                raise JournalError(f"{self.path}: {exc}; the journal file is damaged or locked.") from exc

    def _open(self) -> sqlite3.Connection:
        """Both connections (under `_lock`, in a worker thread): the reading one checks the
        file (and makes it a journal), then the writing one."""
        conn = self._connect(prepare=True)
        writer = self._connect(prepare=False)
        try:
            writer.execute("PRAGMA synchronous = NORMAL")
            writer.execute("PRAGMA wal_autocheckpoint = 0")  # checkpoints run in their thread
            writer.execute("SELECT count(*) FROM jeeves_journal").fetchone()  # the schema, read here
            writer.execute("PRAGMA busy_timeout = 0")  # from now on a locked file is waited for on the loop
        except sqlite3.Error as exc:
            writer.close()
            conn.close()
            raise JournalError(f"{self.path}: cannot open the journal ({exc}).") from exc
        self._conn, self._writer = conn, writer
        self._checkpoint_at = 0
        mark_reached(str(self.path))  # opened: a locked file is waited for (`jeeves.journal.retry`)
        return conn

    def _connect(self, *, prepare: bool) -> sqlite3.Connection:
        if self.path.is_dir():
            raise unusable_path(self.path, "open", IsADirectoryError(), "runs.db")
        if not self.path.exists():
            if not self._create:
                raise UserError(f"There is no journal at {str(self.path)!r}; check the path.")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # a file where one of its folders should be, a read-only folder
                raise unusable_path(self.path, "make", exc, "runs.db") from None
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise JournalError(f"{self.path}: cannot open the journal ({exc}).") from exc
        if prepare:
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA busy_timeout = 5000")  # in a worker thread: it may wait
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "jeeves_journal" not in tables:
                raise JournalError(
                    f"{self.path} is a SQLite database but not a jeeves journal (tables: {sorted(tables)!r}); "
                    f"give jeeves a file of its own."
                )
            conn.execute("PRAGMA synchronous = NORMAL")
            if self._create:
                _use_wal(conn)
                conn.executescript(_SCHEMA)
                conn.execute(
                    "INSERT OR IGNORE INTO jeeves_journal (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            else:  # a journal that exists is read (and decided on) as it is: nothing is made here
                self._check_tables(tables)
            row = conn.execute("SELECT value FROM jeeves_journal WHERE key = 'schema_version'").fetchone()
            if row is None:
                raise JournalError(f"{self.path} has no journal schema version. {DAMAGED}")
            (stored,) = row
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path} is not a jeeves journal or is damaged ({exc}).") from exc
        if not str(stored).isdigit() or int(stored) > SCHEMA_VERSION:
            raise JournalError(
                f"{self.path} was written by a newer jeeves (journal schema v{stored}; this jeeves reads up "
                f"to v{SCHEMA_VERSION}). Upgrade jeeves to read this journal."
            )

    def _check_tables(self, tables: set[str]) -> None:
        """A journal opened without `create` has every table jeeves makes: an empty file (a
        typo's, a `touch`'s) or one missing a table is said so, not silently made a journal
        (the file may not even be writable: a read-only journal is read as it is)."""
        if not tables:
            raise JournalError(
                f"{self.path} is an empty SQLite file, not a jeeves journal; record a run into it first "
                f"(jeeves run SPEC --journal {self.path})."
            )
        missing = sorted({"jeeves_journal", "sessions", "steps"} - tables)
        if missing:
            raise JournalError(f"{self.path} lacks the journal's table(s) {', '.join(missing)}. {DAMAGED}")

    # -- writes, on the event loop ---------------------------------------------------------
    async def _write(self, write: _Write) -> Any:
        """Commit `write` (with what this loop left behind, ahead of it) and return its value:
        at once, or, while another holds the file's write lock, with the loop's other writes
        once the lock is free (see the module)."""
        self._raise_left()
        if self._writer is None:
            await anyio.to_thread.run_sync(self._locked, _nothing)  # open the file, off the loop
        elif self._writer.total_changes - self._checkpoint_at >= CHECKPOINT_ROWS:
            await self._catch_up()
        key = running_loop()
        group = self._waiting.get(key)
        if group is not None and group.done is not None:  # a commit waits for the file: join it
            group.writes.append(write)
            await group.done.wait()
        else:
            if group is not None:  # what this loop left behind goes first
                del self._waiting[key]
                group.writes.append(write)
            else:
                group = _Group([write])
            await self._commit_group(key, group)
        if write.error is not None:
            if write.error is self._left_error:  # failed with what rode before it: heard once
                self._left_error = None
            raise write.error
        return write.value

    async def _commit_group(self, key: object, group: _Group) -> None:
        """Commit `group`'s writes: now, or once the write lock is free (see the module)."""
        failure: Exception | None = self._try(group)
        if failure is None or not is_transient(failure):
            return self._settle(group, failure)
        group.done = anyio.Event()  # the loop's next writes join it while it waits
        self._waiting[key] = group
        try:
            failure = await self._wait_out(group, failure)
        finally:
            if self._waiting.get(key) is group:
                del self._waiting[key]
            self._settle(group, failure)
            group.done.set()

    async def _wait_out(self, group: _Group, failure: Exception | None) -> Exception | None:
        """Try `group` again after growing pauses on the loop while the file is locked, up to
        the retry bound. Shielded: a cancelled caller's write is still committed, as if its
        caller had waited (the kernel writes a cancelled step's record again anyway)."""
        backoff = Backoff(str(self.path), self._retry_s, first_s=_FIRST_WAIT_S, most_s=_MOST_WAIT_S)
        with anyio.CancelScope(shield=True):
            while failure is not None and is_transient(failure):
                try:
                    pause = backoff.pause(failure)
                except Exception as exc:  # the bound passed: its `JournalError`
                    return exc
                await anyio.sleep(pause)
                failure = self._try(group)
        return failure

    def _try(self, group: _Group) -> Exception | None:
        try:
            self._commit(group.writes)
        except Exception as exc:
            return exc
        return None

    def _settle(self, group: _Group, error: BaseException | None) -> None:
        """Give each write of `group` its outcome (a write left behind that failed is raised by
        the loop's next call)."""
        if error is None:
            return
        if isinstance(error, sqlite3.DatabaseError):
            error = JournalError(f"{self.path}: {error}; the journal file is damaged or locked.")
        for write in group.writes:
            write.error = error
            if write.left and self._left_error is None:
                self._left_error = error

    def _commit(self, writes: list[_Write]) -> None:
        """Commit `writes` in one transaction, once: a locked file raises at once."""
        conn = self._writer
        if conn is None:
            raise JournalError(f"{self.path}: the journal is closed.")
        with self._write_lock:
            self._transaction(conn, writes)
        if conn.total_changes - self._checkpoint_at >= CHECKPOINT_ROWS:
            self._start_checkpoint(conn.total_changes)

    def _transaction(self, conn: sqlite3.Connection, writes: list[_Write]) -> None:
        conn.execute("BEGIN IMMEDIATE")  # take the write lock now (or fail at once: no busy timeout)
        try:
            for write in writes:
                write.value = write.run(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT leaves it open: the retry starts clean
                conn.execute("ROLLBACK")
            raise
        for write in writes:  # committed: write the steps through to the cache
            if write.step is not None:
                self._cache_step(write.step[0], write.step[1], write.args[2])

    async def _flush(self) -> None:
        """Commit what this loop left behind (or wait for its waiting commit)."""
        if running_loop() in self._waiting:
            await self._write(_Write(None, ()))

    def _raise_left(self) -> None:
        error, self._left_error = self._left_error, None
        if error is not None:
            raise error

    async def _write_call(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(connection, *args)` as one of the writes of a transaction (the event log's)."""
        value: T = await self._write(_Write(None, args, fn=fn))
        return value

    async def put_step(self, record: StepRecord) -> None:
        args = (record.session_id, record.index, encode_record(record))
        await self._write(_Write(_PUT_STEP, args, (record.session_id, record.index)))

    def _in_use(self) -> bool:
        return self._writer is not None

    def _leave_session(self, record: SessionRecord, text: str) -> None:
        self._raise_left()
        write = _session_write(record, text)
        write.left = True
        key = running_loop()
        group = self._waiting.get(key)
        if group is None:
            self._waiting[key] = _Group([write])
        else:
            group.writes.append(write)

    async def _write_session(self, record: SessionRecord, text: str) -> None:
        await self._write(_session_write(record, text))

    # -- checkpoints, in a thread of their own ---------------------------------------------
    def _start_checkpoint(self, rows: int) -> None:
        """Start a checkpoint in its thread, from `rows` rows written (unless one runs: then
        the next write waits for it, `_catch_up`)."""
        if self._checkpointer is not None and self._checkpointer.is_alive():
            return
        self._checkpoint_at = rows
        self._checkpointer = threading.Thread(
            target=self._checkpoint, name=f"jeeves checkpoint {self.path.name}", daemon=True
        )
        self._checkpointer.start()

    async def _catch_up(self) -> None:
        """Wait for a checkpoint still copying while as many rows again were written (the WAL's
        bound when writes outrun it): one of the loop's writers waits in a worker thread (the
        loop is not blocked), the others for it."""
        checkpointer = self._checkpointer
        if checkpointer is None or not checkpointer.is_alive():
            return
        key = running_loop()
        waiting = self._catching_up.get(key)
        if waiting is not None:
            await waiting.wait()
            return
        waiting = self._catching_up[key] = anyio.Event()
        try:
            await anyio.to_thread.run_sync(checkpointer.join)
        finally:
            del self._catching_up[key]
            waiting.set()

    def _checkpoint(self) -> None:
        """Copy the WAL back into the file: first beside the writers (PASSIVE), then what they
        added meanwhile, holding the write lock for that rest (RESTART: a writer meanwhile
        waits on its event loop, see `_wait_out`), so the next write starts the WAL over from
        its start and it stays bounded. A failure is left to the next checkpoint."""
        with self._lock:
            if self._conn is None:
                return
            conn = self._conn
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                conn.execute(f"PRAGMA busy_timeout = {_RESTART_WAIT_MS}")  # writers wait meanwhile: briefly
                try:
                    conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
                finally:
                    conn.execute("PRAGMA busy_timeout = 5000")
            except sqlite3.Error:
                return

    # -- reads ---------------------------------------------------------------------------
    _SELECT_STEPS = "SELECT idx, record FROM steps WHERE session_id = ?"
    _SELECT_INDICES = "SELECT idx FROM steps WHERE session_id = ? ORDER BY idx"
    _SELECT_SESSION = "SELECT record FROM sessions WHERE session_id = ?"
    _SELECT_SESSIONS = "SELECT session_id, record FROM sessions ORDER BY rowid"
    _SELECT_RUNS = "SELECT session_id, record FROM sessions WHERE instr(session_id, '__') = 0 ORDER BY rowid DESC LIMIT ?"
    _ALL = -1
    _TREE = "session_id = ? OR (session_id >= ? AND session_id < ?)"
    """A root and its subtree (`_tree`): the ids in [root__, root_`) are exactly those starting
    `root__` (the column's collation is binary), so the primary key's index finds them."""
    _SELECT_TREE = f"SELECT session_id, record FROM sessions WHERE {_TREE} ORDER BY rowid"

    @staticmethod
    def _tree(root: str) -> tuple[object, ...]:
        return (root, root + "__", root + "_`")

    def _rows(self, conn: sqlite3.Connection, sql: str, *args: object) -> list[Any]:
        return conn.execute(sql, args).fetchall()

    def _read_run(self, conn: sqlite3.Connection, root: str) -> tuple[list[Any], list[Any]]:
        where, args = f"WHERE {self._TREE}", self._tree(root)  # both statements search the index
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
        left = [group for group in self._waiting.values() if group.done is None]
        self._waiting.clear()
        try:
            writes = [write for group in left for write in group.writes]
            if writes and self._writer is not None:
                retry(functools.partial(self._commit, writes), where=str(self.path), bound_s=self._retry_s)
        finally:
            checkpointer = self._checkpointer
            if checkpointer is not None:
                checkpointer.join()
            with self._lock, self._write_lock:
                for conn in (self._writer, self._conn):
                    if conn is not None:
                        conn.close()
                self._conn = self._writer = None
                self._cache.clear()
        self._raise_left()

    async def aclose(self) -> None:
        """Commit what was left behind (on the loop), then close (in a worker thread)."""
        try:
            await self._flush()
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


class _Write:
    """One write of a transaction: its SQL and arguments (or `fn(connection, *args)`), the
    step it writes, if any (session id, index), for the cache; then its outcome."""

    __slots__ = ("args", "error", "fn", "left", "sql", "step", "value")

    def __init__(
        self,
        sql: str | None,
        args: tuple[Any, ...],
        step: tuple[str, int] | None = None,
        *,
        fn: Callable[..., Any] | None = None,
    ) -> None:
        self.sql, self.args, self.step, self.fn = sql, args, step, fn
        self.value: Any = None
        self.error: BaseException | None = None
        self.left = False
        """Whether it was left behind (`put_session`): nobody waits for it."""

    def run(self, conn: sqlite3.Connection) -> Any:
        if self.fn is not None:
            return self.fn(conn, *self.args)
        if self.sql is not None:
            conn.execute(self.sql, self.args)
        return None


class _Group:
    """Writes of one event loop committed together: those it left behind (`done` None), or
    those waiting for a locked file (`done` set once they are committed or failed)."""

    __slots__ = ("done", "writes")

    def __init__(self, writes: list[_Write]) -> None:
        self.writes = writes
        self.done: anyio.Event | None = None


def _session_write(record: SessionRecord, text: str) -> _Write:
    """The write of a session's record (`text`, its JSON)."""
    return _Write(_PUT_SESSION, (record.session_id, record.parent_id, text))


def _nothing(conn: sqlite3.Connection) -> None:
    """A call that only opens the file."""


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
