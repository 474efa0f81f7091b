"""The in-memory journal tests record into, with a helper to list what was journaled."""

from __future__ import annotations

from jeeves.journal.memory import MemoryJournal


class DictJournal(MemoryJournal):
    """`jeeves.MemoryJournal` plus `kinds()`, for asserting which steps a run journaled."""

    async def kinds(self) -> list[tuple[str, int, str, str]]:
        """(session, index, kind, name) of every step, sorted."""
        out = []
        for record in await self.sessions():
            for index in await self.step_indices(record.session_id):
                step = await self.get_step(record.session_id, index)
                assert step is not None
                out.append((step.session_id, step.index, step.kind, step.name))
        return sorted(out)
