"""What each live model call of a server run was asked: a tracer that logs requests per session.

Events say what a model answered, not what it was asked. `RecordingTracer` wraps the run's
tracer (the default one, so OpenTelemetry keeps working) and stores each live model
call's request (its fingerprint payload: messages, tools, output schema, params, with
credentials stripped, and masked again) in the run's `RequestLog`, in call order per
session. The k-th `model.completed` of a session answered its k-th call that ended well.

The payload is copied when the call starts (the request may change afterwards), but
masked when it is first read: masking walks every string of every message, and most
requests of a run are never looked at. Nothing leaves the log unmasked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from jeeves.events import SessionStarted
from jeeves.hooks import SpanHandle, Tracer, default_tracer
from jeeves.messages import ModelRequest
from jeeves.redact import mask_credentials

__all__ = ["MAX_LOGGED_CALLS", "RecordingTracer", "RequestLog"]

MAX_LOGGED_CALLS = 2000
"""Model calls a run's `RequestLog` keeps; later calls are counted but not stored."""

_UNMASKED = "_unmasked"
"""Marks a stored entry whose request has not been masked yet (removed when it is)."""


class RequestLog:
    """The requests of one run's live model calls, per session, in call order."""

    def __init__(self, max_calls: int = MAX_LOGGED_CALLS) -> None:
        self.max_calls = max_calls
        self.dropped = 0
        """Calls made after `max_calls` were stored (their requests are not kept)."""
        self._calls: dict[str, list[dict[str, Any]]] = {}
        self._count = 0

    def open(self, session_id: str, request: ModelRequest) -> dict[str, Any]:
        """Store a call that is starting; the returned entry is updated when it ends."""
        entry: dict[str, Any] = {"model": request.model, "request": None, "ok": None}
        if self._count >= self.max_calls:
            self.dropped += 1
            return entry
        self._count += 1
        entry["request"] = request.fingerprint_payload()
        entry[_UNMASKED] = True
        self._calls.setdefault(session_id, []).append(entry)
        return entry

    def calls(self, session_id: str) -> list[dict[str, Any]]:
        """The calls of `session_id` (an entry's `ok` is None while it runs, then True or False)."""
        entries = self._calls.get(session_id, [])
        for entry in entries:
            if entry.pop(_UNMASKED, False):
                entry["request"] = mask_credentials(entry["request"])
        return [{"call": i, **entry} for i, entry in enumerate(entries)]


class RecordingTracer:
    """A tracer that notes each live model call's request in a `RequestLog`, then defers to `inner`."""

    def __init__(self, log: RequestLog, inner: Tracer | None = None) -> None:
        self.log = log
        self.inner = inner if inner is not None else default_tracer()

    def session(self, started: SessionStarted) -> AbstractContextManager[SpanHandle]:
        return self.inner.session(started)

    @contextmanager
    def model_call(self, started: SessionStarted, request: ModelRequest) -> Iterator[SpanHandle]:
        entry = self.log.open(started.session_id, request)
        entry["ok"] = False
        with self.inner.model_call(started, request) as span:
            yield span
        entry["ok"] = True

    def tool_call(
        self, started: SessionStarted, name: str, call_id: str, arguments: str
    ) -> AbstractContextManager[SpanHandle]:
        return self.inner.tool_call(started, name, call_id, arguments)
