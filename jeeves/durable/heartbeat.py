"""Heartbeats and takeover: what jeeves adds to DBOS so a dead worker's runs go on elsewhere.

DBOS recovers a workflow only on the executor that started it (at its next launch) or when
asked to recover an executor's workflows. A worker on a machine that never comes back
would leave its runs pending forever. So every worker keeps a row in `jeeves_workers`
(worker id = its DBOS executor id) and renews `heartbeat_at` every `heartbeat_s`, with
the database server's clock (no skew between machines). At each beat it also claims, in
one `UPDATE ... RETURNING`, the workers whose heartbeat is older than `takeover_after_s`:
the row flips from `alive` to `dead` exactly once, so exactly one live worker hands their
pending workflows back to their queues (DBOS's own recovery, which re-enqueues them; the
queue's atomic dequeue then admits one runner). The run starts again from its journal:
completed steps are served, the step that was in flight runs again under the same
`(session_id, step)` key.

A worker that was itself cut off (the database restarted, the network dropped) never
declares the others dead on its return: it claims only workers whose lease lapsed while it
was connected, so it first gives them one takeover period from its reconnection to beat
again (`beat`). An outage longer than the takeover time therefore takes nobody over, and a
worker that really died is taken over one takeover period after the database came back.

Fencing: a worker that finds its own row `dead` (it stalled past the takeover time, and its
runs now belong to another) stops at once, so a stall cannot become two runners for long.
A worker that stops cleanly marks its heartbeat expired after its runs are cancelled, so
another worker takes them over at its next beat instead of after the timeout.

The beat runs in a thread with its own connection: a busy event loop does not miss beats.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from jeeves.errors import UserError
from jeeves.journal.postgres import display_url, driver_message
from jeeves.journal.retry import retry

__all__ = ["Heartbeat"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS jeeves_workers ("
    " worker_id TEXT PRIMARY KEY, status TEXT NOT NULL, heartbeat_at TIMESTAMPTZ NOT NULL,"
    " started_at TIMESTAMPTZ NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,"
    " taken_over_by TEXT, taken_over_at TIMESTAMPTZ)"
)
_LOCK_KEY = 0x6A65657666


class Heartbeat:
    """One worker's heartbeat row, and the takeover of workers that stopped beating.

    Args:
        url: The PostgreSQL database the workers share.
        worker_id: This worker's id (its DBOS executor id).
        recover: Called with the ids of workers this one took over; hands their pending
            runs back to the queues.
        fenced: Called when this worker finds itself taken over; must stop the process.
        heartbeat_s: Seconds between beats.
        takeover_after_s: A worker silent for longer is taken over.
    """

    def __init__(
        self,
        url: str,
        worker_id: str,
        *,
        recover: Callable[[list[str]], None],
        fenced: Callable[[str], None],
        heartbeat_s: float,
        takeover_after_s: float,
    ) -> None:
        self.url, self.worker_id = url, worker_id
        self._recover, self._fenced = recover, fenced
        self.heartbeat_s, self.takeover_after_s = heartbeat_s, takeover_after_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.taken_over: list[str] = []
        """Ids of the workers this one took over, in order."""
        self.where = display_url(url)
        self.connected_at: Any = None
        """When this worker's heartbeat connection was last made (database time)."""
        self.claiming = True
        """Whether a beat also takes over silent workers. A starting worker beats with this
        off, from its registration on, so a slow start-up (importing and launching DBOS can
        outlast a short takeover time) is not taken for a death; it turns it on once it can
        recover runs."""

    def _connect(self) -> Any:
        import psycopg

        return psycopg.connect(self.url, autocommit=True, connect_timeout=10)

    def register(self) -> None:
        """Create the table if needed and mark this worker alive (again, if it restarted);
        a database that cannot be reached is a UserError naming it (password masked)."""
        import psycopg

        try:
            retry(self._register, where=self.where)
        except psycopg.OperationalError as exc:
            raise UserError(
                f"Cannot reach the database {self.where} ({driver_message(exc, self.url)}); check the URL and that the server "
                f"is running."
            ) from exc

    def _register(self) -> None:
        with self._connect() as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                conn.execute(_SCHEMA)
            conn.execute(
                "INSERT INTO jeeves_workers (worker_id, status, heartbeat_at, started_at, host, pid) "
                "VALUES (%s, 'alive', now(), now(), %s, %s) ON CONFLICT (worker_id) DO UPDATE SET "
                "status = 'alive', heartbeat_at = now(), started_at = now(), host = excluded.host, "
                "pid = excluded.pid, taken_over_by = NULL, taken_over_at = NULL",
                (self.worker_id, socket.gethostname(), os.getpid()),
            )

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._loop, name=f"jeeves-heartbeat-{self.worker_id}", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        conn: Any = None
        failing = False
        while not self._stop.is_set():
            try:
                if conn is None or conn.closed:
                    conn = self._connect()
                    self.connected_at = conn.execute("SELECT now()").fetchone()[0]
                self.beat(conn)
                failing = False
            except Exception as exc:  # the database is away: keep trying; the next beat reconnects
                if conn is not None:
                    conn.close()
                conn = None
                if not failing:  # once per outage, not once per try
                    print(
                        f"jeeves worker {self.worker_id}: heartbeat failed, retrying: {driver_message(exc, self.url)}",
                        flush=True,
                    )
                failing = True
            # Back from an outage as soon as the database is: retry at once, then each beat.
            self._stop.wait(min(self.heartbeat_s, 0.5) if failing else self.heartbeat_s)
        if conn is not None:
            conn.close()

    def beat(self, conn: Any) -> list[str]:
        """Renew this worker's heartbeat, then take over the silent ones; returns their ids.

        A worker is taken over only when its lease lapsed while this one was connected: its
        heartbeat is older than `takeover_after_s`, and this worker's connection has been up
        for `takeover_after_s` too (database time both). So after an outage that cut every
        worker off, each reconnected worker first gives the others one takeover period to
        beat again, and only the ones that stay silent are taken over."""
        renewed = conn.execute(
            "UPDATE jeeves_workers SET heartbeat_at = now() WHERE worker_id = %s AND status = 'alive'",
            (self.worker_id,),
        )
        if renewed.rowcount == 0:
            row = conn.execute(
                "SELECT taken_over_by FROM jeeves_workers WHERE worker_id = %s", (self.worker_id,)
            ).fetchone()
            self._fenced(str(row[0]) if row else "nobody (the row is gone)")
            return []
        if not self.claiming:
            return []
        dead = [
            str(worker_id)
            for (worker_id,) in conn.execute(
                "UPDATE jeeves_workers SET status = 'dead', taken_over_by = %s, taken_over_at = now() "
                "WHERE status = 'alive' AND worker_id <> %s "
                "AND heartbeat_at < now() - make_interval(secs => %s) "
                "AND COALESCE(%s::timestamptz, '-infinity') <= now() - make_interval(secs => %s) RETURNING worker_id",
                (
                    self.worker_id,
                    self.worker_id,
                    self.takeover_after_s,
                    self.connected_at,
                    self.takeover_after_s,
                ),
            ).fetchall()
        ]
        if dead:
            self.taken_over.extend(dead)
            self._recover(dead)
        return dead

    def stop(self, *, hand_over: bool) -> None:
        """Stop beating; `hand_over` expires this worker's heartbeat so another takes its
        runs at once (call it only after this worker's runs stopped)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.heartbeat_s + 15)
        if hand_over:
            retry(self._expire, where=self.where)

    def _expire(self) -> None:
        with self._connect() as conn:
            conn.execute(
                "UPDATE jeeves_workers SET heartbeat_at = 'epoch' WHERE worker_id = %s AND status = 'alive'",
                (self.worker_id,),
            )
