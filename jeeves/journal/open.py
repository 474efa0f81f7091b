"""Opening journals by path and listing the runs they hold.

`open_journal(target)` picks the store from the target's form (a `postgresql://` URL, a
`.jsonl` path, any other path: SQLite); `list_runs` reads a journal's root sessions as
`jeeves runs` shows them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jeeves._base.validate import check_int
from jeeves.errors import JournalError, UserError
from jeeves.journal.records import DAMAGED, LEASE_S, Journal, SessionRecord, first_error
from jeeves.journal.store import JournalStore, latest_roots
from jeeves.messages import Usage

__all__ = [
    "JournalLike",
    "RunSummary",
    "close_journal",
    "find_run",
    "list_runs",
    "open_journal",
    "named_runs",
    "read_runs",
    "shown_status",
]

J = TypeVar("J", bound=Journal)
JournalLike = Journal | str | os.PathLike[str]


@overload
def open_journal(target: str | os.PathLike[str], *, create: bool = True) -> JournalStore: ...
@overload
def open_journal(target: J, *, create: bool = True) -> J: ...
def open_journal(target: Any, *, create: bool = True) -> Any:
    """A journal for `target`: a `postgresql://` (or `postgres://`) URL opens a PostgresJournal,
    a path ending in `.jsonl` a JSONLJournal, any other path a SQLiteJournal (the default file
    store); a journal object is returned as it is.

    `create=False` refuses a missing file (a database without a journal). The caller closes
    what it opened (`aclose()`).
    """
    from jeeves.journal.jsonl import (
        JSONLJournal,  # the file stores load on first use: import jeeves stays light
    )
    from jeeves.journal.postgres import PostgresJournal, is_database_url
    from jeeves.journal.sqlite import SQLiteJournal

    if is_database_url(target):
        return PostgresJournal(target, create=create)
    if isinstance(target, str | os.PathLike):
        path = Path(target)
        return (
            JSONLJournal(path, create=create)
            if path.suffix == ".jsonl"
            else SQLiteJournal(path, create=create)
        )
    if all(
        callable(getattr(target, m, None)) for m in ("get_step", "put_step", "get_session", "put_session")
    ):
        return target
    raise UserError(
        f"journal={target!r} is neither a path nor a journal; pass 'runs.db', 'run.jsonl', "
        f"'postgresql://user@host/db' or a jeeves.MemoryJournal()."
    )


async def close_journal(journal: Journal) -> None:
    """Close a journal that `open_journal` opened (journals without `aclose` need nothing)."""
    if isinstance(journal, JournalStore):
        await journal.aclose()


class RunSummary(BaseModel):
    """One recorded run (a root session), as `jeeves runs` lists it."""

    model_config = ConfigDict(defer_build=True)

    session_id: str
    architecture: str
    status: str
    """in_progress (its process holds a live lease), paused (in progress, but its lease lapsed:
    the process died; resume it), awaiting_gate, completed, failed, expired, rejected, cancelled."""
    stop_reason: str | None = None
    rounds: int | None = None
    usage: Usage = Field(default_factory=Usage)
    """Tokens and USD of the whole tree, as recorded when the root last changed status."""
    task: str = ""
    output: str | None = None
    progress: dict[str, Any] | None = None
    """The last progress envelope its heartbeat recorded (step, completed steps, budget left, gate)."""


def shown_status(record: SessionRecord, now: float) -> str:
    """The record's status, with an in-progress run whose lease lapsed shown as `paused`."""
    if record.status == "in_progress" and (
        record.lease_renewed_at is None or now - record.lease_renewed_at > LEASE_S
    ):
        return "paused"
    return record.status


async def list_runs(
    journal: JournalStore | str | os.PathLike[str], *, now: float | None = None, last: int | None = None
) -> list[RunSummary]:
    """The root sessions a journal holds, in the order they were first recorded; only the
    latest `last` when given. `now` (wall-clock seconds) decides which leases lapsed;
    default: the current time."""
    if last is not None:
        check_int(last, name="last", minimum=1)
    store = open_journal(journal, create=False)
    try:
        records = await read_runs(store, last)
    finally:
        if store is not journal:
            await store.aclose()
    at = time.time() if now is None else now
    return [_summary(store, r, at) for r in records]


async def check_journal(journal: str | os.PathLike[str]) -> None:
    """Open `journal` (making it if needed) and read its latest run, as a server or a worker
    does when it starts: a folder where the file should be, a damaged file or a database that
    refuses is a `UserError` or `JournalError` now, in one line, not at the first run."""
    store = open_journal(journal)
    try:
        await read_runs(store, 1)
    finally:
        await close_journal(store)


async def find_run(store: Journal, session_id: str) -> SessionRecord | None:
    """The record of run `session_id` (a root session); None when the journal holds no run of
    that id (nothing, or a child session)."""
    record = await store.get_session(session_id)
    return record if record is not None and record.parent_id is None else None


async def read_runs(store: JournalStore, last: int | None = None) -> list[SessionRecord]:
    """The root sessions' records (one a run) in the order first recorded, only the latest
    `last` when given: the store's `runs(last)` (every store jeeves ships, which reads no child
    session), else its `sessions()`, filtered."""
    runs = getattr(store, "runs", None)
    if callable(runs):
        found: list[SessionRecord] = await runs(last)
        return found
    return [r for _, r in latest_roots(((r.session_id, r) for r in await store.sessions()), last)]


def _summary(store: JournalStore, record: SessionRecord, now: float) -> RunSummary:
    try:
        usage = Usage.model_validate(record.usage)
    except ValidationError as exc:
        raise JournalError(
            f"{getattr(store, 'path', store)} (session {record.session_id!r}): the recorded usage does not "
            f"validate ({first_error(exc)}). {DAMAGED}"
        ) from exc
    return RunSummary(
        session_id=record.session_id,
        architecture=record.architecture,
        status=shown_status(record, now),
        stop_reason=record.stop_reason,
        rounds=record.rounds,
        usage=usage,
        task=record.task,
        output=record.output,
        progress=record.progress,
    )


SHOWN_RUNS = 5
"""How many run ids an error message names at most (`named_runs`)."""


def named_runs(ids: list[str]) -> str:
    """Run ids (in the order recorded) as an error message names them, on one line however
    many the journal holds: every one up to `SHOWN_RUNS`, else the latest few and the count."""
    if not ids:
        return "none"
    shown = ", ".join(repr(sid) for sid in ids[-SHOWN_RUNS:])
    return shown if len(ids) <= SHOWN_RUNS else f"{shown} (the latest {SHOWN_RUNS} of {len(ids)})"
