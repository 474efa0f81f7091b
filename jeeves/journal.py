"""What the context needs from a journal: step and session records behind a small protocol.

Every nondeterministic step (a model call, a tool call, a function critic) runs through
`Context.step`, keyed by `(session_id, step_index)`. Its record holds a fingerprint of the
request (a SHA-256 of its canonical JSON), the request itself (to show a diff when a
replay diverges), the result as JSON, and the events the step emitted while it ran live
(streamed deltas, retries) so a replay re-emits exactly those. Stores (in-memory, JSONL,
SQLite) live in `jeeves.replay`; this module only says what they hold.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from jeeves import errors
from jeeves.redact import mask_credentials

__all__ = [
    "Journal",
    "JournalMode",
    "ReplayedError",
    "SessionRecord",
    "StepRecord",
    "decode_error",
    "encode_error",
    "error_type_name",
    "fingerprint",
    "request_diff",
]

SCHEMA_VERSION = 1
"""Bumped when a record's shape changes; stores refuse records from a newer version."""

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
    kind: Literal["model", "tool", "function"]
    name: str = ""
    """The tool or critic name; empty for model steps (the answering model is in the result)."""
    fingerprint: str
    request: Any = None
    result: Any = None
    error: dict[str, Any] | None = None
    """Set when the step failed: the exception, which a replay raises again."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """Events the step emitted while it ran live (model deltas, retries), as JSON."""


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
    status: Literal["running", "completed", "failed"] = "running"
    stop_reason: str | None = None
    output: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    rounds: int | None = None
    """Rounds the session's output reports (critic loops), when it reports them."""
    source: dict[str, Any] | None = None
    """Root sessions only: how to rebuild the architecture for a replay, as the runner was told
    (`{"kind": "import", "ref": "module:attr"}`; other kinds are registered by their loaders)."""


class Journal(Protocol):
    """A store of step and session records. Implementations must be safe to call concurrently."""

    async def get_step(self, session_id: str, index: int) -> StepRecord | None: ...

    async def put_step(self, record: StepRecord) -> None: ...

    async def get_session(self, session_id: str) -> SessionRecord | None: ...

    async def put_session(self, record: SessionRecord) -> None: ...


def canonical(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(payload: Any) -> str:
    """SHA-256 of the payload's canonical JSON."""
    return hashlib.sha256(canonical(payload).encode()).hexdigest()


def request_diff(recorded: Any, current: Any, *, max_lines: int = 24) -> str:
    """A short unified diff between a recorded request and the one asked now.

    Credentials read as `<redacted>` on both sides: a journal written before they were
    left out of requests may still hold one, and the diff ends up in an error message.
    """
    before = json.dumps(mask_credentials(recorded), sort_keys=True, indent=1, default=str).splitlines()
    after = json.dumps(mask_credentials(current), sort_keys=True, indent=1, default=str).splitlines()
    lines = [ln for ln in difflib.unified_diff(before, after, "recorded", "now", lineterm="", n=1)]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)


class ReplayedError(Exception):
    """Stands in, on replay, for a recorded exception that is not one of jeeves' own."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


_ERROR_ATTRS = ("limit", "allowed", "spent", "model", "status_code", "env_var")


def error_type_name(error: BaseException) -> str:
    """The name events use for an error; a replayed error keeps its original name."""
    return error.error_type if isinstance(error, ReplayedError) else type(error).__name__


def encode_error(error: BaseException) -> dict[str, Any]:
    """An exception as JSON, so a replay can raise the same failure at the same step."""
    attrs = {
        a: getattr(error, a) for a in _ERROR_ATTRS if isinstance(getattr(error, a, None), str | int | float)
    }
    return {"type": error_type_name(error), "message": str(error), "attrs": attrs}


def decode_error(data: dict[str, Any]) -> BaseException:
    """The exception `encode_error` described: the jeeves class of that name, else ReplayedError."""
    cls = getattr(errors, str(data.get("type")), None)
    message = str(data.get("message", ""))
    if isinstance(cls, type) and issubclass(cls, errors.JeevesError):
        error = Exception.__new__(cls)
        Exception.__init__(error, message)
        for key, value in dict(data.get("attrs") or {}).items():
            setattr(error, key, value)
        return error
    return ReplayedError(str(data.get("type")), message)
