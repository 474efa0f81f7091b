"""What the context needs from a journal: step and session records behind a small protocol.

Every nondeterministic step (a model call, a tool call, a function critic) runs through
`Context.step`, keyed by `(session_id, step_index)`. Its record holds a fingerprint of the
request (a SHA-256 of its canonical JSON), the request itself (to show a diff when a
replay diverges), the result as JSON, and the events the step emitted while it ran live
(streamed deltas, retries) so a replay re-emits exactly those. Stores (in-memory, JSONL,
SQLite) live in `jeeves.replay`; this module only says what they hold.
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import c_encode_basestring, c_make_encoder  # type: ignore[attr-defined]
from typing import Any, Literal, Optional, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
)

from jeeves import errors
from jeeves._base.cache import kept
from jeeves._base.redact import mask_credentials
from jeeves.events import EVENT_ADAPTER, Event

__all__ = [
    "Journal",
    "JournalMode",
    "HEARTBEAT_S",
    "LEASE_S",
    "ReplayedError",
    "SessionRecord",
    "SessionStatus",
    "StepRecord",
    "TERMINAL",
    "decode_error",
    "encode_error",
    "error_type_name",
    "excerpt",
    "fingerprint",
    "first_error",
    "live_record",
    "request_diff",
    "served_events",
    "served_result",
    "step_origin",
]

SCHEMA_VERSION = 4
"""Bumped when a record's shape changes; stores refuse records from a newer version.
v2 added gate steps (`kind="gate"`, `pending`), the session lifecycle states, the lease,
the approval policy and progress; every v1 record reads as it was written.
v3 stores a model step's request as what it adds to the session's previous model step and
fingerprints it with a chained hash (`jeeves.journal.delta`); v2 model steps (the whole
request, hashed whole) still replay.
v4 hashes a model request's messages as pydantic's JSON of their list, not each message's
canonical JSON (the stored form is v3's); v3 and v2 model steps still replay."""

SessionStatus = Literal[
    "in_progress", "awaiting_gate", "paused", "completed", "failed", "expired", "rejected", "cancelled"
]
"""A session's lifecycle state. `paused` is never written: `jeeves runs` shows an
`in_progress` run whose lease lapsed (its process died) as paused. v1's `running` reads as
`in_progress`."""
HEARTBEAT_S = 5.0
"""A running process renews its lease on a run (its heartbeat) every `HEARTBEAT_S` seconds."""
LEASE_S = 2 * HEARTBEAT_S
"""A lease not renewed for `LEASE_S`, two heartbeat intervals (the orchestration seed's
"loss of heartbeat for 2 × interval_ms"), has lapsed: its process died or hung, and the run
shows as `paused`."""
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "expired", "rejected", "cancelled"})

JournalMode = Literal["record", "replay", "resume"]
"""record: run live and store every step (serving steps already stored: resume).
replay: serve every step from the journal; a missing or changed step raises ReplayDivergence.
resume: serve stored steps, run the rest live and store them (the same as record)."""


