"""Database faults waited out, then typed: the one retry loop of every database operation.

The journal stores (`PostgresJournal`, `SQLiteJournal`, and the event logs on them), the
run lock and the worker heartbeat run each operation through `retry` (or `aretry`). An
operation that fails with a fault of the connection (the server restarted, a pooled
connection died, the network dropped, a SQLite file is locked) has its connection
discarded by the caller's `discard` (never handed out again) and runs again, after 0.05 s,
doubling to at most 2 s, until it succeeds or `db_retry_s()` seconds have passed since the
first failure. Past that bound it raises a `JournalError` naming
the database (password masked) and saying to resume the run once it is back.

Only a database this process has reached before is waited for (`reached`): a first
connection that fails is a wrong URL, a server that is not there or a refused password,
reported at once rather than after a minute.

The bound is process-wide (`configure`): `--db-retry-s` on `jeeves worker`, `serve` and
`run`, `Worker(db_retry_s=...)` in code, or `$JEEVES_DB_RETRY_S`; `DEFAULT_DB_RETRY_S`
otherwise. Every operation retried is idempotent: the writes are upserts keyed by what
they write, the reads read.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from jeeves.errors import JournalError, UserError

__all__ = [
    "DEFAULT_DB_RETRY_S",
    "Backoff",
    "RETRY_ENV",
    "aretry",
    "configure",
    "db_retry_s",
    "is_transient",
    "is_unavailable",
    "mark_reached",
    "reached",
    "retry",
]

T = TypeVar("T")

DEFAULT_DB_RETRY_S = 60.0
"""How long a database operation is retried before the run fails, unless configured."""
RETRY_ENV = "JEEVES_DB_RETRY_S"
_FIRST_DELAY_S, _MAX_DELAY_S = 0.05, 2.0
_bound: list[float] = []
_reached: set[str] = set()
_reached_lock = threading.Lock()


def configure(seconds: float | None) -> float:
    """Set this process's retry bound (None: `$JEEVES_DB_RETRY_S`, else the default);
    returns it."""
    value = _from_env() if seconds is None else seconds
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise UserError(f"db_retry_s={value!r} must be a number of seconds >= 0, e.g. 60.")
    _bound[:] = [float(value)]
    return float(value)


def _from_env() -> float:
    text = os.environ.get(RETRY_ENV, "").strip()
    if not text:
        return DEFAULT_DB_RETRY_S
    try:
        return float(text)
    except ValueError:
        raise UserError(f"${RETRY_ENV}={text!r} is not a number of seconds; set e.g. 60.") from None


def db_retry_s() -> float:
    """The retry bound in force, in seconds."""
    return _bound[0] if _bound else configure(None)


def reached(where: str) -> bool:
    """Whether this process has reached database `where` before (its faults are waited out)."""
    with _reached_lock:
        return where in _reached


def mark_reached(where: str) -> None:
    with _reached_lock:
        _reached.add(where)


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` is a fault of the connection, which a new connection may not have:
    psycopg's operational and interface errors (server restart, dead or closed connection,
    refused connection), a locked or busy SQLite file."""
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "locked" in text or "busy" in text
    module = type(exc).__module__
    if module.startswith("psycopg"):
        import psycopg

        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    return False


def _unavailable(where: str, waited: float, bound: float, exc: BaseException) -> JournalError:
    line = " ".join(str(exc).split())[:300]
    error = JournalError(
        f"{where}: the database did not answer for {waited:.0f} s (the bound, --db-retry-s, is "
        f"{bound:g} s; last error {type(exc).__name__}: {line}); every completed step is in the "
        f"journal: once the database is back, resume the run (`jeeves resume`, or start a worker)."
    )
    error._jeeves_db_unavailable = True  # type: ignore[attr-defined]
    return error


def is_unavailable(exc: BaseException) -> bool:
    """Whether `exc` is the JournalError of a database that did not answer within the bound
    (worth trying again later, unlike a damaged record)."""
    return bool(getattr(exc, "_jeeves_db_unavailable", False))


def retry(
    op: Callable[[], T],
    *,
    where: str,
    discard: Callable[[], None] = lambda: None,
    bound_s: float | None = None,
) -> T:
    """`op()`, run again on a transient fault (after `discard()`) until it succeeds or the
    bound passes (`bound_s`, default `db_retry_s()`; then a `JournalError` saying so).
    Blocking: call it from a worker thread."""
    backoff = Backoff(where, bound_s)
    while True:
        try:
            result = op()
        except Exception as exc:
            if not is_transient(exc):
                raise
            discard()
            time.sleep(backoff.pause(exc))
        else:
            mark_reached(where)
            return result


async def aretry(
    op: Callable[[], Awaitable[T]],
    *,
    where: str,
    discard: Callable[[], Awaitable[None]] | None = None,
    bound_s: float | None = None,
) -> T:
    """`retry` for async operations (the run lock's connection)."""
    backoff = Backoff(where, bound_s)
    while True:
        try:
            result = await op()
        except Exception as exc:
            if not is_transient(exc):
                raise
            if discard is not None:
                await discard()
            await anyio.sleep(backoff.pause(exc))
        else:
            mark_reached(where)
            return result


class Backoff:
    """The one waiting schedule of `retry`, `aretry` and the SQLite store's writes: doubling
    pauses from the first failure (`first_s`, at most `most_s`), until the bound passes (then
    the `JournalError`); a database never reached fails at once."""

    def __init__(
        self,
        where: str,
        bound_s: float | None,
        *,
        first_s: float = _FIRST_DELAY_S,
        most_s: float = _MAX_DELAY_S,
    ) -> None:
        self.where, self.bound_s, self.most_s = where, bound_s, most_s
        self.started: float | None = None
        self.delay = first_s

    def pause(self, exc: Exception) -> float:
        """How long to wait before the next try after `exc` (raised inside an `except`)."""
        if not reached(self.where):
            raise exc
        now = time.monotonic()
        self.started = now if self.started is None else self.started
        bound = db_retry_s() if self.bound_s is None else self.bound_s
        left = bound - (now - self.started)
        if left <= 0:
            raise _unavailable(self.where, now - self.started, bound, exc) from exc
        pause, self.delay = min(self.delay, left), min(self.delay * 2, self.most_s)
        return pause
