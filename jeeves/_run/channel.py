"""The bounded, order-keeping channel that carries a run's events to its consumer.

Why not an anyio memory stream: `send()` checkpoints before it enqueues, so two tasks
that stamped `seq` 5 and 6 can enqueue 6 first. Here stamping and enqueueing are one
synchronous step, and producers that find the buffer full queue up in arrival order and
are stamped as they move into the buffer. So the consumer always sees `seq` strictly
increasing, with any number of concurrent children.
"""

from __future__ import annotations

import time

import anyio

from jeeves.events import Event

__all__ = ["EventChannel"]


class EventChannel:
    """Many producers, one consumer; `put` waits while `max_buffer` events are unread."""

    def __init__(self, max_buffer: int = 256) -> None:
        self._max = max(1, max_buffer)
        self._buffer: list[Event] = []
        """Events, oldest first, unread from `_head` on; the read prefix is dropped when the
        reader catches up, or once it is half the list, so taking an event stays O(1) for any
        `max_buffer`."""
        self._head = 0
        self._blocked: list[tuple[anyio.Event, Event]] = []
        """Producers waiting for room, in arrival order."""
        self._reader: anyio.Event | None = None
        self._closed = False
        self._seq = 0
        self.consume = True
        """False when nobody reads (jeeves.run): events are stamped and dropped."""

    def _stamp(self, event: Event) -> None:
        self._seq += 1
        fields = event.__dict__  # `seq` and `ts` are stamped, not set: they stay out of the fields set
        fields["seq"] = self._seq
        fields["ts"] = time.time()

    def skip(self) -> tuple[int, float] | None:
        """For an event not built yet: when nobody will read it (`consume` is False, or the
        channel is closed), the `seq` and `ts` it takes, so it need never be built; None when
        it will be read (build it and `offer` it)."""
        if self.consume and not self._closed:
            return None
        self._seq += 1
        return self._seq, time.time()

    def _wake_reader(self) -> None:
        if self._reader is not None:
            self._reader.set()
            self._reader = None

    def offer(self, event: Event) -> bool:
        """Stamp and enqueue `event` if that needs no wait (room in the buffer, nobody queued
        ahead); False, with the event untouched, when the caller must `await put(event)`."""
        if not self.consume or self._closed:
            self._stamp(event)
            return True
        if not self._blocked and len(self._buffer) - self._head < self._max:
            self._stamp(event)
            self._buffer.append(event)
            self._wake_reader()
            return True
        return False

    async def put(self, event: Event) -> None:
        """Stamp `event` with the next seq and enqueue it (waiting while the buffer is full)."""
        if self.offer(event):
            return
        entry = (anyio.Event(), event)
        self._blocked.append(entry)
        try:
            await entry[0].wait()
        except BaseException:
            if entry in self._blocked:  # cancelled before it got into the buffer
                self._blocked.remove(entry)
            raise

    def take(self) -> Event | None:
        """The next buffered event, without waiting; None when the buffer is empty (then
        `closed` says whether more can come, and `readable()` waits for it)."""
        buffer, head = self._buffer, self._head
        if head == len(buffer):
            return None
        event = buffer[head]
        head += 1
        if head == len(buffer):  # caught up: start over
            buffer.clear()
            head = 0
        elif head >= 64 and 2 * head >= len(buffer):  # a reader that never catches up
            del buffer[:head]
            head = 0
        self._head = head
        if self._blocked:
            waiter, pending = self._blocked.pop(0)
            self._stamp(pending)
            self._buffer.append(pending)
            waiter.set()
        return event

    @property
    def closed(self) -> bool:
        return self._closed

    def readable(self) -> anyio.Event:
        """A wake-up for the reader, set when an event arrives or the channel closes: `await`
        it after `take()` found nothing on an open channel (one reader at a time)."""
        self._reader = waiter = anyio.Event()
        return waiter

    async def get(self) -> Event:
        """The next event; raises anyio.EndOfStream once closed and drained."""
        while True:
            event = self.take()
            if event is not None:
                return event
            if self._closed:
                raise anyio.EndOfStream
            await self.readable().wait()

    def close(self) -> None:
        """No more events: the reader drains what is buffered, then sees the end. Blocked producers go on."""
        self._closed = True
        while self._blocked:
            waiter, pending = self._blocked.pop(0)
            self._stamp(pending)
            self._buffer.append(pending)
            waiter.set()
        self._wake_reader()
