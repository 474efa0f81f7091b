"""What each live model call of a server run was asked: a tracer that logs requests per session.

Events say what a model answered, not what it was asked. `RecordingTracer` wraps the run's
tracer (the default one, so OpenTelemetry keeps working) and stores each live model
call's request (its fingerprint payload: messages, tools, output schema, params, with
credentials stripped, and masked again) in the run's `RequestLog`, in call order per
session. The k-th `model.completed` of a session answered its k-th call that ended well.

The log grows linearly in turns, and so does its time: a call's request is stored as what
it adds to the previous call of its session (how many of that call's messages it keeps,
then its new messages), and tools, output schema and params are stored once while they
stay the same. A 600-turn conversation is held once, not 600 times, and each call dumps
only its new messages: the ones it keeps are found among the previous call's `Message`
objects (the same objects, or equal ones; a list compare in C), as a journaled step's key
finds them (`jeeves.journal.delta`). After a message was edited in place
(`jeeves.messages.mutations`) the objects no longer stand for what was stored, so that
call is dumped whole and compared with what the log holds. Reading rebuilds each call's whole
request, masked (masking walks every string, and most requests are never looked at), so
a reader sees what it would have seen had every request been stored whole; nothing
leaves the log unmasked. The log lives as long as its run's record: the registry drops
both `retention_s` after the run ended.

The route sends the log in the same form (`deltas`, `delta_form`): each call as how many
messages of the previous call it keeps (`kept`), its new ones (`added`), and the tools,
output schema and params (`shared`) only when they changed, so the explorer's read of a
600-turn session is as long as the conversation, not 600 conversations (the page rebuilds
a call's whole request when it is opened). A journal's steps store each request whole; the
journal browser sends them in this form too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from jeeves import messages as _messages
from jeeves._base.redact import mask_credentials
from jeeves.events import SessionStarted
from jeeves.messages import ModelRequest, messages_serializer
from jeeves.telemetry.tracer import SpanHandle, Tracer, default_tracer

__all__ = ["MAX_LOGGED_CALLS", "DeltaForm", "RecordingTracer", "RequestLog", "delta_form", "whole_requests"]

MAX_LOGGED_CALLS = 2000
"""Model calls a run's `RequestLog` keeps; later calls are counted but not stored."""

_SHARED = ("tools", "output_schema", "params")
"""The parts of a request stored once while they stay the same from call to call."""


@dataclass
class _Call:
    """One stored call: its messages as a delta on the previous call of its session."""

    model: str
    kept: int
    """How many messages of the previous call of the session this call starts with."""
    added: list[Any]
    """The messages after those."""
    shared: dict[str, Any]
    """tools, output_schema, params: the previous call's very objects when they are equal."""
    ok: bool | None = None
    masked: bool = False
    """Whether `added` and `shared` were masked already (done once, at the first read)."""

    def mask(self, done: dict[int, Any]) -> None:
        """Mask what this call stored, once; `done` maps shared objects already masked to their masks."""
        if self.masked:
            return
        self.added = mask_credentials(self.added)
        for key, value in self.shared.items():
            if id(value) not in done:
                done[id(value)] = mask_credentials(value)
            self.shared[key] = done[id(value)]
        self.masked = True


@dataclass
class _Session:
    calls: list[_Call] = field(default_factory=list)
    last: list[Any] = field(default_factory=list)
    """The previous call's whole message list (references to stored messages, no copies)."""
    asked: list[Any] = field(default_factory=list)
    """The previous call's `Message` objects, which `last` holds the dumps of."""
    mutations: int = -1
    """`jeeves.messages.mutations` when `asked` was taken: while it is unchanged, equal
    objects have equal dumps."""


def _kept(previous: list[Any], messages: list[Any]) -> int:
    """How many leading messages `messages` shares with `previous` (the same objects, or equal
    ones): one list compare when it extends `previous` (the usual call), which C makes
    by identity for the same objects."""
    n = len(previous)
    if len(messages) >= n and messages[:n] == previous:
        return n
    n = 0
    for old, new in zip(previous, messages, strict=False):
        if old is not new and old != new:
            break
        n += 1
    return n


