"""`run_lock`: at most one worker executes a run at a time, whatever DBOS and takeover do.

DBOS's atomic dequeue gives a run to one worker, and a takeover fences the worker it
replaces; but a stalled worker can wake between the takeover and its next heartbeat and
go on with the run beside its successor. So the worker executing a run holds a PostgreSQL
session-level advisory lock keyed by the root session id, for as long as it executes it.
A second worker given the same run waits for the lock: it starts only once the first is
gone (its process ends, its connection closes, the lock goes with it), then resumes from
the journal, so no step runs in two workers at once.

One connection holds all of a worker's run locks (`RunLocks`): a session-level lock belongs
to the connection, not to a transaction, so the locks of every run in flight live side by
side on it. Their statements go out together: the runs that start while a statement is in
flight take their locks in the next one, and a run that ends lets go of its lock with the
next statement, at the latest `UNLOCK_LINGER_S` later. A worker so sends a fraction of a
statement per run instead of two, and opens one connection for its locks, not one per run
(a new connection costs the server several milliseconds of CPU: bench/results/DURABLE.md).
Within the worker the locks are exclusive too: a run waits for another run of the same
session in this worker to end (the server would grant the lock twice on one connection).

A machine that vanishes (power, network) closes nothing: the server would keep its
connection, and the locks, until its TCP keepalive gives up (two hours by default). So the
lock connection asks the server to probe it after `KEEPALIVE_IDLE_S` of silence, every
`KEEPALIVE_INTERVAL_S`, `KEEPALIVE_COUNT` times: a vanished holder's locks are released
within about 25 s, inside the default takeover time (over TCP; a unix socket has no
keepalive, and its peer is on the same machine anyway).

A database restart ends the connection's session, and the locks with it, while the runs go
on. So `RunLocks` watches its connection (a duplicate of its socket, readable with no
statement in flight only when the server sends something unasked: the notice of its end,
or the socket's error), and when it dies, connects again and takes every held lock again,
retried within the bound of `jeeves.journal.retry` (`--db-retry-s`). A run whose lock
cannot be taken back within that bound (another worker holds it now) is stopped with a
`JournalError`.
"""

from __future__ import annotations

import functools
import os
import select
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from jeeves.errors import JournalError
from jeeves.journal.postgres import display_url
from jeeves.journal.retry import aretry, db_retry_s

__all__ = ["RunLocks", "run_lock"]

_NAMESPACE = 0x6A76  # the first key of the two-key advisory lock: jeeves runs
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 10, 5, 3
UNLOCK_LINGER_S = 0.05
"""How long a released lock waits for a statement to ride in before it is let go of alone."""

_STATEMENT = (
    "WITH gone AS (SELECT pg_advisory_unlock(%(ns)s, hashtext(u)) FROM unnest(%(unlock)s::text[]) AS u) "
    "SELECT (SELECT count(*) FROM gone), ARRAY(SELECT pg_try_advisory_lock(%(ns)s, hashtext(k)) "
    "FROM unnest(%(lock)s::text[]) WITH ORDINALITY AS t(k, i) ORDER BY i)"
)
"""One statement lets go of the released locks and tries the wanted ones (a session-level
lock counts: in either order, a session unlocked and locked again in one statement holds it)."""


@asynccontextmanager
async def run_lock(
    url: str, session_id: str, *, poll_s: float = 0.2, locks: RunLocks | None = None
) -> AsyncIterator[Any]:
    """Hold the run lock of `session_id` in database `url` while the block runs (waits for
    it; takes it again after a database restart); yields the connection that holds it:
    `locks`' (a worker's, serving), or one of its own when none is given."""
    if locks is None:
        async with RunLocks(url, poll_s=poll_s).serving() as own, own.hold(session_id) as conn:
            yield conn
        return
    async with locks.hold(session_id) as conn:
        yield conn


class _Request:
    """Locks wanted in the next statement; `granted` once it ran (or `error`)."""

    __slots__ = ("abandoned", "done", "error", "granted", "sids")

    def __init__(self, sids: list[str]) -> None:
        self.sids = sids
        self.done = anyio.Event()
        self.granted: set[str] = set()
        self.error: BaseException | None = None
        self.abandoned = False


