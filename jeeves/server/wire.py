"""A run's events as jeeves SSE bytes: each event encoded once, shared by every follower.

The jeeves stream writes the same bytes for an event to every client that follows the
run (`id:` = seq, `data:` = the event's JSON), so they are made once, the first time any
follower needs them, and kept beside the event for as long as the run is held. A hundred
followers of one run cost one JSON encoding per event, not a hundred.

A follower that is behind (it re-attached with `Last-Event-ID`, or the run produced
several events while it was writing) gets every ready event in one chunk, up to
`MAX_CHUNK_BYTES`, so a burst is one write to the connection instead of one per event.

Invariants: `WireCache` is filled in seq order and only ever grows (a run's events are
append-only); `chunk_after(seq)` is exactly the messages of the events after `seq`, in
order, each once. All calls happen on the server's event loop, so there is no locking.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from jeeves.events import Event, event_to_json

__all__ = ["MAX_CHUNK_BYTES", "WireCache", "encode_event"]

MAX_CHUNK_BYTES = 64 * 1024
"""A chunk holds ready events up to about this many bytes (always at least one event)."""


def encode_event(event: Event) -> bytes:
    """One jeeves SSE message: `id: <seq>` and one `data:` line with the event's JSON.

    The JSON is compact (one line: newlines inside strings are escaped), so one `data:`
    line carries it whole, as `sse_message` would write it.
    """
    return b"id: %d\ndata: %s\n\n" % (event.seq, event_to_json(event).encode())


class WireCache:
    """The encoded messages of one run's events, aligned with its event list.

    Args:
        events: The run's events (the record's own list, appended to as the run goes).
        seqs: Their seqs, in the same order (strictly increasing).
    """

    def __init__(self, events: Sequence[Event], seqs: Sequence[int]) -> None:
        self._events = events
        self._seqs = seqs
        self._wire: list[bytes] = []

    @property
    def encoded(self) -> int:
        """How many events have been encoded so far (each exactly once)."""
        return len(self._wire)

    def chunk_after(self, seq: int, max_bytes: int = MAX_CHUNK_BYTES) -> tuple[bytes, int]:
        """The messages of the events after `seq`, joined, and the seq of the last one.

        Stops once `max_bytes` are reached (after at least one event); the caller asks
        again from the returned seq. Returns `(b"", seq)` when no event is after `seq`.
        """
        start = bisect.bisect_right(self._seqs, seq)
        end = len(self._events)
        if start >= end:
            return b"", seq
        self._fill(end)
        wire = self._wire
        size = 0
        stop = start
        while stop < end and (size < max_bytes or stop == start):
            size += len(wire[stop])
            stop += 1
        return b"".join(wire[start:stop]), self._seqs[stop - 1]

    def _fill(self, end: int) -> None:
        events, wire = self._events, self._wire
        for index in range(len(wire), end):
            wire.append(encode_event(events[index]))  # looked up here: a bench or test may count calls