class StepRecord(BaseModel):
    """One journaled step."""

    model_config = ConfigDict(defer_build=True)

    v: int = SCHEMA_VERSION
    session_id: str
    index: int
    kind: Literal["model", "tool", "function", "gate"]
    name: str = ""
    """The tool or critic name; empty for model steps (the answering model is in the result)."""
    fingerprint: str
    request: Any = None
    result: Any = None
    error: dict[str, Any] | None = None
    """Set when the step failed: the exception, which a replay raises again."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """Events the step emitted while it ran live (model deltas, retries), as JSON."""
    pending: bool = False
    """A gate recorded before its decision: `result` holds the PendingGate, not yet an outcome."""


_LIVE: dict[Any, type[StepRecord]] = {}
MAX_LIVE_RECORDS = 512
"""How many result types `live_record` keeps a record class for (the oldest dropped past it)."""


def live_record(
    result_type: Any,
    *,
    session_id: str,
    index: int,
    kind: Literal["model", "tool", "function", "gate"],
    name: str,
    fingerprint: str,
    request: Any,
    result: Any,
    error: dict[str, Any] | None,
    events: list[dict[str, Any]],
) -> StepRecord:
    """The record of a step that ran live, its `result` the very value the step returned (None
    on an error): a `StepRecord` of a subclass whose `result` field is `result_type` (one per
    type, built at its first use and kept), so encoding the record (`encode_record`,
    `model_dump(mode="json")`) serialises the result by its type's own schema in the record's
    one pass, exactly as `TypeAdapter(result_type)` dumps it. Not validated: the kernel built
    every field (a result that does not fit its type is stored as dumped, with pydantic's
    warning, as the adapter would). The fields set are the ones the constructor was given."""
    cls = kept(_LIVE, result_type, _typed, MAX_LIVE_RECORDS)
    record = cls.__new__(cls)
    fields = {
        "v": SCHEMA_VERSION,
        "session_id": session_id,
        "index": index,
        "kind": kind,
        "name": name,
        "fingerprint": fingerprint,
        "request": request,
        "result": result,
        "error": error,
        "events": events,
        "pending": False,
    }
    object.__setattr__(record, "__dict__", fields)
    object.__setattr__(record, "__pydantic_fields_set__", _GIVEN.copy())
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


_GIVEN = {"session_id", "index", "kind", "name", "fingerprint", "request", "result", "error", "events"}


def _typed(result_type: Any) -> type[StepRecord]:
    return create_model(
        "StepRecord",
        __base__=StepRecord,
        __module__=StepRecord.__module__,
        result=(Optional[result_type], None),  # noqa: UP045 (a runtime type: `X | None` fails for some)
    )


class SessionRecord(BaseModel):
    """A session as the journal knows it: enough to list runs and to replay their headers."""

    model_config = ConfigDict(defer_build=True)

    v: int = SCHEMA_VERSION
    session_id: str
    parent_id: str | None = None
    role: str
    architecture: str
    model: str | None = None
    task: str = ""
    status: SessionStatus = "in_progress"
    stop_reason: str | None = None
    output: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    rounds: int | None = None
    """Rounds the session's output reports (critic loops), when it reports them."""
    source: dict[str, Any] | None = None
    """Root sessions only: how to rebuild the architecture for a replay, as the runner was told
    (`{"kind": "import", "ref": "module:attr"}`; other kinds are registered by their loaders)."""
    approvals: dict[str, Any] | None = None
    """Root sessions only: the run's approval policy (an `Approvals` as JSON), which a replay
    and a resume given none use."""
    created_at: float | None = None
    """Root sessions only: wall-clock seconds when the run was first recorded (session TTL)."""
    expires_at: float | None = None
    """Root sessions only: the hard session TTL's end, in wall-clock seconds; None: no TTL."""
    lease_owner: str | None = None
    """Root sessions only: the process running it (`host:pid:start`), while it runs."""
    lease_renewed_at: float | None = None
    """When the owner last renewed its lease (heartbeat); a lapsed lease shows as `paused`."""
    progress: dict[str, Any] | None = None
    """Root sessions only: the last `progress` envelope the heartbeat wrote (for `runs --watch`)."""

    @field_validator("status", mode="before")
    @classmethod
    def _v1_status(cls, value: Any) -> Any:
        return "in_progress" if value == "running" else value


class Journal(Protocol):
    """A store of step and session records. Implementations must be safe to call concurrently.

    What a store of your own must do (`jeeves.journal.store.encode_record` and the stores
    jeeves ships show how):
    - `put_step` replaces whatever the record's `(session_id, index)` held: a step whose write
      is cancelled while suspended is written again, whole, by the kernel;
    - keep a record's JSON (`encode_record(record)` or `record.model_dump(mode="json")`), not
      the record: a live step's record may hold the step's own result object;
    - a step is used only once `put_step` returned, so it must be committed by then."""

    async def get_step(self, session_id: str, index: int) -> StepRecord | None: ...

    async def put_step(self, record: StepRecord) -> None: ...

    async def get_session(self, session_id: str) -> SessionRecord | None: ...

    async def put_session(self, record: SessionRecord) -> None: ...


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
"""The encoder `json.dumps(payload, sort_keys=True, ...)` would build: fingerprints are
persisted, so the text it writes never changes."""
_ENCODE = c_make_encoder(None, str, c_encode_basestring, None, ":", ",", True, False, True)
"""`_CANONICAL`'s own C encoder (what its `encode` builds at every call, with the same
arguments), built once: the text is the same, byte for byte. It keeps no circular-reference
markers (a marker set would be shared between calls and threads), so a payload that holds
itself fails with a `RecursionError` where `json.dumps` says `ValueError("Circular
reference detected")`."""


