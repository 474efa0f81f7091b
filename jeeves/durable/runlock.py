"""`run_lock`: at most one worker executes a run at a time, whatever DBOS and takeover do.

DBOS's atomic dequeue gives a run to one worker, and a takeover fences the worker it
replaces; but a stalled worker can wake between the takeover and its next heartbeat and
go on with the run beside its successor. So the worker executing a run holds a PostgreSQL
session-level advisory lock keyed by the root session id, on a connection of its own, for
as long as it executes it. A second worker given the same run waits for the lock: it
starts only once the first is gone (its process ends, its connection closes, the lock goes
with it), then resumes from the journal, so no step runs in two workers at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

__all__ = ["run_lock"]

_NAMESPACE = 0x6A76  # the first key of the two-key advisory lock: jeeves runs


@asynccontextmanager
async def run_lock(url: str, session_id: str, *, poll_s: float = 0.2) -> AsyncIterator[None]:
    """Hold the run lock of `session_id` in database `url` while the block runs (waits for it)."""
    import psycopg

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=10)
    try:
        while True:
            row = await (
                await conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (_NAMESPACE, session_id))
            ).fetchone()
            if row is not None and row[0]:
                break
            await anyio.sleep(poll_s)
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await conn.close()  # ends the session, which releases its advisory locks
