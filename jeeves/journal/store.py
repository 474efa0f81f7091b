"""What every journal store shares: the `JournalStore` protocol and the record codec.

A record is stored as one JSON object: the fields of a `StepRecord` or `SessionRecord`,
plus `"type": "step" | "session"`. Every record carries the schema version it was written
with (`v`); a store refuses a record from a newer version with a `JournalError` that says
to upgrade, and never guesses at its meaning. Nothing is pickled: a journal holds data,
never code, and a renamed class cannot break it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any, Literal, Protocol, Self, TypeVar, runtime_checkable

from pydantic import Field, Strict, ValidationError, create_model
from pydantic_core import PydanticSerializationError

from jeeves.errors import JournalError, UserError
from jeeves.journal.records import (
    DAMAGED,
    SCHEMA_VERSION,
    Journal,
    SessionRecord,
    StepRecord,
    excerpt,
    first_error,
)

__all__ = [
    "JournalStore",
    "JournalWarning",
    "StoreBase",
    "decode_record",
    "decode_text",
    "encode_record",
    "in_tree",
    "is_root",
    "latest",
    "latest_roots",
]

Record = StepRecord | SessionRecord
R = TypeVar("R", StepRecord, SessionRecord)
T = TypeVar("T")


class JournalWarning(UserWarning):
    """A journal was damaged in a way jeeves can recover from (a torn last line); it says what it kept."""


@runtime_checkable
class JournalStore(Journal, Protocol):
    """A Journal that can also list what it holds and be closed (every store jeeves ships)."""

    async def sessions(self, root: str | None = None) -> list[SessionRecord]:
        """Every session record (only `root` and its subtree, when given), in the order the
        sessions were first recorded."""
        ...

    async def step_indices(self, session_id: str) -> list[int]:
        """The indices of the steps recorded for `session_id`, ascending."""
        ...

    async def aclose(self) -> None:
        """Release files and connections; the store is not used afterwards."""
        ...


def is_root(session_id: str) -> bool:
    """Whether `session_id` is a run's root session (a child's id spells its path: `root__…`)."""
    return "__" not in session_id


def latest(items: list[T], last: int | None) -> list[T]:
    """The last `last` of `items` (all of them when `last` is None)."""
    return items if last is None else items[len(items) - last :] if last > 0 else []


def latest_roots(entries: Iterable[tuple[str, T]], last: int | None) -> list[tuple[str, T]]:
    """The entries keyed by a root session's id (one a run), in their order; only the latest
    `last` when given. What every store's `runs(last)` lists, and `read_runs`' fallback."""
    return latest([(sid, entry) for sid, entry in entries if is_root(sid)], last)


def in_tree(session_id: str, root: str | None) -> bool:
    """Whether `session_id` is `root` or below it (ids spell their path: `root__role_i…`)."""
    return root is None or session_id == root or session_id.startswith(root + "__")


def encode_record(record: Record) -> str:
    """A record as one line of JSON (no newline), `"type"` first, then the record's fields in
    their order: every store writes what this returns, and nothing else turns a record into
    JSON. Raises a `UserError` naming the step if a value is not JSON-able.

    One pass of pydantic's own serializer, written compactly (`{"type":"step","v":3,…}`).
    Earlier journals were written with `json.dumps`' separators (`{"type": "step", "v": 3, …}`):
    the same keys in the same order, the same values, so every reader (`json.loads`, pydantic's
    JSON parser) reads both alike (docs/design.md, "A record is encoded once").
    """
    try:  # `model_dump_json` with its defaults, less its wrapper's keyword plumbing
        body = record.__pydantic_serializer__.to_json(record).decode()
    except PydanticSerializationError as exc:
        where = f"Step {record.index} of" if isinstance(record, StepRecord) else "The record of"
        raise UserError(
            f"{where} session {record.session_id!r} cannot be journaled: {exc}. Journals hold JSON; give "
            f"ctx.step a JSON-able request and a result_type pydantic can serialise."
        ) from exc
    return (_STEP_HEAD if isinstance(record, StepRecord) else _SESSION_HEAD) + body[1:]


_STEP_HEAD = '{"type":"step",'
_SESSION_HEAD = '{"type":"session",'


def decode_record(data: Any, where: str) -> Record:
    """A parsed JSON object back into its record; `where` names the file and line (or row) for errors."""
    if not isinstance(data, dict) or data.get("type") not in ("step", "session"):
        raise JournalError(f"{where}: not a jeeves journal record ({excerpt(data)}). {DAMAGED}")
    version = data.get("v")
    if not isinstance(version, int) or isinstance(version, bool):
        raise JournalError(f"{where}: the record has no schema version (v={excerpt(version)}). {DAMAGED}")
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"{where}: the record was written by a newer jeeves (journal schema v{version}; this jeeves "
            f"reads up to v{SCHEMA_VERSION}). Upgrade jeeves to read this journal."
        )
    cls: type[Record] = StepRecord if data["type"] == "step" else SessionRecord
    try:
        return cls.model_validate({k: v for k, v in data.items() if k != "type"})
    except (ValidationError, RecursionError) as exc:
        raise JournalError(
            f"{where}: a malformed {data['type']} record ({first_error(exc)}). {DAMAGED}"
        ) from exc


_KIND = {StepRecord: "step", SessionRecord: "session"}


@functools.cache
def _row(cls: type[R]) -> type[R]:
    """`cls` as a stored row holds it: its fields, and `type` (the kind `cls` wants) and `v`
    (a JSON int up to SCHEMA_VERSION) required. Built at the first read, not by `import jeeves`."""
    kind: Any = Literal[_KIND[cls]]
    return create_model(
        f"_{cls.__name__}Row",
        __base__=cls,
        type=(kind, ...),
        v=(Annotated[int, Strict(), Field(le=SCHEMA_VERSION)], ...),
    )


def _plainly(text: str, cls: type[R]) -> R | None:
    """The record in `text` when nothing is wrong with it, read in one pass of pydantic's JSON
    parser (fewer instructions than `json.loads` and a validation of its result, measured on
    a replay's records); None when anything is off, so that `decode_text`'s checks find and
    word it. A record read here is the one those checks return: its last `type` (the kind
    `cls` wants) and last `v` (an int up to SCHEMA_VERSION) are what `json.loads` keeps, and
    the fields validate alike (the same values, the same fields set)."""
    try:
        row = _row(cls).model_validate_json(text)
    except (ValidationError, ValueError, RecursionError):
        return None
    fields = row.__dict__
    del fields["type"]  # the row's own field: what remains is exactly `cls`'s, in its order
    record = cls.__new__(cls)
    object.__setattr__(record, "__dict__", fields)
    object.__setattr__(record, "__pydantic_fields_set__", row.__pydantic_fields_set__ - {"type"})
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)
    return record


def decode_text(text: str, where: str, cls: type[R]) -> R:
    """A stored row's JSON text back into a record of class `cls`; damage is a `JournalError`
    naming `where` (the database and the record)."""
    plain = _plainly(text, cls)
    if plain is not None:
        return plain
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise JournalError(f"{where}: the record is not JSON jeeves can read ({why}). {DAMAGED}") from exc
    record = decode_record(data, where)
    if not isinstance(record, cls):
        raise JournalError(f"{where}: found a {excerpt(data.get('type'))} record. {DAMAGED}")
    return record


class StoreBase:
    """Closing shared by the stores: `aclose()`, `close()`, and both kinds of `with`."""

    def close(self) -> None:
        """Release files and connections (blocking; prefer `aclose()` inside async code)."""

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def unusable_path(path: Path, doing: str, exc: OSError, example: str) -> UserError:
    """The one-line error for a journal file this process cannot `doing` (read, write, make)
    at `path`: a folder there, a file where one of its folders should be, or what the system
    said (`exc`), with the fix. `example` is a file name to suggest (runs.db, runs.jsonl)."""
    if path.is_dir():
        return UserError(f"{str(path)!r} is a folder, not a journal file; give a file path, e.g. {example}.")
    blocking = next((parent for parent in path.parents if parent.exists()), None)
    if blocking is not None and not blocking.is_dir():
        return UserError(
            f"{str(blocking)!r} is a file, so no journal can be made at {str(path)!r}; give another path."
        )
    why = exc.strerror or type(exc).__name__
    return UserError(
        f"Cannot {doing} the journal {str(path)!r} ({why}); give a path this process may {doing}."
    )
