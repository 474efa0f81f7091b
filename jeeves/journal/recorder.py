"""EventRecorder: writes a run's events into an `EventLog` as it runs, in small batches.

The run never waits on the database: `add` only queues the event, and a flusher task
writes what is queued in one transaction (`EventLog.append`). It flushes at once after
every event that ends something (a model call, a tool call, a session, a gate, a
critique: anything but a `model.delta` or `progress`), and queued deltas at most `flush_s`
later, so a run costs one round trip per step, not per event, and a follower lags a step
end by one round trip.

**One sequence across attempts.** A run is executed again from seq 1 after a takeover (a
DBOS recovery on another worker) and after a gate is decided (the worker resumes it from
the journal): its served steps emit again the events the first attempt emitted, marked
`replayed`. Each attempt starts aligned to the log: its k-th event is compared with the
log's k-th (`same_event`: all but seq, ts and replayed), and while they match it is
already persisted and is skipped. From the first event that differs, or that goes past the
log's end, the attempt's events are appended after the last persisted seq, numbered on
without a gap. So a follower reading by seq sees every event once, in order, whatever
happened to the workers; for an uninterrupted run the log's seqs are the run's own. What
it can see twice is the work of a step that was in flight when its worker died, which runs
again (its deltas, say), as the step itself does: at least once (docs/scaling.md).

An event the worker queued but had not written when it died is not lost: the next attempt
emits it again (it replays the same steps) and it lands at the log's end, where it was due.
"""

from __future__ import annotations

from collections import deque

import anyio

from jeeves.events import Event
from jeeves.journal.eventlog import EventLog, same_event

__all__ = ["EventRecorder"]

_DEFERRED = frozenset({"model.delta", "progress"})
"""Events that wait for the timer instead of flushing at once."""


class _NewAttempt:
    """A marker in the queue: the events after it are a new attempt, from seq 1."""


class EventRecorder:
    """Persists the events of run `root` into `log`; `run()` is the flusher.

    ```python
    recorder = EventRecorder(log, root, architecture="codegen", task=task)
    async with anyio.create_task_group() as group:
        group.start_soon(recorder.run)  # registers the run first (`open`), as the run starts
        async with jeeves.stream(...) as events:
            recorder.new_attempt()
            async for event in events:
                recorder.add(event)
        await recorder.close("completed")
    ```
    """

    def __init__(
        self, log: EventLog, root: str, *, architecture: str, task: str, flush_s: float = 0.2
    ) -> None:
        self.log = log
        self.root = root
        self.architecture = architecture
        self.task = task
        self.flush_s = flush_s
        self.last_seq = 0
        """The seq of the last event written (or known written, when aligned)."""
        self.flushes = 0
        """How many batches were written (for tests and benchmarks)."""
        self._queue: deque[Event | _NewAttempt] = deque()
        self._wake = anyio.Event()
        self._urgent = False
        """Whether an event that ends something was queued since the last flush began."""
        self._deferred = False
        """Whether a deferred event was queued since the last flush began."""
        self._closed = False
        self._opened = False
        self._lock = anyio.Lock(fast_acquire=True)  # taken by the flusher and `close`: rarely contended
        self._aligning = False
        self._position = 0
        """How many log events the current attempt has matched so far."""
        self._page: list[Event] = []
        """Persisted events read ahead for the comparison, from seq `_position + 1` on."""

    async def open(self) -> None:
        """Register the run (running again, after a takeover) and read where its log ends.
        Optional: `run()` (or the first flush) does it when it was not done, so the run need
        not wait for it before its first step (the registration rides in that step's batch
        on PostgreSQL); nothing is written before it."""
        self.last_seq = await self.log.start(self.root, architecture=self.architecture, task=self.task)
        self._opened = True

    def new_attempt(self) -> None:
        """The events added from now on are a new execution of the run, from its seq 1."""
        self._queue.append(_NewAttempt())

    def add(self, event: Event) -> None:
        """Queue `event` for writing; never waits."""
        self._queue.append(event)
        if event.type not in _DEFERRED:
            self._urgent = True
            self._wake.set()
        elif not self._deferred:  # the first deferred one: the flusher starts its timer
            self._deferred = True
            self._wake.set()

    async def run(self) -> None:
        """Flush queued events until `close()`: at once after an event that ends something,
        and at most `flush_s` after a deferred one (with nothing queued, it only waits). It
        registers the run first when `open` was not awaited."""
        async with self._lock:
            await self._open_once()
        while not self._closed:
            await self._wake.wait()
            self._wake = anyio.Event()
            if not (self._urgent or self._closed):  # only deferred events: flushed within flush_s
                with anyio.move_on_after(self.flush_s):
                    await self._wake.wait()
                self._wake = anyio.Event()
            await self.flush()

    async def flush(self, status: str | None = None) -> None:
        """Write what is queued, in one batch (with the run's `status`, when given). An event
        is written as it is when its seq is already its place in the log (an uninterrupted
        run), else as a copy renumbered."""
        async with self._lock:
            await self._open_once()
            self._urgent = self._deferred = False  # what is queued from here on wakes the flusher again
            batch: list[Event] = []
            while self._queue:
                item = self._queue.popleft()
                if isinstance(item, _NewAttempt):
                    await self._write(batch)
                    batch = []
                    self._aligning, self._position, self._page = self.last_seq > 0, 0, []
                elif not self._aligning or await self._is_new(item):
                    self.last_seq += 1
                    seq = self.last_seq
                    batch.append(item if item.seq == seq else item.model_copy(update={"seq": seq}))
            await self._write(batch, status)

    async def _open_once(self) -> None:
        if not self._opened:
            await self.open()

    async def _write(self, batch: list[Event], status: str | None = None) -> None:
        if batch or status is not None:
            await self.log.append(self.root, batch, status=status)
        if batch:
            self.flushes += 1

    async def _is_new(self, event: Event) -> bool:
        """False when `event` is the next already persisted one of the attempt being aligned."""
        if not self._aligning:
            return True
        if self._position >= self.last_seq:
            self._aligning = False  # past the log's end: everything from here is new
            return True
        if not self._page:
            self._page = await self.log.after(self.root, self._position)
        if self._page and same_event(self._page[0], event):
            self._page.pop(0)
            self._position += 1
            return False
        self._aligning = False  # the attempt went another way: append after the log's end
        return True

    async def set_status(self, status: str) -> None:
        """Write what is queued with the run's status (`awaiting_approval`, `running`), in one
        write: a follower sees the status with the events before it."""
        await self.flush(status)

    async def close(self, status: str | None) -> None:
        """Stop the flusher and write what is left with the run's final status, shielded from
        cancellation (None: the run did not end here, another worker goes on)."""
        self._closed = True
        self._wake.set()
        with anyio.CancelScope(shield=True):
            await self.flush(status)