def canonical(payload: Any) -> str:
    """The payload's canonical JSON: keys sorted, no spaces, what a fingerprint hashes."""
    return "".join(_ENCODE(payload, 0))


def fingerprint(payload: Any) -> str:
    """SHA-256 of the payload's canonical JSON."""
    return hashlib.sha256(canonical(payload).encode()).hexdigest()


def request_diff(recorded: Any, current: Any, *, max_lines: int = 24, width: int = 160) -> str:
    """A short unified diff between a recorded request and the one asked now (at most
    `max_lines` lines of at most `width` characters: a huge value cannot flood a message).

    Credentials read as `<redacted>` on both sides: a journal written before they were
    left out of requests may still hold one, and the diff ends up in an error message.
    """
    before, after = _diff_lines(recorded, width), _diff_lines(current, width)
    import difflib  # only a divergence needs it: not paid by `import jeeves`

    lines = [ln for ln in difflib.unified_diff(before, after, "recorded", "now", lineterm="", n=1)]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)


def _diff_lines(value: Any, width: int) -> list[str]:
    try:
        lines = json.dumps(mask_credentials(value), sort_keys=True, indent=1, default=str).splitlines()
    except (ValueError, RecursionError):
        lines = [
            excerpt(mask_credentials(value) if _shallow(value) else "<too deeply nested to show>", width)
        ]
    return [ln if len(ln) <= width else f"{ln[: width - 30]}... ({len(ln)} characters)" for ln in lines]


def _shallow(value: Any, depth: int = 50) -> bool:
    """Whether `value` nests less than `depth` containers deep (so it can be walked safely)."""
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if level > depth:
            return False
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, level + 1) for v in item)
    return True


class ReplayedError(Exception):
    """Stands in, on replay, for a recorded exception that is not one of jeeves' own."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


_ERROR_ATTRS: dict[str, tuple[type[errors.JeevesError], type | tuple[type, ...]]] = {
    "limit": (errors.BudgetExceeded, str),
    "allowed": (errors.BudgetExceeded, (int, float)),
    "spent": (errors.BudgetExceeded, (int, float)),
    "slice_id": (errors.BudgetExceeded, str),
    "model": (errors.ModelError, str),
    "status_code": (errors.ModelError, int),
    "env_var": (errors.MissingCredentials, str),
}
"""The attributes an error keeps in a journal: which class owns each, and its JSON type.
Decoding sets nothing else, so a journal can never set an arbitrary attribute."""

_MAX_TYPE_NAME = 200


def error_type_name(error: BaseException) -> str:
    """The name events use for an error; a replayed error keeps its original name."""
    return error.error_type if isinstance(error, ReplayedError) else type(error).__name__


def encode_error(error: BaseException) -> dict[str, Any]:
    """An exception as JSON, so a replay can raise the same failure at the same step."""
    attrs = {
        name: value
        for name, (owner, kind) in _ERROR_ATTRS.items()
        if isinstance(error, owner)
        and isinstance(value := getattr(error, name, None), kind)
        and not isinstance(value, bool)
    }
    return {"type": error_type_name(error), "message": str(error), "attrs": attrs}


def decode_error(data: Any, where: str = "the journal") -> BaseException:
    """The exception `encode_error` described: the jeeves class of that name with its checked
    attributes, else a ReplayedError. Anything else is damage: `JournalError` naming `where`."""
    if not isinstance(data, dict):
        raise _damaged(where, f"the recorded error is {excerpt(data)}, not an object")
    name, message, attrs = data.get("type"), data.get("message", ""), data.get("attrs") or {}
    if not isinstance(name, str) or not name.isidentifier() or len(name) > _MAX_TYPE_NAME:
        raise _damaged(where, f"the recorded error type {excerpt(name)} is not a class name")
    if not isinstance(message, str):
        raise _damaged(where, f"the recorded error message is {excerpt(message)}, not text")
    if not isinstance(attrs, dict):
        raise _damaged(where, f"the recorded error attributes are {excerpt(attrs)}, not an object")
    cls = getattr(errors, name, None) if name in errors.__all__ else None
    if not (isinstance(cls, type) and issubclass(cls, errors.JeevesError)):
        return ReplayedError(name, message)
    error = Exception.__new__(cls)
    Exception.__init__(error, message)
    for key, (owner, _) in _ERROR_ATTRS.items():
        if issubclass(cls, owner):
            setattr(error, key, None)
    for key, value in attrs.items():
        if not _known_attr(cls, key, value):
            raise _damaged(
                where, f"a recorded {name} cannot have attribute {excerpt(key)} = {excerpt(value)}"
            )
        setattr(error, key, value)
    return error


def _known_attr(cls: type[errors.JeevesError], key: object, value: object) -> bool:
    spec = _ERROR_ATTRS.get(key) if isinstance(key, str) else None
    return (
        spec is not None
        and issubclass(cls, spec[0])
        and isinstance(value, spec[1])
        and not isinstance(value, bool)
    )


# -- serving a recorded step ---------------------------------------------------------------
def step_origin(record: StepRecord, journal: object) -> str:
    """Names a served step record in error messages: the journal's file (or the journal) and the
    step's key."""
    path = getattr(journal, "path", None)
    return (
        f"{path if path is not None else repr(journal)} (session {record.session_id!r} step {record.index})"
    )


