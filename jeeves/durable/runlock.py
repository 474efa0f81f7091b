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
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

__all__ = ["run_lock"]

_NAMESPACE = 0x6A76  # the first key of the two-key advisory lock: jeeves runs
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT = 10, 5, 3


@asynccontextmanager
async def run_lock(url: str, session_id: str, *, poll_s: float = 0.2) -> AsyncIterator[Any]:
    """Hold the run lock of `session_id` in database `url` while the block runs (waits for
    it); yields the connection that holds it."""
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
        while True:
            row = await (
                await conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (_NAMESPACE, session_id))
            ).fetchone()
            if row is not None and row[0]:
                break
            await anyio.sleep(poll_s)
        yield conn
    finally:
        with anyio.CancelScope(shield=True):
            await conn.close()  # ends the session, which releases its advisory locks
