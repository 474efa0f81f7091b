"""PostgresJournal: many runs, many writers, one PostgreSQL database.

The store for runs that outgrow one machine: any number of processes on any number of
machines record into one database, and `jeeves runs` / `jeeves replay` read it by URL
(`postgresql://user@host/db`). It keeps the contract of the SQLite store: the same
records, as the same JSON text, under the same schema version (table `jeeves_journal`
says which), a newer schema refused, every record committed before the step returns.

Many writers: every write is one statement, an upsert keyed by
`(session_id, idx)` for steps and `session_id` for sessions (`ON CONFLICT DO UPDATE`, so
a step made again after a takeover replaces the stopped one, the last status of a
session wins, and no writer ever sees a unique violation). The tables are created under
a transaction-scoped advisory lock, so processes starting together on an empty database
do not race on `CREATE TABLE`.

Rows hold the record as JSON text (not `jsonb`, which would reorder keys and refuse the
damage a replay must report), next to the columns it is looked up by. A record holds
whatever `StepRecord` / `SessionRecord` holds; new fields need no new columns.

Reading: the steps of a session are read in one query on its first use and kept
(write-through, once committed), so a replay reads each session once. A store object
therefore belongs to one process's view of a run: a worker opens one per run it executes,
and a run is executed by one worker at a time (`jeeves.durable`). A run's sessions (a strict
replay's read, `jeeves approve`) are found through an index, never by reading the table
(`jeeves_sessions_tree`: the ids by their bytes, so a subtree is one range of it), and
their steps through the steps' primary key, whatever the journal holds besides; the latest
runs (`jeeves runs --last N`, the explorer's list) through another (`jeeves_sessions_runs`).

Talking to the server: every call of every store of an event loop on one database joins
a batch, and a batch is one transaction in a thread of the batches' own
(`jeeves.journal.handoff`, so the event loop never waits on the network, on asyncio and
trio alike) on a connection the
process keeps (`jeeves.journal.pgbatch`: group commit). A call returns once its batch
committed, so a step is durable before its result is used, and concurrent runs share
transactions instead of each paying its own. A batch that meets a fault of the connection
(a server restart, a dead pooled connection) is sent again on a new one, for at most the
retry bound (`jeeves.journal.retry`, `--db-retry-s`); past it, a `JournalError` names the
database and says to resume. Needs psycopg 3 (`pip install "jeeves[postgres]"`); `import
jeeves` does not import it.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from jeeves.errors import JournalError, UserError
from jeeves.journal.pgbatch import Call, Group, Merge, group_for, transaction
from jeeves.journal.records import SCHEMA_VERSION, SessionRecord, StepRecord
from jeeves.journal.retry import is_transient
from jeeves.journal.sql import SQLStore
from jeeves.journal.store import encode_record

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresJournal", "is_database_url", "display_url"]

T = TypeVar("T")
R = TypeVar("R", StepRecord, SessionRecord)
_TABLES_SEEN: set[tuple[str, bool]] = set()
"""Databases whose journal tables this process found (a committed check), for a reader
(`create=False`) or a recorder (which also found or made its indexes): a new store there of
the same kind reads only their version."""

_SCHEMES = ("postgresql://", "postgres://")
_LOCK_KEY = 0x6A65657665  # "jeeve": serialises schema creation across processes

_ROOT = "strpos(session_id, '__') = 0"
"""A root session's row (a run's): its id holds no `__`. Written once, for the runs' index and
the query it serves to match."""
_INDEXES = {
    "jeeves_sessions_tree": "CREATE INDEX IF NOT EXISTS jeeves_sessions_tree "
    "ON jeeves_sessions (session_id text_pattern_ops)",
    "jeeves_sessions_runs": f"CREATE INDEX IF NOT EXISTS jeeves_sessions_runs ON jeeves_sessions (seq) WHERE {_ROOT}",
}
"""The journal's indexes beyond its primary keys, so that no read of one run or of the latest
runs reads the table: `jeeves_sessions_tree` orders the session ids by their bytes (the primary
key follows the database's collation), so a run's subtree is a range of it (`_TREE`);
`jeeves_sessions_runs` holds the root sessions in the order first recorded (`runs(last)`). A
journal made before them gets them when a jeeves that records opens it (`_add_indexes`)."""
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS jeeves_journal (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS jeeves_sessions ("
    " seq BIGSERIAL NOT NULL, session_id TEXT PRIMARY KEY, parent_id TEXT, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS jeeves_steps ("
    " session_id TEXT NOT NULL, idx INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (session_id, idx))",
    *_INDEXES.values(),
)
_PRESENT = "SELECT " + ", ".join(
    f"to_regclass('{name}') IS NOT NULL" for name in ("jeeves_journal", *_INDEXES)
)
"""Whether the journal's tables exist (`jeeves_journal` says so), then each of `_INDEXES`."""
_ROWS = "jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t(e, n)"
"""A batch's rows, sent as one JSON array and parsed once as `jsonb`: as `json` every `->>`
parses its element's text again, three times a row here (bench/results/DURABLE_NOTES.md,
stop 39). A record is a JSON string in it, so `->>` gives back its exact text either way."""
_PUT_STEPS = (
    f"INSERT INTO jeeves_steps (session_id, idx, record) SELECT e->>0, (e->>1)::integer, e->>2 FROM {_ROWS} "
    "ORDER BY n ON CONFLICT (session_id, idx) DO UPDATE SET record = excluded.record"
)
_PUT_SESSION = (
    "INSERT INTO jeeves_sessions (session_id, parent_id, record) VALUES (%s, %s, %s) "
    "ON CONFLICT (session_id) DO UPDATE SET record = excluded.record"
)
_PUT_SESSIONS = (
    f"INSERT INTO jeeves_sessions (session_id, parent_id, record) SELECT e->>0, e->>1, e->>2 FROM {_ROWS} "
    "ORDER BY n ON CONFLICT (session_id) DO UPDATE SET record = excluded.record"
)
"""The writes of a batch's `put_step`s and `put_session`s, each kind in one statement
(`jeeves.journal.pgbatch.Merge`), in the order they were made."""


def is_database_url(target: object) -> bool:
    """Whether `target` is a PostgreSQL URL (`postgresql://...` or `postgres://...`)."""
    return isinstance(target, str) and target.startswith(_SCHEMES)


_USERINFO_PASSWORD = re.compile(r"(://[^:/@?]*:)([^@/?]*)@")
_PARAM_PASSWORD = re.compile(r"(?i)(password=)([^&]*)")
"""Where a URL holds its password: `user:PASSWORD@host`, or a `password=` parameter."""


@functools.lru_cache(maxsize=32)
def display_url(url: str) -> str:
    """`url` with its password masked, for messages and listings (a worker asks at every run)."""
    return _PARAM_PASSWORD.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1***@", url))


def driver_message(exc: BaseException, url: str) -> str:
    """A database driver's error as one short line (`_line`), the URL it may quote shown as
    `display_url` shows it and its password masked wherever else it appears."""
    text = _line(exc).replace(url, display_url(url))
    found = _USERINFO_PASSWORD.search(url) or _PARAM_PASSWORD.search(url)
    password = found.group(2) if found else ""
    return text.replace(password, "***") if len(password) >= 4 else text  # a shorter one would mask words


def checked_url(url: str) -> str:
    """`url` if libpq can read it, else a UserError that names it (password masked) and the
    form to write: before any connection, so a malformed URL is one line, never a traceback
    quoting the password."""
    psycopg = _psycopg()
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise UserError(
            f"{display_url(url)} is not a PostgreSQL URL libpq can read ({driver_message(exc, url)}); "
            f"write postgresql://USER:PASSWORD@HOST:PORT/DBNAME."
        ) from None
    return url


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise UserError(
            "A PostgreSQL journal needs psycopg, which is not installed; install it with "
            "`pip install 'jeeves[postgres]'` (or 'jeeves[dbos]' for workers)."
        ) from exc
    return psycopg


class PostgresJournal(SQLStore):
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
        self.url = checked_url(url)
        self.path = display_url(url)
        """Where the journal is, as messages name it (the URL without its password)."""
        self._create = create
        self._retry_s = retry_s
        self._ready = False
        self._left: Any = None
        """The batch holding this store's last write-behind (`_leave`), until it went out."""
        self._behind_error: BaseException | None = None
        """Whether a committed call of this store found the journal's tables (and their version)."""
        super().__init__(cached_sessions)

    # -- the connection ------------------------------------------------------------------
    async def _call(
        self,
        fn: Callable[..., T],
        *args: object,
        after: Callable[[T], None] | None = None,
        lazy: bool = False,
        merge: Merge | None = None,
    ) -> T:
        """`fn(conn, *args)` in the next batch of this event loop's calls on this database
        (`jeeves.journal.pgbatch`, `lazy` there): returns once its transaction committed, then
        `after(value)` has run. A store's first call checks the journal's tables in the same
        transaction (once a batch for all the stores of this database whose first call is in
        it). A write this store left behind that failed is raised here first."""
        self._raise_left_behind()
        group = self._group()
        prepare = None if self._ready else self._prepare
        call = Call(
            fn,
            args,
            prepare=prepare,
            prepare_key=(self.url, self._create),  # every store's check of this database is the same
            after=after if prepare is None else self._prepared(after),
            merge=merge,
        )
        value: T = await group.call(call, self._retry_s, lazy=lazy)
        return value

    def _group(self) -> Group:
        return group_for(self.url, self.path, self._connect, self._translate)

    def _leave(self, fn: Callable[..., Any], *args: object, merge: Merge) -> None:
        """Write-behind: `fn(conn, *args)` joins the open batch and this returns at once; it is
        committed in order with the next call any store of this event loop awaits on this
        database (at the latest `aclose`), and its error is raised by this store's next call."""
        self._raise_left_behind()
        self._left = self._group().post(Call(fn, args, merge=merge), self._failed_behind)

    def _failed_behind(self, error: BaseException) -> None:
        if self._behind_error is None:
            self._behind_error = error

    def _raise_left_behind(self) -> None:
        error, self._behind_error = self._behind_error, None
        if error is not None:
            raise error

    async def _flush_left(self) -> None:
        """Wait until what this store left behind is committed (a batch that carries it)."""
        if self._left is not None and not self._left.done.is_set():
            call = Call(_nothing, ())
            await self._group().call(call, self._retry_s)
        self._left = None

    def _prepared(self, after: Callable[[T], None] | None) -> Callable[[T], None]:
        def committed(value: T) -> None:
            self._ready = True
            _TABLES_SEEN.add((self.url, self._create))
            if after is not None:
                after(value)

        return committed

    def _connect(self) -> psycopg.Connection[Any]:
        return _psycopg().connect(self.url, autocommit=True, connect_timeout=10)  # type: ignore[no-any-return]

    def _translate(self, exc: BaseException) -> BaseException:
        """A database error as the JournalError a caller hears (others pass as they are)."""
        psycopg = _psycopg()
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):  # never reached
            error = JournalError(
                f"{self.path}: cannot connect to the journal database ({driver_message(exc, self.url)}); check the URL and "
                f"that the server is running."
            )
        elif isinstance(exc, psycopg.Error):
            error = JournalError(
                f"{self.path}: {driver_message(exc, self.url)}; the journal database refused it."
            )
        else:
            return exc
        error.__cause__ = exc
        return error

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        """Check (and, recording, create) the journal's tables: once a process saw them on
        this database, only their version is read again (it may have moved)."""
        if (self.url, self._create) not in _TABLES_SEEN:
            self._create_tables(conn)
        self._check_version(conn)

    def _create_tables(self, conn: psycopg.Connection[Any]) -> None:
        psycopg = _psycopg()
        try:
            with transaction(conn):
                found = conn.execute(_PRESENT).fetchone()
                tables, *indexed = found if found else (False,)
                if not tables:
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
                elif self._create and not all(indexed):  # a reader alone does without them
                    self._add_indexes(
                        conn, [sql for sql, done in zip(_INDEXES.values(), indexed, strict=True) if not done]
                    )
        except psycopg.Error as exc:
            if is_transient(exc):  # the connection failed: retried on a new one
                raise
            raise JournalError(f"{self.path}: cannot prepare the journal tables ({_line(exc)}).") from exc

    def _add_indexes(self, conn: psycopg.Connection[Any], statements: list[str]) -> None:
        """Give a journal made before some of `_INDEXES` the ones it lacks (once, under the
        schema lock; building blocks writes of sessions). A role that may not (only the
        tables' owner may index them) records on, warned once in one line that reading one
        run or the latest runs reads every session, and what to run to mend it."""
        psycopg = _psycopg()
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        for statement in statements:
            try:
                with conn.transaction():  # a savepoint: a refusal leaves the batch's transaction whole
                    conn.execute(statement)
            except psycopg.errors.InsufficientPrivilege as exc:
                warnings.warn(
                    f"{self.path}: this role may not add the journal's indexes ({_line(exc)}), so reading one "
                    f"run or the latest runs reads every session; run as the tables' owner: "
                    f"{'; '.join(statements)}",
                    stacklevel=1,
                )
                return

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

    # -- writes ------------------------------------------------------------------------
    def _put_step(self, conn: psycopg.Connection[Any], record: StepRecord, text: str) -> None:
        conn.execute(
            "INSERT INTO jeeves_steps (session_id, idx, record) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id, idx) DO UPDATE SET record = excluded.record",
            (record.session_id, record.index, text),
        )

    async def put_step(self, record: StepRecord) -> None:
        text = encode_record(record)
        await self._call(
            self._put_step,
            record,
            text,
            after=lambda _: self._cache_step(record.session_id, record.index, text),
            merge=Merge(_PUT_STEPS, (record.session_id, record.index, text), 2),
        )

    _SELECT_STEPS = "SELECT idx, record FROM jeeves_steps WHERE session_id = %s"
    _SELECT_INDICES = "SELECT idx FROM jeeves_steps WHERE session_id = %s ORDER BY idx"
    _SELECT_SESSION = "SELECT record FROM jeeves_sessions WHERE session_id = %s"
    _SELECT_SESSIONS = "SELECT session_id, record FROM jeeves_sessions ORDER BY seq"
    _SELECT_RUNS = f"SELECT session_id, record FROM jeeves_sessions WHERE {_ROOT} ORDER BY seq DESC LIMIT %s"
    """The latest runs, newest first: read backwards along `jeeves_sessions_runs`."""
    _ALL = None  # LIMIT NULL: every row
    _TREE = "session_id = %s OR (session_id ~>=~ %s AND session_id ~<~ %s)"
    """A root and its subtree (`_tree`): the ids in [root__, root_`) compared by their bytes
    (`~>=~`, `~<~`, whatever the database's collation) are exactly those starting `root__`,
    so the `jeeves_sessions_tree` index finds them."""
    _SELECT_TREE = f"SELECT session_id, record FROM jeeves_sessions WHERE {_TREE} ORDER BY seq"
    _READ_RUN = (
        f"WITH tree AS (SELECT seq, session_id, record FROM jeeves_sessions WHERE {_TREE}) "
        "SELECT seq, session_id, NULL::integer, record FROM tree "
        "UNION ALL SELECT NULL, s.session_id, s.idx, s.record FROM jeeves_steps s JOIN tree USING (session_id)"
    )
    """A run's sessions (with their seq) and their steps, in one statement: one snapshot of
    both tables; the steps found session by session through their primary key."""

    @staticmethod
    def _tree(root: str) -> tuple[object, ...]:
        return (root, root + "__", root + "_`")

    # -- sessions ------------------------------------------------------------------------
    def _rows(self, conn: psycopg.Connection[Any], sql: str, *args: object) -> list[Any]:
        cursor = conn.execute(sql, args)
        return cursor.fetchall() if cursor.description is not None else []

    def _in_use(self) -> bool:
        return self._ready

    def _leave_session(self, record: SessionRecord, text: str) -> None:
        args = (record.session_id, record.parent_id, text)
        self._leave(self._rows, _PUT_SESSION, *args, merge=Merge(_PUT_SESSIONS, args, 1))

    async def _write_session(self, record: SessionRecord, text: str) -> None:
        args = (record.session_id, record.parent_id, text)
        await self._call(self._rows, _PUT_SESSION, *args, merge=Merge(_PUT_SESSIONS, args, 1))

    # -- a whole run ---------------------------------------------------------------------
    def _read_run(self, conn: psycopg.Connection[Any], root: str) -> tuple[list[Any], list[Any]]:
        rows = conn.execute(self._READ_RUN, self._tree(root)).fetchall()
        sessions = sorted((seq, sid, text) for seq, sid, idx, text in rows if idx is None)
        steps = [(sid, idx, text) for seq, sid, idx, text in rows if idx is not None]
        return [(sid, text) for _, sid, text in sessions], steps

    # -- closing -------------------------------------------------------------------------
    def close(self) -> None:
        """Forget what this store read; its connections belong to the process (`_pgbatch`)."""
        self._cache.clear()

    async def aclose(self) -> None:
        """Commit what this store left behind, then close it (raising a left-behind write's
        error)."""
        try:
            await self._flush_left()
            self._raise_left_behind()
        finally:
            self.close()

    def __repr__(self) -> str:
        return f"PostgresJournal({self.path!r})"


def _nothing(conn: Any) -> None:
    """A call that only rides a batch (to wait until the calls before it are committed)."""


def _line(exc: BaseException) -> str:
    """A database error as one short line (libpq messages span lines)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."