class _Hold:
    """One run holding its lock: cancelled (`scope`) with the reason in `lost` when the lock
    is lost and not taken back; `released` once it let go (a run of its session waits)."""

    __slots__ = ("lost", "released", "scope")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.lost: JournalError | None = None
        self.released = anyio.Event()


class RunLocks:
    """The run locks of one worker (one event loop), all on one connection: use them inside
    `serving()`, which watches the connection and lets go of released locks."""

    def __init__(self, url: str, *, poll_s: float = 0.2) -> None:
        self.url, self.poll_s = url, poll_s
        self.where = display_url(url)
        self.conn: Any = None
        self._holds: dict[str, _Hold] = {}
        """The sessions a run of this worker holds, or is taking, the lock of."""
        self._held: set[str] = set()
        """The locks the connection holds for a run (taken back after a restart)."""
        self._requests: list[_Request] = []
        self._unlocks: list[str] = []
        self._sending: anyio.Event | None = None
        """Set once the statements in flight are done (None: none in flight)."""
        self._unlock_due = anyio.Event()
        self._connected = anyio.Event()
        """Set when a new connection was made (the watcher then watches it)."""
        self._connecting = anyio.Lock()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[RunLocks]:
        """Watch the connection and send the releases while the block runs; then close the
        connection, which lets go of whatever it still holds."""
        try:
            async with anyio.create_task_group() as keeper:
                keeper.start_soon(self._watch)
                keeper.start_soon(self._let_go)
                try:
                    yield self
                finally:
                    keeper.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # The block's own error, not a group of one: the keepers never raise.
            if len(group.exceptions) == 1:
                raise group.exceptions[0]  # noqa: B904 (its own cause is kept)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self._close()

    @asynccontextmanager
    async def hold(self, session_id: str) -> AsyncIterator[Any]:
        """Hold `session_id`'s lock while the block runs; a lost lock stops the block and
        raises its `JournalError`."""
        while (other := self._holds.get(session_id)) is not None:
            await other.released.wait()
        hold = self._holds[session_id] = _Hold()
        try:
            await aretry(
                functools.partial(self._wait_lock, session_id), where=self.where, discard=self._discard
            )
            self._held.add(session_id)
            with hold.scope:
                yield self.conn
        finally:
            del self._holds[session_id]
            hold.released.set()
            if session_id in self._held:
                self._held.discard(session_id)
                self._release([session_id])
        if hold.lost is not None:
            raise hold.lost

    async def _wait_lock(self, session_id: str) -> None:
        while True:  # polled: PostgreSQL tells no one when an advisory lock is released
            if session_id in await self._try([session_id]):
                return
            await anyio.sleep(self.poll_s)

    async def _try(self, sids: list[str]) -> set[str]:
        """Try the locks of `sids` in the next statement (this task sends it when none is in
        flight); the ones granted."""
        request = _Request(sids)
        self._requests.append(request)
        try:
            if self._sending is None:
                await self._send()
            else:
                await request.done.wait()
        except BaseException:
            request.abandoned = True
            if request.done.is_set():  # answered as this task was cancelled: let go of it
                self._release(request.granted)
            raise
        if request.error is not None:
            raise request.error
        return request.granted

    async def _send(self) -> None:
        """Send the statements due until none is (shielded: others wait on their answers)."""
        self._sending = sending = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                while self._requests or self._unlocks:
                    requests, self._requests = self._requests, []
                    unlocks, self._unlocks = self._unlocks, []
                    await self._statement(requests, unlocks)
        finally:
            self._sending = None
            sending.set()

    async def _statement(self, requests: list[_Request], unlocks: list[str]) -> None:
        wanted = [sid for request in requests for sid in request.sids]
        conn = None
        try:
            conn = await self._connection()
            cursor = await conn.execute(_STATEMENT, {"ns": _NAMESPACE, "unlock": unlocks, "lock": wanted})
            row = await cursor.fetchone()
        except Exception as exc:
            # Closed, whatever the fault: the released locks go with its session (the
            # watcher takes the held ones back on a new connection).
            if conn is not None and conn is self.conn:
                await self._close()
            for request in requests:
                request.error = exc
                request.done.set()
            return
        granted = dict(zip(wanted, row[1], strict=True))
        for request in requests:
            request.granted = {sid for sid in request.sids if granted[sid]}
            if request.abandoned:  # its taker is gone: let go of what it was given
                self._release(request.granted)
            request.done.set()

    def _release(self, sids: set[str] | list[str]) -> None:
        """Let go of `sids`' locks with the next statement, at the latest `UNLOCK_LINGER_S` on."""
        if sids:
            self._unlocks.extend(sids)
            self._unlock_due.set()

    async def _connection(self) -> Any:
        async with self._connecting:
            if self.conn is None or self.conn.closed:
                self.conn = await _connect(self.url)
                self._connected.set()
            return self.conn

    async def _let_go(self) -> None:
        """Until cancelled: send the released locks that no statement took along within
        `UNLOCK_LINGER_S`."""
        while True:
            await self._unlock_due.wait()
            await anyio.sleep(UNLOCK_LINGER_S)
            self._unlock_due = anyio.Event()
            if self._unlocks and self._sending is None:
                await self._send()

    async def _watch(self) -> None:
        """Until cancelled: wait for the connection to die, then take its locks back."""
        while True:
            await self._connected.wait()
            self._connected = anyio.Event()
            conn = self.conn
            if conn is None:
                continue
            await self._died(conn)
            if self.conn is conn:
                await self._close()
            if self._held:
                await self._take_back()

    async def _died(self, conn: Any) -> None:
        """Return when `conn` is dead. Its socket turns readable with no statement in flight
        only when the server ends the session (or the network fails it); a statement's answer
        wakes this too, and once it is read the socket is quiet again."""
        if conn.closed:
            return
        fd = os.dup(conn.pgconn.socket)  # a reader of its own beside psycopg's
        try:
            while True:
                await anyio.wait_readable(fd)
                while (sending := self._sending) is not None:
                    await sending.wait()
                if conn.closed:
                    return
                if not _readable(fd):
                    continue
                try:
                    await conn.execute("SELECT 1")
                except Exception:  # whatever it says, the session is no use: take the locks anew
                    return
        finally:
            os.close(fd)

    async def _take_back(self) -> None:
        """After the connection died: take every held lock again on a new one, waiting for
        each at most the retry bound once the database answers (the server may not have ended
        the old session yet); a run whose lock is not taken back is stopped, with the
        database's `JournalError` when it did not come back within the bound."""
        wanted = set(self._held)
        deadline: float | None = None
        failure: JournalError | None = None
        while wanted:
            try:
                granted = await aretry(
                    functools.partial(self._try, sorted(wanted)), where=self.where, discard=self._discard
                )
            except JournalError as exc:  # the database did not come back within the bound
                failure = exc
                break
            self._release(granted - self._held)  # their runs ended meanwhile
            wanted = (wanted - granted) & self._held
            deadline = time.monotonic() + db_retry_s() if deadline is None else deadline
            if not wanted or time.monotonic() >= deadline:
                break
            await anyio.sleep(self.poll_s)
        for sid in wanted & self._held:
            hold = self._holds[sid]
            self._held.discard(sid)
            hold.lost = failure or JournalError(
                f"{self.where}: the run lock of {sid!r} was lost in a database fault and another "
                f"worker holds it now; this worker stops the run, which goes on there."
            )
            hold.scope.cancel()

    async def _discard(self) -> None:
        """After a fault of the connection: close it (its session's end lets go of its locks;
        the watcher takes the held ones back)."""
        await self._close()

    async def _close(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                await conn.close()
            except Exception:  # already broken: nothing to release
                return


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


async def _connect(url: str) -> Any:
    """A new lock connection, which asks the server to probe it (see the module docstring)."""
    import psycopg

    conn = await psycopg.AsyncConnection.connect(
        url,
        autocommit=True,
        connect_timeout=10,
        keepalives=1,  # this side notices a vanished server too
        keepalives_idle=KEEPALIVE_IDLE_S,
        keepalives_interval=KEEPALIVE_INTERVAL_S,
        keepalives_count=KEEPALIVE_COUNT,
    )
    try:
        for setting, value in (
            ("tcp_keepalives_idle", KEEPALIVE_IDLE_S),
            ("tcp_keepalives_interval", KEEPALIVE_INTERVAL_S),
            ("tcp_keepalives_count", KEEPALIVE_COUNT),
        ):
            await conn.execute(f"SET {setting} = {int(value)}")
    except BaseException:
        with anyio.CancelScope(shield=True):
            await conn.close()
        raise
    return conn
