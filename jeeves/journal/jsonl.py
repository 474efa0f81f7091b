"""JSONLJournal: an append-only file, one JSON record a line, flushed at every step.

Writing: each record is appended as one line and flushed to the operating system before
the step returns, so a process killed with SIGKILL loses at most the step that was
running (pass `fsync=True` to survive a power cut too, at a disk sync per step). Session
records are appended again when a session's status changes; the last one wins.

Reading: the whole file is read once, on first use, into an index of its lines by session
and step, and a record is decoded when it is first read: a journal of many runs costs a new
run a scan of the file, not a decoding of every record in it (a line as `encode_record`
writes one is indexed by its head; any other line is decoded at once). A last line cut
short by a crash mid-write is ignored with a `JournalWarning` and every record before it is
kept; the next write cuts the torn bytes off first, so the file stays one record a line.
Any other damage (a bad line in the middle, a record from a newer jeeves) raises
`JournalError` naming the file and the line: a line no index can read at once, a line
whose body is damaged when its record is read. File work runs in a worker thread, off the
event loop. One writer at a time: for several processes, use `SQLiteJournal`.
"""

from __future__ import annotations

import json
import linecache
import os
import re
import threading
import warnings
from pathlib import Path
from typing import IO, Any, TypeVar

import anyio.to_thread

from jeeves.errors import JournalError, UserError
from jeeves.journal.records import DAMAGED, SCHEMA_VERSION, SessionRecord, StepRecord
from jeeves.journal.snapshot import RunSnapshot
from jeeves.journal.store import (
    JournalWarning,
    StoreBase,
    decode_record,
    encode_record,
    in_tree,
    latest_roots,
    unusable_path,
)

__all__ = ["JSONLJournal"]

R = TypeVar("R", StepRecord, SessionRecord)

_STEP_LINE = re.compile(
    rb'\{"type":"step","v":([0-9]{1,9}),"session_id":("(?:[^"\\]|\\.)*"),"index":([0-9]{1,18}),'
)
_SESSION_LINE = re.compile(rb'\{"type":"session","v":([0-9]{1,9}),"session_id":("(?:[^"\\]|\\.)*"),')
"""The head of a line as `encode_record` writes it (a step's, a session's): its kind, schema
version, session id (a JSON string) and step index, read without decoding the rest."""


class _Line:
    """A line of the file not decoded yet: its bytes and its number (for errors)."""

    __slots__ = ("number", "raw")

    def __init__(self, raw: bytes, number: int) -> None:
        self.raw, self.number = raw, number


def _warn(path: Path, number: int, message: str) -> None:
    """Warn that line `number` of journal `path` is damaged: the message starts with the
    place (`run.jsonl line 7: ...`, so it names it wherever it is shown, `-W error`
    included), and the warning's own location is that line, so filters by location work;
    the formatter is kept from quoting it (the torn line may be any size)."""
    filename = str(path)
    seeded = filename not in linecache.cache
    if seeded:
        linecache.cache[filename] = (0, None, [], filename)  # no source lines to show
    try:
        warnings.warn_explicit(
            f"{filename} line {number}: {message}",
            JournalWarning,
            filename,
            number,
            module="jeeves.journal.jsonl",
        )
    finally:
        if seeded:
            linecache.cache.pop(filename, None)


