"""A dict-backed Journal for tests that record a run and replay it (jeeves.journal.Journal)."""

from __future__ import annotations

from jeeves.journal import SessionRecord, StepRecord


class DictJournal:
    """Holds step and session records in memory, round-tripped through JSON like a real store."""

    def __init__(self) -> None:
        self.steps: dict[tuple[str, int], str] = {}
        self.sessions: dict[str, str] = {}

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        data = self.steps.get((session_id, index))
        return StepRecord.model_validate_json(data) if data is not None else None

    async def put_step(self, record: StepRecord) -> None:
        self.steps[(record.session_id, record.index)] = record.model_dump_json()

    async def get_session(self, session_id: str) -> SessionRecord | None:
        data = self.sessions.get(session_id)
        return SessionRecord.model_validate_json(data) if data is not None else None

    async def put_session(self, record: SessionRecord) -> None:
        self.sessions[record.session_id] = record.model_dump_json()

    def kinds(self) -> list[tuple[str, int, str, str]]:
        """(session, index, kind, name) of every step, sorted."""
        out = []
        for (sid, index), data in sorted(self.steps.items()):
            record = StepRecord.model_validate_json(data)
            out.append((sid, index, record.kind, record.name))
        return out
