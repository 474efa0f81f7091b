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

A database restart ends the lock's session, and the lock with it, while the run goes on.
So the holder watches its connection (a duplicate of its socket, readable only when the
server sends something unasked: the notice of its end, or the socket's error), and when it
dies, connects again and takes the lock again, retried within the bound of
`jeeves.journal.retry` (`--db-retry-s`). A lock it cannot take back within that bound
(another worker holds it now) stops the run with a `JournalError`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from jeeves.errors import JournalError
from jeeves.journal.postgres import display_url
from jeeves.journal.retry import aretry, db_retry_s

__all__ = ["run_lock"]

_NAMESPACE = 0x6A76  # the first key of the two-key advisory lock: jeeves runs
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 10, 5, 3


@asynccontextmanager
async def run_lock(url: str, session_id: str, *, poll_s: float = 0.2) -> AsyncIterator[Any]:
    """Hold the run lock of `session_id` in database `url` while the block runs (waits for
    it; takes it again after a database restart); yields the connection that holds it."""
    holder = _Holder(url, session_id, poll_s)
    await aretry(holder.take, where=holder.where, discard=holder.close)
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
            await holder.close()  # ends the session, which releases its advisory locks
    if holder.lost is not None:
        raise holder.lost


class _Holder:
    """The connection holding one run's lock, and how it gets it (back)."""

    def __init__(self, url: str, session_id: str, poll_s: float) -> None:
        self.url, self.session_id, self.poll_s = url, session_id, poll_s
        self.where = display_url(url)
        self.conn: Any = None
        self.lost: JournalError | None = None

    async def connect(self) -> None:
        import psycopg

        await self.close()
        self.conn = await psycopg.AsyncConnection.connect(
            self.url,
            autocommit=True,
            connect_timeout=10,
            keepalives=1,  # this side notices a vanished server too
            keepalives_idle=KEEPALIVE_IDLE_S,
            keepalives_interval=KEEPALIVE_INTERVAL_S,
            keepalives_count=KEEPALIVE_COUNT,
        )
        for setting, value in (
            ("tcp_keepalives_idle", KEEPALIVE_IDLE_S),
            ("tcp_keepalives_interval", KEEPALIVE_INTERVAL_S),
            ("tcp_keepalives_count", KEEPALIVE_COUNT),
        ):
            await self.conn.execute(f"SET {setting} = {int(value)}")

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
                await aretry(self.retake, where=self.where, discard=self.close)
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

    async def close(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                await conn.close()
            except Exception:  # already broken: nothing to release
                return