_EVENT_LIST: TypeAdapter[list[Event]] | None = None


def served_events(record: StepRecord, where: str, *, replayed: bool | None = None) -> list[Event]:
    """The events a recorded step emitted, validated; a bad one is damage, not a crash.

    `replayed` (when given) is set on each event, as setting it after validation would
    (`model_fields_set` included), but in the data: the step's events are validated in one
    call. A record that is not plainly well-formed is read event by event, so a damaged
    one fails with the same message as ever (the first bad event's)."""
    events = record.events
    if replayed is not None and events and all(type(e) is dict and "replayed" not in e for e in events):
        global _EVENT_LIST
        if _EVENT_LIST is None:  # built at first use: import jeeves builds no adapter for it
            _EVENT_LIST = TypeAdapter(list[Event])
        try:
            return _EVENT_LIST.validate_python([{**e, "replayed": replayed} for e in events])
        except (ValidationError, RecursionError):
            pass  # damaged: report it as the event-by-event read does, below
    try:
        served = [EVENT_ADAPTER.validate_python(data) for data in events]
    except (ValidationError, RecursionError) as exc:
        raise _damaged(where, f"a recorded event does not validate ({first_error(exc)})") from exc
    if replayed is not None:
        for event in served:
            event.replayed = replayed
    return served


def served_result(record: StepRecord, adapter: TypeAdapter[Any], where: str) -> Any:
    """A recorded step's result, validated with the type its step asks for."""
    try:
        return adapter.validate_python(record.result)
    except (ValidationError, RecursionError) as exc:
        raise _damaged(where, f"the recorded result does not fit the step ({first_error(exc)})") from exc


DAMAGED = "The journal is damaged here; restore it from a backup or record into a new file."


def _damaged(where: str, problem: str) -> errors.JournalError:
    return errors.JournalError(f"{where}: {problem}. {DAMAGED}")


def first_error(exc: BaseException) -> str:
    """What failed validation, in one short line (pydantic's own message spans lines and
    quotes the input)."""
    if isinstance(exc, ValidationError):
        first = exc.errors(include_url=False, include_input=False)[0]
        loc = ".".join(str(part) for part in first["loc"]) or "value"
        extra = f", and {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
        return f"{loc}: {first['msg']}{extra}"
    return "nested too deeply"


def excerpt(value: Any, width: int = 80) -> str:
    """A value as a short, one-line JSON excerpt, for error messages about recorded data."""
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = f"a {type(value).__name__} nested too deeply"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
