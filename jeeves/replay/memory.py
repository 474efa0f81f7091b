"""MemoryJournal: a journal that lives as long as the object, for tests and in-process resume.

Records are kept as JSON text, exactly as the file stores keep them, so a value that is not
JSON-able fails at the step that produced it and a replay from memory proves what a replay
from disk would.
"""

from __future__ import annotations

from jeeves.journal import SessionRecord, StepRecord
from jeeves.replay.base import StoreBase, encode_record

__all__ = ["MemoryJournal"]


class MemoryJournal(StoreBase):
    """Holds step and session records in memory; any number of runs, safe to share between tasks."""

    def __init__(self) -> None:
        self._steps: dict[str, dict[int, str]] = {}
        self._sessions: dict[str, str] = {}

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        text = self._steps.get(session_id, {}).get(index)
        return None if text is None else StepRecord.model_validate_json(text)

    async def put_step(self, record: StepRecord) -> None:
        self._steps.setdefault(record.session_id, {})[record.index] = encode_record(record)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        text = self._sessions.get(session_id)
        return None if text is None else SessionRecord.model_validate_json(text)

    async def put_session(self, record: SessionRecord) -> None:
        self._sessions[record.session_id] = encode_record(record)

    async def sessions(self) -> list[SessionRecord]:
        return [SessionRecord.model_validate_json(text) for text in self._sessions.values()]

    async def step_indices(self, session_id: str) -> list[int]:
        return sorted(self._steps.get(session_id, {}))

    def __repr__(self) -> str:
        return f"MemoryJournal({len(self._sessions)} sessions)"
