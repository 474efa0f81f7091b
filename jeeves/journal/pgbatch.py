"""Group commit for the PostgreSQL stores: every statement of one event loop on one database
goes out in batches, one transaction a batch, on a connection kept for the process.

A durable worker runs many runs at once, and each step of each run must be committed
before its result is used. Sent one by one, every write is a transaction and a thread
hand-off of its own (bench/results/DURABLE.md counted 46 transactions a run). Here a call
joins the batch that is open; when no batch is in flight, the caller that finds its batch
unsent sends it (it "leads": it takes the batch, runs every call in it in one transaction
in the group's own thread (`jeeves.journal.handoff`), and wakes the others). Calls made while a batch is in flight wait and
go out together in the next. So an idle database sees each call at once (a batch of one),
and a busy one sees one transaction per round trip, whatever the number of runs.

Durability is unchanged: a call returns only once the transaction holding it committed
(a read, once it ran). Order is kept: the calls of a batch run in the order they were
made, and batches one after the other, so a write is seen by every later read. A store may
also leave a write behind (`post`: a child session's record, which no step waits on): it
joins the open batch without waiting and goes out, in order, with the next batch anyone
sends; batches commit one after the other, so it is committed no later than any write
made after it.

Faults: a fault of the connection (`is_transient`) rolls the batch back and sends it all
again on a new connection, within the retry bound (every call is idempotent: upserts and
reads); a statement the database refuses rolls the batch back and sends each call alone,
so the error reaches its own caller only. A call cancelled while its batch is unsent
leaves the batch (it is never written); once sent, the batch is shielded and completes.

Connections: a batch takes a connection from the process's idle pool (or connects) and
puts it back after, so a process keeps a few long-lived connections per database instead
of opening one per store; a fault closes it and the pool's other connections to that
database, which the same restart most likely killed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio
import anyio.lowlevel

from jeeves.journal.handoff import Handoff, Job
from jeeves.journal.retry import is_transient, retry

if TYPE_CHECKING:
    import psycopg

__all__ = ["Call", "Group", "Merge", "group_for", "purge_idle", "put_idle", "take_idle", "transaction"]

_UNSET: Any = object()


class Merge(NamedTuple):
    """How calls of one kind in a batch become one statement: `sql` takes the rows as one
    JSON array (`json_array_elements(%s::json)`: escaped by the C encoder, not row by row in
    Python), `row` is this call's, and its first `key` columns are what it upserts (two
    calls on one key in a batch: the later row is written, at the earlier's place)."""

    sql: str
    row: tuple[Any, ...]
    key: int


class Call:
    """One statement function `fn(conn, *args)` in a batch; `prepare(conn)` runs before it
    when set (a store's first call checks the journal's tables in the same transaction: in
    a batch, the checks run first, each `prepare_key` once, and a call whose check failed
    gets its error and does not run); `after()` runs once its transaction committed (a
    store's cache learns only what is committed); `merge` lets it share one statement with
    the calls of its kind (`Merge`). Calls in one batch were all in flight at once, so
    running merged ones together, at the first one's place, is an order they could have had."""

    __slots__ = ("after", "args", "error", "fn", "merge", "prepare", "prepare_key", "report", "value")

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[object, ...],
        *,
        prepare: Callable[[Any], None] | None = None,
        prepare_key: object = None,
        after: Callable[[Any], None] | None = None,
        merge: Merge | None = None,
    ) -> None:
        self.fn, self.args, self.prepare, self.after = fn, args, prepare, after
        self.prepare_key = prepare if prepare_key is None else prepare_key
        """Calls whose checks are the same (one store's, or stores' of one database)."""
        self.merge = merge
        self.report: Callable[[BaseException], None] | None = None
        """Where the error of a call nobody waits for goes (`Group.post`)."""
        self.value: Any = _UNSET
        self.error: BaseException | None = None

    def run(self, conn: Any) -> None:
        if self.prepare is not None:
            self.prepare(conn)
        self.value = self.fn(conn, *self.args)

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


LINGER_S = 0.005
"""How long a lazy call waits for a batch to ride in before it sends one itself."""


class _Batch:
    """Calls that go out together: `sent` once a leader took them, `done` once committed."""

    __slots__ = ("calls", "done", "sent")

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.sent = False
        self.done = anyio.Event()


