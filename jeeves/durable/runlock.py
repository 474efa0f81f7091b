"""`run_lock`: at most one worker executes a run at a time, whatever DBOS and takeover do.

DBOS's atomic dequeue gives a run to one worker, and a takeover fences the worker it
replaces; but a stalled worker can wake between the takeover and its next heartbeat and
go on with the run beside its successor. So the worker executing a run holds a PostgreSQL
session-level advisory lock keyed by the root session id, on a connection of its own, for
as long as it executes it. A second worker given the same run waits for the lock: it
starts only once the first is gone (its process ends, its connection closes, the lock goes
with it), then resumes from the journal, so no step runs in two workers at once.

A machine that vanishes (power, network) closes nothing: the server would keep its
connection, and the lock, until its TCP keepalive gives up (two hours by default). So the
lock's connection asks the server to probe it after `KEEPALIVE_IDLE_S` of silence, every
`KEEPALIVE_INTERVAL_S`, `KEEPALIVE_COUNT` times: a vanished holder's lock is released
within about 25 s, inside the default takeover time (over TCP; a unix socket has no
keepalive, and its peer is on the same machine anyway).

A worker keeps its lock connections between runs (`LockConnections`): a run takes an idle
one (or connects), and gives it back once it let go of the lock (`pg_advisory_unlock`), so
a worker opens a connection only when it holds more locks at once than ever before, never
one per run (a new connection costs the server several milliseconds of CPU, more than a
short run's steps: bench/results/DURABLE.md). A connection that fails, or whose lock
cannot be let go of, is closed instead: the session's end releases the lock.

A database restart ends the lock's session, and the lock with it, while the run goes on.
So the holder watches its connection (a duplicate of its socket, readable only when the
server sends something unasked: the notice of its end, or the socket's error), and when it
dies, connects again and takes the lock again, retried within the bound of
`jeeves.journal.retry` (`--db-retry-s`). A lock it cannot take back within that bound
(another worker holds it now) stops the run with a `JournalError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from jeeves.errors import JournalError
from jeeves.journal.postgres import display_url
from jeeves.journal.retry import aretry, db_retry_s

__all__ = ["LockConnections", "run_lock"]

_NAMESPACE = 0x6A76  # the first key of the two-key advisory lock: jeeves runs
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 10, 5, 3


@asynccontextmanager
async def run_lock(
    url: str, session_id: str, *, poll_s: float = 0.2, pool: LockConnections | None = None
) -> AsyncIterator[Any]:
    """Hold the run lock of `session_id` in database `url` while the block runs (waits for
    it; takes it again after a database restart); yields the connection that holds it,
    taken from `pool` and given back to it when one is passed."""
    holder = _Holder(url, session_id, poll_s, pool)
    await aretry(holder.take, where=holder.where, discard=holder.discard)
    try:
        async with anyio.create_task_group() as keeper:
            keeper.start_soon(holder.keep, keeper.cancel_scope)
            try:
                yield holder.conn
            finally:
                keeper.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the block's own error, not a group of one: the keeper never raises
        if len(group.exceptions) == 1:
            raise group.exceptions[0]  # noqa: B904 (its own cause is kept)
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await holder.release()
    if holder.lost is not None:
        raise holder.lost


class _Holder:
    """The connection holding one run's lock, and how it gets it (back)."""

    def __init__(self, url: str, session_id: str, poll_s: float, pool: LockConnections | None) -> None:
        self.url, self.session_id, self.poll_s, self.pool = url, session_id, poll_s, pool
        self.where = display_url(url)
        self.conn: Any = None
        self.lost: JournalError | None = None

    async def connect(self) -> None:
        await self.close()
        pooled = self.pool.take() if self.pool is not None else None
        self.conn = pooled if pooled is not None else await _connect(self.url)

    async def take(self) -> None:
        """Connect and wait for the lock."""
        await self.connect()
        await self.wait_lock()

    async def wait_lock(self) -> None:
        while True:  # polled: PostgreSQL tells no one when an advisory lock is released
            if await self.try_lock():
                return
            await anyio.sleep(self.poll_s)

    async def try_lock(self) -> bool:
        cursor = await self.conn.execute(
            "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (_NAMESPACE, self.session_id)
        )
        row = await cursor.fetchone()
        return bool(row is not None and row[0])

    async def retake(self) -> None:
        """After the lock's session died: connect again and take the lock back, waiting for
        it at most the retry bound (the server may not have ended the old session yet)."""
        await self.connect()
        with anyio.move_on_after(db_retry_s()):
            await self.wait_lock()
            return
        raise JournalError(
            f"{self.where}: the run lock of {self.session_id!r} was lost in a database fault and another "
            f"worker holds it now; this worker stops the run, which goes on there."
        )

    async def keep(self, scope: anyio.CancelScope) -> None:
        """Until cancelled: wait for the lock's connection to die, then take the lock back;
        a lock not taken back stops the run (`scope`) with the reason in `lost`."""
        while True:
            await self.died()
            try:
                await aretry(self.retake, where=self.where, discard=self.discard)
            except JournalError as exc:
                self.lost = exc
                scope.cancel()
                return

    async def died(self) -> None:
        """Return when the lock's connection is dead. Its socket turns readable with no query
        in flight only when the server ends the session (or the network fails it); a query
        the caller runs on the connection wakes this too, and the check then passes."""
        fd = os.dup(self.conn.pgconn.socket)  # a reader of its own beside psycopg's
        try:
            while True:
                await anyio.wait_readable(fd)
                try:
                    await self.conn.execute("SELECT 1")
                except Exception:  # whatever it says, the session is no use: take the lock anew
                    return
        finally:
            os.close(fd)

    async def release(self) -> None:
        """Let go of the lock: the connection back to the pool, unlocked, or closed (its
        session's end releases the lock)."""
        if self.conn is not None and self.pool is not None and self.lost is None:
            conn, self.conn = self.conn, None
            await self.pool.give(conn, self.session_id)
        await self.close()

    async def discard(self) -> None:
        """After a fault of the connection: close it, and the pool's idle ones, which the same
        restart most likely killed."""
        await self.close()
        if self.pool is not None:
            await self.pool.aclose()

    async def close(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                await conn.close()
            except Exception:  # already broken: nothing to release
                return


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


class LockConnections:
    """The idle run-lock connections of one worker (one event loop), kept between its runs:
    `aclose()` them when the worker stops."""

    def __init__(self, keep: int = 64) -> None:
        self.keep = keep
        self._idle: list[Any] = []

    def take(self) -> Any:
        """An idle connection that looks usable (a dead one fails its first statement, which
        `run_lock` retries on another), or None."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        return None

    async def give(self, conn: Any, session_id: str) -> None:
        """Unlock `session_id`'s lock on `conn` and keep it; closed instead when that fails
        or enough are kept (the session's end releases the lock then)."""
        import psycopg

        try:
            cursor = await conn.execute(
                "SELECT pg_advisory_unlock(%s, hashtext(%s))", (_NAMESPACE, session_id)
            )
            await cursor.fetchone()
            healthy = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        except Exception:  # broken: closing it is the release
            healthy = False
        if healthy and len(self._idle) < self.keep:
            self._idle.append(conn)
            return
        with contextlib.suppress(Exception):
            await conn.close()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.close()
