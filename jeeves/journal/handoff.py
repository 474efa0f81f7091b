"""One thread that owns a store's connection: jobs from event loops, run in batches, one
wake-up per event loop per batch (the PostgreSQL batches', `jeeves.journal.pgbatch`; the
SQLite store commits on the event loop's thread instead, `jeeves.journal.sqlite`).

`anyio.to_thread.run_sync` costs 70-100 µs of CPU a call on a 2-core machine (a capacity
limiter, a cancel scope, a pooled worker thread, a future and its wake-up), and a
journaled run would pay it at every step. A `Handoff` keeps a thread of its own, fed
through a queue: the thread takes every batch queued, runs their jobs together (the
store's `run`: a PostgreSQL group sends them in one transaction), and wakes each event
loop with jobs there once, through the loop's thread-safe callback, which sets the batch's
event (asyncio's `call_soon_threadsafe`; on another backend, `run_sync_soon` of its
`anyio.lowlevel` token). A
lone job costs a queue put, a thread wake-up and a loop wake-up (~25 µs of CPU in a tight
loop, more in a real run, whose caches each wake-up empties); the jobs of every
task that submits while a batch runs share the next batch (group commit).

Each job is answered only once its batch ran: a write returns committed. A caller
cancelled while its job waits stops waiting, and the job still runs (a write is committed,
or fails with its batch, as if its caller had waited).

The thread ends after `IDLE_S` without work, or at `stop` once the queue is empty, and the
next job starts a new one: a store nobody closes keeps no thread. A forked child starts
with none (its parent's thread is not in it).
"""

from __future__ import annotations

import asyncio
import functools
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

import anyio
import anyio.lowlevel

__all__ = ["IDLE_S", "Handoff", "Job", "running_loop"]

IDLE_S = 5.0
"""How long the thread waits for work before it ends."""


class Job:
    """One unit of work of a batch: the batch's runner sets `value`, or `error` (raised to
    the job's caller)."""

    __slots__ = ("error", "value")

    def __init__(self) -> None:
        self.value: Any = None
        self.error: BaseException | None = None


J = TypeVar("J", bound=Job)


class _Batch:
    """The jobs one event loop queued since its last batch was taken, and how to wake it:
    on asyncio an `asyncio.Event` set through `call_soon_threadsafe` (the cheapest way back
    to the loop), on any other backend an `anyio.Event` set through the loop's token."""

    __slots__ = ("jobs", "key", "wait", "_soon")

    def __init__(self, key: object) -> None:
        self.key = key
        self.jobs: list[Job] = []
        if isinstance(key, asyncio.AbstractEventLoop):
            event: asyncio.Event | anyio.Event = asyncio.Event()
            self._soon: Callable[[], object] = functools.partial(key.call_soon_threadsafe, event.set)
        else:
            token = cast(anyio.lowlevel.EventLoopToken, key)  # `running_loop()` off asyncio
            event = anyio.Event()
            self._soon = functools.partial(
                token.backend_class.run_sync_soon, event.set, (), token.native_token
            )
        self.wait = event.wait

    def wake(self) -> None:
        """Set the batch's event in its event loop (from the thread)."""
        try:
            self._soon()
        except RuntimeError:  # the loop ended (closed, or anyio's RunFinishedError): nobody waits there
            pass


class Handoff:
    """Runs `run(jobs)` in a thread of its own, batch after batch (see the module).

    `run` sets each job's `value` or `error`; it runs in the thread, one batch at a time.
    """

    def __init__(self, run: Callable[[list[Job]], None], *, name: str) -> None:
        self._run = run
        self._name = name
        self._reset()
        _ALL.add(self)

    def _reset(self) -> None:
        """No thread, nothing queued (also in a forked child: the parent's thread is not there)."""
        self._queue: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._open: dict[object, _Batch] = {}
        self._thread: threading.Thread | None = None

    async def submit(self, job: J) -> J:
        """`job`, once the batch holding it ran; raises its `error`."""
        key = running_loop()
        with self._lock:
            batch = self._open.get(key)
            if batch is None:  # none open for this loop: the thread took the last one
                batch = self._open[key] = _Batch(key)
                self._queue.put(batch)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                    self._thread.start()
            batch.jobs.append(job)
        await batch.wait()
        if job.error is not None:
            raise job.error
        return job

    def stop(self) -> None:
        """End the thread once what is queued ran (a later job starts a new one)."""
        self._queue.put(None)

    # -- in the thread -----------------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            batches = self._take()
            if batches is None:
                return
            if batches:
                self._answer(batches)

    def _answer(self, batches: list[_Batch]) -> None:
        jobs = [job for batch in batches for job in batch.jobs]
        try:
            self._run(jobs)
        except BaseException as exc:  # the runner's own fault: every job hears it, none is taken as done
            for job in jobs:
                job.error = exc
        for batch in batches:
            batch.wake()

    def _take(self) -> list[_Batch] | None:
        """Every batch queued (waiting up to `IDLE_S` for the first), closed to new jobs;
        None when the thread is to end (idle or stopped, and nothing queued meanwhile)."""
        try:
            first = self._queue.get(timeout=IDLE_S)
        except queue.Empty:
            first = None
        batches = [] if first is None else [first]
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                batches.append(item)
        with self._lock:
            if not batches:
                if self._queue.empty():
                    self._thread = None
                    return None
                return []
            for batch in batches:
                del self._open[batch.key]  # its loop's next job opens a new batch
        return batches


_ALL: weakref.WeakSet[Handoff] = weakref.WeakSet()


def _after_fork() -> None:
    for handoff in list(_ALL):
        handoff._reset()


os.register_at_fork(after_in_child=_after_fork)


def running_loop() -> object:
    """The running event loop (asyncio's, cheaply; any other through anyio's token): a
    key for what belongs to one loop (this module's batches, the SQLite store's waiting
    writes)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return anyio.lowlevel.current_token()