class Group:
    """The batches of one event loop on one database (`group_for`)."""

    def __init__(
        self, url: str, where: str, connect: Callable[[], Any], translate: Callable[..., Any]
    ) -> None:
        self.url, self.where = url, where
        self._connect, self._translate = connect, translate
        self._open = _Batch()
        self._flushing: anyio.Event | None = None
        self._handoff = Handoff(self._run, name=f"jeeves postgres {where}")
        self.batches = 0
        """How many batches were sent (for tests and benchmarks)."""

    async def call(self, call: Call, bound_s: float | None, *, lazy: bool = False) -> Any:
        """Run `call` in the next batch; its value (or its error) once its batch committed.
        A `lazy` call (nobody's next step waits for it: a run's events) first waits up to
        `LINGER_S` for another call to send its batch, so it rides in a transaction that
        was due anyway instead of costing one of its own."""
        batch = self._open
        batch.calls.append(call)
        try:
            if lazy:
                with anyio.move_on_after(LINGER_S):
                    await batch.done.wait()
            while not batch.done.is_set():
                if self._flushing is None:
                    await self._send(batch, bound_s)
                else:
                    await self._flushing.wait()
        except BaseException:
            if not batch.sent:  # cancelled before it went out: it never will
                batch.calls.remove(call)
            raise
        return call.result()

    def post(self, call: Call, report: Callable[[BaseException], None]) -> _Batch:
        """Add `call` to the open batch without waiting for it (write-behind): it goes out in
        order with the next batch any caller sends (or `flush`); its error goes to `report`.
        Returns the batch, whose `done` says when it went out."""
        call.report = report
        self._open.calls.append(call)
        return self._open

    async def _send(self, batch: _Batch, bound_s: float | None) -> None:
        flushed = self._flushing = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()  # the tasks ready now join this batch
                self._open, batch.sent = _Batch(), True
                self.batches += 1
                await self._handoff.submit(_Send(batch.calls, bound_s))
                for call in batch.calls:
                    if call.report is not None and call.error is not None:
                        call.report(call.error)
        finally:
            self._flushing = None
            batch.done.set()
            flushed.set()

    # -- in the group's thread (`jeeves.journal.handoff`) -----------------------------------
    def _run(self, jobs: list[Job]) -> None:
        for job in jobs:  # one at a time: a group has one batch in flight
            assert isinstance(job, _Send)
            self._commit(job.calls, job.bound_s)

    def _commit(self, calls: list[Call], bound_s: float | None) -> None:
        holder: list[Any] = []
        try:
            retry(
                functools.partial(self._once, calls, holder),
                where=self.where,
                discard=functools.partial(self._discard, holder),
                bound_s=bound_s,
            )
        except Exception as exc:  # past the bound, or a connection never made: every call hears it
            error = self._translate(exc)
            for call in calls:
                if call.error is None:
                    call.error = error
        finally:
            if holder and not put_idle(self.url, holder[0]):
                holder[0].close()

    def _once(self, calls: list[Call], holder: list[Any]) -> None:
        if not holder:
            holder.append(take_idle(self.url) or self._connect())
        conn = holder[0]
        for call in calls:
            call.value, call.error = _UNSET, None
        if len(calls) == 1 and calls[0].prepare is None:
            self._alone(conn, calls[0])
            return
        psycopg = _psycopg()
        try:
            with conn.transaction():
                _prepare(conn, calls)
                _run_all(conn, calls)
        except psycopg.Error as exc:
            if is_transient(exc):
                raise
            for call in calls:  # one statement was refused: each alone, its caller alone hears it
                self._alone(conn, call)
            return
        for call in calls:
            if call.error is None and call.after is not None:
                call.after(call.value)

    def _alone(self, conn: Any, call: Call) -> None:
        """`call` in a transaction of its own (autocommit: one statement is one)."""
        call.value, call.error = _UNSET, None
        try:
            call.run(conn)
        except Exception as exc:
            if is_transient(exc):
                raise
            call.error = self._translate(exc)
            return
        if call.after is not None:
            call.after(call.value)

    def _discard(self, holder: list[Any]) -> None:
        if holder:
            with contextlib.suppress(Exception):
                holder.pop().close()
        purge_idle(self.url)


class _Send(Job):
    """A batch's calls, handed to the group's thread to run in one transaction."""

    __slots__ = ("bound_s", "calls")

    def __init__(self, calls: list[Call], bound_s: float | None) -> None:
        super().__init__()
        self.calls, self.bound_s = calls, bound_s


def _run_all(conn: Any, calls: list[Call]) -> None:
    """The calls of a batch in its transaction, in order (a merged kind at its first call's
    place); a call its check refused does not run."""
    psycopg = _psycopg()
    kinds: dict[str, list[Call]] = {}
    for call in calls:
        if call.merge is not None and call.error is None:
            kinds.setdefault(call.merge.sql, []).append(call)
    for call in calls:
        if call.error is not None:
            continue
        if call.merge is not None:
            _merged(conn, kinds.pop(call.merge.sql, []))
            continue
        try:
            call.value = call.fn(conn, *call.args)
        except psycopg.Error:
            raise
        except Exception as exc:  # refused in Python (a check): the transaction is whole
            call.error = exc


