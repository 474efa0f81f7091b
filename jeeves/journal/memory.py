"""MemoryJournal: a journal that lives as long as the object, for tests and in-process resume.

Each record is turned into JSON text and back before it is kept, exactly as the file
stores do, so a value that is not JSON-able fails at the step that produced it and a
replay from memory proves what a replay from disk would.
"""

from __future__ import annotations

from jeeves.journal.records import SessionRecord, StepRecord
from jeeves.journal.snapshot import RunSnapshot
from jeeves.journal.store import StoreBase, encode_record, in_tree

__all__ = ["MemoryJournal"]


class MemoryJournal(StoreBase):
    """Holds step and session records in memory; any number of runs, safe to share between tasks."""

    def __init__(self) -> None:
        self._steps: dict[str, dict[int, StepRecord]] = {}
        self._sessions: dict[str, SessionRecord] = {}

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        return self._steps.get(session_id, {}).get(index)

    async def put_step(self, record: StepRecord) -> None:
        stored = StepRecord.model_validate_json(encode_record(record))
        self._steps.setdefault(record.session_id, {})[record.index] = stored

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return self._sessions.get(session_id)

    async def put_session(self, record: SessionRecord) -> None:
        self._sessions[record.session_id] = SessionRecord.model_validate_json(encode_record(record))

    async def sessions(self, root: str | None = None) -> list[SessionRecord]:
        return [r for r in self._sessions.values() if in_tree(r.session_id, root)]

    async def step_indices(self, session_id: str) -> list[int]:
        return sorted(self._steps.get(session_id, {}))

    async def read_run(self, root: str) -> RunSnapshot:
        """Root session `root` and its subtree, every session and step (a strict replay's read)."""
        return run_of(self._sessions, self._steps, root)

    def __repr__(self) -> str:
        return f"MemoryJournal({len(self._sessions)} sessions)"


def run_of(
    sessions: dict[str, SessionRecord], steps: dict[str, dict[int, StepRecord]], root: str
) -> RunSnapshot:
    """The snapshot of run `root` from a store's in-memory index (copies of its dicts: a
    snapshot does not change when the store does)."""
    return RunSnapshot(
        {sid: record for sid, record in sessions.items() if in_tree(sid, root)},
        {sid: dict(by_index) for sid, by_index in steps.items() if in_tree(sid, root)},
    )