class JSONLJournal(StoreBase):
    """A journal in a JSON Lines file.

    Args:
        path: The file; created (with its folder) on the first write.
        fsync: Sync the file to disk after every record, not only flush it to the OS.
        create: False to refuse a missing file instead of treating it as an empty journal
            (replaying and listing use this, so a typo is an error, not an empty list).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False, create: bool = True) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._create = create
        self._lock = threading.Lock()
        self._loaded = False
        self._steps: dict[str, dict[int, StepRecord | _Line]] = {}
        self._sessions: dict[str, SessionRecord | _Line] = {}
        """The index: the latest line for each key, as its record once read (`_step`, `_session`)."""
        self._file: IO[bytes] | None = None
        self._cut_at: int | None = None
        """Where a torn last line starts: cut there before the first write."""
        self._needs_newline = False
        """The last line is whole but lacks its newline: add one before the first write."""

    # -- reading -----------------------------------------------------------------------
    async def _ensure_loaded(self) -> None:
        if not self._loaded:
            torn = await anyio.to_thread.run_sync(self._load)
            if torn is not None:  # warned here, in the caller's thread, where warning filters apply
                _warn(self.path, *torn)

    def _load(self) -> tuple[int, str] | None:
        with self._lock:
            if self._loaded:
                return None
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                if not self._create:
                    raise UserError(f"There is no journal at {str(self.path)!r}; check the path.") from None
                data = b""
            except OSError as exc:  # a folder, a file this process may not read
                raise unusable_path(self.path, "read", exc, "runs.jsonl") from None
            torn = self._index(data)
            self._loaded = True
            return torn

    def _index(self, data: bytes) -> tuple[int, str] | None:
        """Read every line; a torn last line is left out and described (its number, what was kept)."""
        lines = data.split(b"\n")
        kept = 0
        for number, raw in enumerate(lines[:-1], start=1):
            if raw.strip():
                if not self._index_line(raw, number):
                    self._add(decode_record(self._parse(raw, number), f"{self.path}:{number}"))
                kept += 1
        tail, number = lines[-1], len(lines)
        if not tail.strip():
            return None
        try:
            parsed = json.loads(tail)
        except RecursionError as exc:
            raise self._unreadable(number, exc) from exc
        except ValueError:  # cut short by a crash mid-write
            self._cut_at = len(data) - len(tail)
            return number, (
                f"the last line is incomplete ({len(tail)} bytes, a crash mid-write?); it is ignored and the "
                f"{kept} records before it are kept. The next write cuts it off."
            )
        self._add(decode_record(parsed, f"{self.path}:{number}"))
        self._needs_newline = True
        return None

    def _index_line(self, raw: bytes, number: int) -> bool:
        """Index line `number` by its head, undecoded; False when it has no head to index by
        (the caller decodes it at once)."""
        if (step := _STEP_LINE.match(raw)) is not None:
            version, token, index = step.groups()
        elif (session := _SESSION_LINE.match(raw)) is not None:
            (version, token), index = session.groups(), None
        else:
            return False
        if int(version) > SCHEMA_VERSION:  # decoded at once, to say so now
            return False
        session_id = token[1:-1].decode() if b"\\" not in token else json.loads(token)
        if index is None:
            self._sessions[session_id] = _Line(raw, number)
        else:
            self._steps.setdefault(session_id, {})[int(index)] = _Line(raw, number)
        return True

    def _step(self, session_id: str, index: int, entry: StepRecord | _Line) -> StepRecord:
        """The record of an index entry (a snapshot's too), decoded on first use and kept in
        the index while the entry is still the latest for its key."""
        if not isinstance(entry, _Line):
            return entry
        record = self._decode(entry, StepRecord, session_id, index)
        steps = self._steps.get(session_id, {})
        if steps.get(index) is entry:
            steps[index] = record
        return record

    def _session(self, session_id: str, entry: SessionRecord | _Line) -> SessionRecord:
        """As `_step`, for a session's entry."""
        if not isinstance(entry, _Line):
            return entry
        record = self._decode(entry, SessionRecord, session_id, None)
        if self._sessions.get(session_id) is entry:
            self._sessions[session_id] = record
        return record

    def _decode(self, line: _Line, cls: type[R], session_id: str, index: int | None) -> R:
        """The record on an indexed line, which must be the one its head said."""
        where = f"{self.path}:{line.number}"
        record = decode_record(self._parse(line.raw, line.number), where)
        if (
            not isinstance(record, cls)
            or record.session_id != session_id
            or getattr(record, "index", None) != index
        ):
            raise JournalError(f"{where}: the line's record is not the one its head names. {DAMAGED}")
        return record

    def _parse(self, raw: bytes, number: int) -> Any:
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:  # malformed JSON, undecodable bytes, nested too deeply
            raise self._unreadable(number, exc) from exc

    def _unreadable(self, number: int, exc: Exception) -> JournalError:
        why = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return JournalError(f"{self.path}:{number}: the line is not JSON jeeves can read ({why}). {DAMAGED}")

    def _add(self, record: StepRecord | SessionRecord) -> None:
        if isinstance(record, StepRecord):
            self._steps.setdefault(record.session_id, {})[record.index] = record
        else:
            self._sessions[record.session_id] = record

    # -- writing -----------------------------------------------------------------------
    def _append(self, line: str) -> None:
        with self._lock:
            if self._file is None:
                self._file = self._open_for_append()
            self._file.write(line.encode() + b"\n")
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())

    def _open_for_append(self) -> IO[bytes]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._cut_at is not None:
                with open(self.path, "r+b") as torn:
                    torn.truncate(self._cut_at)
                self._cut_at = None
            file = open(self.path, "ab")  # held open until close()
        except OSError as exc:  # a folder, a read-only file or folder, a full disk
            raise unusable_path(self.path, "write", exc, "runs.jsonl") from None
        if self._needs_newline:
            file.write(b"\n")
            self._needs_newline = False
        return file

    async def _write(self, record: StepRecord | SessionRecord) -> None:
        line = encode_record(record)
        await self._ensure_loaded()
        await anyio.to_thread.run_sync(self._append, line)
        # the index holds what the file says, as a reload would read it: a live step's record
        # holds its result as the step returned it (`live_record`), which no reader is handed
        self._add(decode_record(json.loads(line), f"{self.path} (the line just written)"))

    # -- the Journal protocol ------------------------------------------------------------
    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        await self._ensure_loaded()
        entry = self._steps.get(session_id, {}).get(index)
        return None if entry is None else self._step(session_id, index, entry)

    async def put_step(self, record: StepRecord) -> None:
        await self._write(record)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        await self._ensure_loaded()
        entry = self._sessions.get(session_id)
        return None if entry is None else self._session(session_id, entry)

    async def put_session(self, record: SessionRecord) -> None:
        await self._write(record)

    async def sessions(self, root: str | None = None) -> list[SessionRecord]:
        await self._ensure_loaded()
        return [
            self._session(sid, entry) for sid, entry in list(self._sessions.items()) if in_tree(sid, root)
        ]

    async def runs(self, last: int | None = None) -> list[SessionRecord]:
        """The root sessions, one a run, in the order first recorded (only the latest `last`
        when given); only those are decoded."""
        await self._ensure_loaded()
        return [self._session(sid, entry) for sid, entry in latest_roots(self._sessions.items(), last)]

    async def step_indices(self, session_id: str) -> list[int]:
        await self._ensure_loaded()
        return sorted(self._steps.get(session_id, {}))

    async def read_run(self, root: str) -> RunSnapshot:
        """Root session `root` and its subtree, every session and step (a strict replay's read)."""
        await self._ensure_loaded()
        return RunSnapshot.from_index(
            self._sessions, self._steps, root, decode_session=self._session, decode_step=self._step
        )

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __repr__(self) -> str:
        return f"JSONLJournal({str(self.path)!r})"