def _prepare(conn: Any, calls: list[Call]) -> None:
    """The checks of a batch's calls, each distinct one (`Call.prepare_key`) once, before any
    call: one transaction, so one check holds for every call in it. A check that fails in
    Python (a newer schema, no journal) is the error of every call it was for; a database
    error is raised (the batch is then sent call by call)."""
    psycopg = _psycopg()
    checked: dict[object, BaseException | None] = {}
    for call in calls:
        if call.prepare is None:
            continue
        if call.prepare_key not in checked:
            try:
                call.prepare(conn)
                checked[call.prepare_key] = None
            except psycopg.Error:
                raise
            except Exception as exc:
                checked[call.prepare_key] = exc
        call.error = checked[call.prepare_key]


def _merged(conn: Any, calls: list[Call]) -> None:
    """`calls` (one kind) as one statement; nothing when they already ran (their kind's first)."""
    if not calls:
        return
    rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for call in calls:
        assert call.merge is not None
        rows[call.merge.row[: call.merge.key]] = call.merge.row
    sql = calls[0].merge.sql if calls[0].merge is not None else ""
    conn.execute(sql, (json.dumps(list(rows.values()), ensure_ascii=False),))
    for call in calls:
        call.value = None


def transaction(conn: Any) -> contextlib.AbstractContextManager[Any]:
    """A transaction for statements that must commit together: the batch's own when `conn`
    is in one (a savepoint would add two statements and protect nothing: a refused
    statement sends the batch's calls again one by one), else a new one."""
    if conn.info.transaction_status == _psycopg().pq.TransactionStatus.INTRANS:
        return contextlib.nullcontext(conn)
    return conn.transaction()  # type: ignore[no-any-return]


_GROUPS: weakref.WeakKeyDictionary[object, dict[str, Group]] = weakref.WeakKeyDictionary()
"""Each running event loop's groups, by database URL (gone with the loop)."""


def group_for(url: str, where: str, connect: Callable[[], Any], translate: Callable[..., Any]) -> Group:
    """The batches of the running event loop on `url` (one per loop: its events are the loop's)."""
    try:
        loop: object = asyncio.get_running_loop()  # every call of a store asks: the cheap way first
    except RuntimeError:
        loop = anyio.lowlevel.current_token().native_token
    groups = _GROUPS.get(loop)
    if groups is None:
        groups = _GROUPS[loop] = {}
    group = groups.get(url)
    if group is None:
        group = groups[url] = Group(url, where, connect, translate)
    return group


# -- the process's idle connections -------------------------------------------------------------
_IDLE: list[tuple[str, psycopg.Connection[Any]]] = []
_IDLE_LOCK = threading.Lock()
IDLE_MAX = 16
"""How many idle connections a process keeps (all databases together, the most recent)."""
_INHERITED: list[psycopg.Connection[Any]] = []
"""In a forked child: the parent's pooled connections, never used (`_forget_idle`)."""


def take_idle(url: str) -> psycopg.Connection[Any] | None:
    """An idle pooled connection to `url` that is still usable, or None."""
    psycopg = _psycopg()
    while True:
        with _IDLE_LOCK:
            found = next((i for i in range(len(_IDLE) - 1, -1, -1) if _IDLE[i][0] == url), None)
            if found is None:
                return None
            _, conn = _IDLE.pop(found)
        if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            return conn
        conn.close()


def purge_idle(url: str) -> None:
    """Close every idle pooled connection to `url` (after a fault of one of them)."""
    with _IDLE_LOCK:
        dropped = [conn for kept, conn in _IDLE if kept == url]
        _IDLE[:] = [(kept, conn) for kept, conn in _IDLE if kept != url]
    for conn in dropped:
        with contextlib.suppress(Exception):
            conn.close()


def put_idle(url: str, conn: psycopg.Connection[Any]) -> bool:
    """Keep `conn` for reuse if it is healthy (the oldest kept one is closed when the pool is
    full); whether it was kept."""
    psycopg = _psycopg()
    if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return False
    with _IDLE_LOCK:
        _IDLE.append((url, conn))
        evicted = _IDLE.pop(0)[1] if len(_IDLE) > IDLE_MAX else None
    if evicted is not None:
        evicted.close()
    return True


def _close_idle() -> None:
    """At exit: close the pool's connections (each ends its server session cleanly)."""
    with _IDLE_LOCK:
        kept, _IDLE[:] = list(_IDLE), []
    for _, conn in kept:
        with contextlib.suppress(Exception):
            conn.close()


def _forget_idle() -> None:
    """In a forked child: forget the parent's pooled connections, unclosed. Their sockets are
    the parent's: using one would interleave two processes' messages, and closing one would
    end the parent's session (psycopg finishes a connection only in the process that opened
    it). The pool's lock is new too: another thread may have held the parent's at the fork."""
    global _IDLE_LOCK
    _IDLE_LOCK = threading.Lock()
    _INHERITED.extend(conn for _, conn in _IDLE)  # kept unused: freeing one would warn
    _IDLE.clear()


atexit.register(_close_idle)
os.register_at_fork(after_in_child=_forget_idle)


def _psycopg() -> Any:
    import psycopg

    return psycopg
