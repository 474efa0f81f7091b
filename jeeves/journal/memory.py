"""MemoryJournal: a journal that lives as long as the object, for tests and in-process resume.

Each record is kept as the JSON text a file store would write (`encode_record`, once, when
it is put) and read back from that text at every read, so a value that is not JSON-able
fails at the step that produced it, a replay from memory proves what a replay from disk
would, and no object is shared: mutating a record put or returned never changes the
journal. Reads happen on a replay or a resume, not on a live run's step path, which pays
one encoding a step.
"""

from __future__ import annotations

from jeeves.journal.records import SessionRecord, StepRecord
from jeeves.journal.snapshot import RunSnapshot
from jeeves.journal.store import StoreBase, decode_text, encode_record, in_tree, latest_roots

__all__ = ["MemoryJournal"]


class MemoryJournal(StoreBase):
    """Holds step and session records in memory; any number of runs, safe to share between tasks."""

    def __init__(self) -> None:
        self._steps: dict[str, dict[int, str]] = {}
        self._sessions: dict[str, str] = {}
        """Session id → its record's JSON text, in the order the sessions were first put."""

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        text = self._steps.get(session_id, {}).get(index)
        return None if text is None else self._step(session_id, index, text)

    async def put_step(self, record: StepRecord) -> None:
        self._steps.setdefault(record.session_id, {})[record.index] = encode_record(record)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        text = self._sessions.get(session_id)
        return None if text is None else self._session(session_id, text)

    async def put_session(self, record: SessionRecord) -> None:
        self._sessions[record.session_id] = encode_record(record)

    async def sessions(self, root: str | None = None) -> list[SessionRecord]:
        return [self._session(sid, text) for sid, text in self._sessions.items() if in_tree(sid, root)]

    async def runs(self, last: int | None = None) -> list[SessionRecord]:
        """The root sessions, one a run, in the order first recorded (only the latest `last`
        when given); only those are decoded."""
        return [self._session(sid, text) for sid, text in latest_roots(self._sessions.items(), last)]

    async def step_indices(self, session_id: str) -> list[int]:
        return sorted(self._steps.get(session_id, {}))

    async def read_run(self, root: str) -> RunSnapshot:
        """Root session `root` and its subtree, every session and step (a strict replay's
        read), decoded on first use."""
        return RunSnapshot.from_index(
            self._sessions, self._steps, root, decode_session=self._session, decode_step=self._step
        )

    def _step(self, session_id: str, index: int, text: str) -> StepRecord:
        return decode_text(text, f"{self!r} (session {session_id!r} step {index})", StepRecord)

    def _session(self, session_id: str, text: str) -> SessionRecord:
        return decode_text(text, f"{self!r} (session {session_id!r})", SessionRecord)

    def __repr__(self) -> str:
        return f"MemoryJournal({len(self._sessions)} sessions)"
