"""What the SQL stores share: the step cache and the reads, over one table layout.

`SQLiteJournal` and `PostgresJournal` keep the same two tables (sessions, steps) and read
them the same way; they differ in how a statement reaches the database (SQLite: writes
committed on the event loop, reads in a worker thread on a connection of their own;
PostgreSQL: a batch on a kept connection, in its thread), in their SQL dialect and
in how they write. A subclass gives `_call` (run `fn(connection, *args)` off the event
loop), `_rows`, `_read_run` and its statements; this base does the rest.

Both leave a child session's record behind (`put_session`): its writer does not wait for
it, and it is committed in order with the store's next call.

Steps of recently used sessions are cached, written through once a write is committed
(never before: a write that fails leaves no trace), so a replay or a resume reads each
session's steps in one query. A session read while a step was written (from another thread)
is returned but not cached: its rows may lack that step.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from jeeves.errors import JournalError
from jeeves.journal.records import DAMAGED, SessionRecord, StepRecord, excerpt
from jeeves.journal.snapshot import RunSnapshot
from jeeves.journal.store import StoreBase, decode_text, encode_record

__all__ = ["SQLStore"]

T = TypeVar("T")
R = TypeVar("R", StepRecord, SessionRecord)


_MOST_ROWS = 2**62
"""More rows than any journal holds, and a LIMIT every SQL database takes (a 64-bit integer)."""


class SQLStore(StoreBase):
    """The reads and the step cache of a store over the sessions and steps tables."""

    path: Any
    """What error messages name the store by (a file path, a URL with its password masked)."""

    _SELECT_STEPS: str
    """A session's steps: (idx, record) rows, one parameter (the session id)."""
    _SELECT_INDICES: str
    """A session's step indices, ordered."""
    _SELECT_SESSION: str
    """One session's record."""
    _SELECT_SESSIONS: str
    """Every (session_id, record), in the order first recorded."""
    _SELECT_RUNS: str
    """The root sessions' (session_id, record), the last first; one parameter: how many
    (`_ALL` for every one)."""
    _ALL: object
    """`_SELECT_RUNS`'s parameter for no limit."""
    _TREE: str
    """The condition on `session_id` that holds for a root and its subtree; parameters:
    `_tree(root)`."""
    _SELECT_TREE: str
    """(session_id, record) of a root and its subtree (`_TREE`), in the order first recorded."""

    def __init__(self, cached_sessions: int) -> None:
        self._cache: OrderedDict[str, dict[int, str]] = OrderedDict()
        self._cache_size = max(1, cached_sessions)
        self._cache_lock = threading.Lock()
        """Between a session's steps read in one thread and steps written in another."""
        self._written = 0
        """Steps written through so far: a session read while one was written is not cached."""

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        raise NotImplementedError

    def _rows(self, conn: Any, sql: str, *args: object) -> list[Any]:
        raise NotImplementedError

    def _read_run(self, conn: Any, root: str) -> tuple[list[Any], list[Any]]:
        raise NotImplementedError

    @staticmethod
    def _tree(root: str) -> tuple[object, ...]:
        """`_TREE`'s parameters for `root` and its subtree."""
        raise NotImplementedError

    # -- steps -------------------------------------------------------------------------
    def _session_steps(self, conn: Any, session_id: str) -> dict[int, str]:
        with self._cache_lock:
            steps = self._cache.get(session_id)
            if steps is not None:
                self._cache.move_to_end(session_id)
                return steps
            written = self._written
        rows = self._rows(conn, self._SELECT_STEPS, session_id)
        steps = {int(idx): str(text) for idx, text in rows}
        with self._cache_lock:
            if self._written == written:  # no step committed meanwhile that the rows may lack
                self._cache[session_id] = steps
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return steps

    def _cache_step(self, session_id: str, index: int, text: str) -> None:
        """A committed step, written through to a cached session."""
        with self._cache_lock:
            self._written += 1
            cached = self._cache.get(session_id)
            if cached is not None:
                cached[index] = text

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        cached = self._cache.get(session_id)
        steps = cached if cached is not None else await self._call(self._session_steps, session_id)
        text = steps.get(index)
        return None if text is None else self._step(session_id, index, text)

    def _step(self, session_id: str, index: int, text: str) -> StepRecord:
        what = f"session {session_id!r} step {index}"
        record = self._decode(text, what, StepRecord)
        if (record.session_id, record.index) != (session_id, index):  # a row copied or edited by hand
            raise JournalError(
                f"{self.path} ({what}): the row holds step {record.index} of {excerpt(record.session_id)}. {DAMAGED}"
            )
        return record

    async def step_indices(self, session_id: str) -> list[int]:
        cached = self._cache.get(session_id)
        if cached is not None:  # written through, so as current as the table for this object
            return sorted(cached)
        rows = await self._call(self._rows, self._SELECT_INDICES, session_id)
        return [int(idx) for (idx,) in rows]

    # -- sessions ------------------------------------------------------------------------
    async def put_session(self, record: SessionRecord) -> None:
        """Committed on return, except a child's record (its start, its end) once the store is
        in use: nothing waits on it (a run resumed after a crash writes it again), so it is
        left behind, to be committed in order with this event loop's next call on the store,
        at the latest the root's next record, which every run writes as it ends and waits
        for (or at `aclose`). A left-behind write that failed is raised by the next call."""
        text = encode_record(record)
        if record.parent_id is not None and self._in_use():
            self._leave_session(record, text)
        else:
            await self._write_session(record, text)

    def _in_use(self) -> bool:
        """Whether a call reached the database (its first one must be waited for)."""
        raise NotImplementedError

    def _leave_session(self, record: SessionRecord, text: str) -> None:
        """Queue `record` behind, without waiting (see `put_session`)."""
        raise NotImplementedError

    async def _write_session(self, record: SessionRecord, text: str) -> None:
        """Write `record` and wait until it is committed."""
        raise NotImplementedError

    async def get_session(self, session_id: str) -> SessionRecord | None:
        rows = await self._call(self._rows, self._SELECT_SESSION, session_id)
        if not rows:
            return None
        return self._decode(str(rows[0][0]), f"session {session_id!r}", SessionRecord)

    async def sessions(self, root: str | None = None) -> list[SessionRecord]:
        if root is None:
            rows = await self._call(self._rows, self._SELECT_SESSIONS)
        else:
            rows = await self._call(self._rows, self._SELECT_TREE, *self._tree(root))
        return [self._decode(str(text), f"session {sid!r}", SessionRecord) for sid, text in rows]

    async def runs(self, last: int | None = None) -> list[SessionRecord]:
        """The root sessions, one a run, in the order first recorded (only the latest `last`
        when given): one query that reads and decodes no child session."""
        if last is not None and last <= 0:
            return []
        every = last is None or last > _MOST_ROWS  # a LIMIT past a 64-bit integer: every run
        rows = await self._call(self._rows, self._SELECT_RUNS, self._ALL if every else last)
        return [self._decode(str(text), f"session {sid!r}", SessionRecord) for sid, text in reversed(rows)]

    # -- a whole run ---------------------------------------------------------------------
    async def read_run(self, root: str) -> RunSnapshot:
        """Root session `root` and its subtree, every session and step, read in one round trip
        (one query per table) and decoded on first use."""
        session_rows, step_rows = await self._call(self._read_run, root)
        return RunSnapshot.from_rows(
            session_rows,
            step_rows,
            decode_session=lambda sid, text: self._decode(text, f"session {sid!r}", SessionRecord),
            decode_step=self._step,
        )

    def _decode(self, text: str, what: str, cls: type[R]) -> R:
        return decode_text(text, f"{self.path} ({what})", cls)