class RequestLog:
    """The requests of one run's live model calls, per session, in call order."""

    def __init__(self, max_calls: int = MAX_LOGGED_CALLS) -> None:
        self.max_calls = max_calls
        self.dropped = 0
        """Calls made after `max_calls` were stored (their requests are not kept)."""
        self._sessions: dict[str, _Session] = {}
        self._count = 0

    def open(self, session_id: str, request: ModelRequest) -> _Call | None:
        """Store a call that is starting; the returned entry's `ok` is set when it ends.
        None when the log is full (the call is counted in `dropped`)."""
        if self._count >= self.max_calls:
            self.dropped += 1
            return None
        self._count += 1
        session = self._sessions.setdefault(session_id, _Session())
        asked, dump = request.messages, messages_serializer().to_python
        same = session.mutations == _messages.mutations  # the objects stand for their stored dumps
        if same:
            kept = _kept(session.asked, asked)
            added: list[Any] = dump(asked[kept:], mode="json")
        else:
            messages = dump(asked, mode="json")
            kept = _kept(session.last, messages)
            added = messages[kept:]
        payload = request.settings_payload()
        previous = session.calls[-1].shared if session.calls else {}
        shared = {
            k: previous[k] if k in previous and previous[k] == payload[k] else payload[k] for k in _SHARED
        }
        call = _Call(request.model, kept, added, shared)
        if same and kept == len(session.last):  # the usual call: it extends the previous one
            session.last.extend(added)
            session.asked.extend(asked[kept:])
        else:  # `asked` from the very objects this call dumped
            session.last, session.asked = session.last[:kept] + added, list(asked)
        session.mutations = _messages.mutations
        session.calls.append(call)
        return call

    def calls(self, session_id: str) -> list[dict[str, Any]]:
        """The calls of `session_id` (an entry's `ok` is None while it runs, then True or False),
        each with its whole request, masked."""
        out: list[dict[str, Any]] = []
        messages: list[Any] = []
        session = self._sessions.get(session_id)
        done: dict[int, Any] = {}
        for i, call in enumerate(session.calls if session is not None else ()):
            call.mask(done)  # no key of the request's top level is a credential's: mask each part
            messages = messages[: call.kept] + call.added
            request = {"messages": messages, **call.shared}
            out.append({"call": i, "model": call.model, "request": request, "ok": call.ok})
        return out

    def deltas(self, session_id: str) -> list[dict[str, Any]]:
        """The calls of `session_id` as the route sends them (`delta_form`), masked: each
        stored message is sent once."""
        out: list[dict[str, Any]] = []
        session = self._sessions.get(session_id)
        done: dict[int, Any] = {}
        previous: dict[str, Any] | None = None
        for i, call in enumerate(session.calls if session is not None else ()):
            call.mask(done)
            entry = {"call": i, "model": call.model, "ok": call.ok, "kept": call.kept, "added": call.added}
            if previous is None or any(
                call.shared[k] is not previous[k] and call.shared[k] != previous[k] for k in _SHARED
            ):
                entry["shared"] = call.shared
            previous = call.shared
            out.append(entry)
        return out


class DeltaForm:
    """Turns calls with whole requests (`{"request": {"messages": [...], "tools": ...}, ...}`),
    added one by one, into the form the route sends: `request` replaced by `kept` (the
    leading messages shared with the previous call), `added` (the rest) and `shared` (tools,
    output schema, params; only when they differ from the previous call's). A call without a
    request (None) keeps none, adds none and says `missing`; the next call is compared with
    the last one that had a request. Holds only the previous call's request."""

    def __init__(self) -> None:
        self._messages: list[Any] = []
        self._shared: dict[str, Any] | None = None

    def add(self, call: dict[str, Any]) -> dict[str, Any]:
        request = call.get("request")
        entry = {k: v for k, v in call.items() if k != "request"}
        if not isinstance(request, dict):
            entry.update(kept=0, added=[], missing=True)
            return entry
        messages = list(request.get("messages") or [])
        kept = _kept(self._messages, messages)
        shared = {k: v for k, v in request.items() if k != "messages"}
        entry.update(kept=kept, added=messages[kept:])
        if self._shared is None or shared != self._shared:
            entry["shared"] = shared
        self._messages, self._shared = messages, shared
        return entry


def delta_form(calls: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """`calls` (each with its whole request) as the route sends them (`DeltaForm`)."""
    form = DeltaForm()
    return [form.add(call) for call in calls]


def whole_requests(calls: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The route's calls (`DeltaForm`) back with their whole requests (`request`; None for a
    call whose request is missing): what a client that wants every request whole does."""
    out: list[dict[str, Any]] = []
    messages: list[Any] = []
    shared: dict[str, Any] = {}
    for call in calls:
        entry = {k: v for k, v in call.items() if k not in ("kept", "added", "shared", "missing")}
        if call.get("missing"):
            entry["request"] = None
        else:
            messages = messages[: call["kept"]] + list(call["added"])
            shared = call.get("shared", shared)
            entry["request"] = {"messages": messages, **shared}
        out.append(entry)
    return out


class RecordingTracer:
    """A tracer that notes each live model call's request in a `RequestLog`, then defers to `inner`."""

    def __init__(self, log: RequestLog, inner: Tracer | None = None) -> None:
        self.log = log
        self.inner = inner if inner is not None else default_tracer()

    def session(self, started: SessionStarted) -> AbstractContextManager[SpanHandle]:
        return self.inner.session(started)

    @contextmanager
    def model_call(self, started: SessionStarted, request: ModelRequest) -> Iterator[SpanHandle]:
        call = self.log.open(started.session_id, request)
        if call is not None:
            call.ok = False
        with self.inner.model_call(started, request) as span:
            yield span
        if call is not None:
            call.ok = True

    def tool_call(
        self, started: SessionStarted, name: str, call_id: str, arguments: str
    ) -> AbstractContextManager[SpanHandle]:
        return self.inner.tool_call(started, name, call_id, arguments)
