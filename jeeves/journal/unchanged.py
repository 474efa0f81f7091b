"""A resume that fails before it runs anything leaves the run as it was.

Resuming writes the run's session records at once (the root goes `in_progress`), and a
failure marks them `failed`. When the failure came before any step ran (no route for a
role, a missing API key at the first call, a spec that no longer builds), the run is
exactly where it was: a run waiting at a gate is still waiting, and `jeeves runs` must
not say `failed`. So the session records are read before the resume, and put back when it
raised without a new step on record. A failed model call is not a step that ran: it left
nothing in the world, and the next resume makes it again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import anyio

from jeeves.journal.records import Journal, SessionRecord
from jeeves.journal.store import JournalStore

__all__ = ["restored_if_nothing_ran"]


@asynccontextmanager
async def restored_if_nothing_ran(journal: Journal, root: str) -> AsyncIterator[None]:
    """Run the block (a resume of run `root`); if it raises before a step ran, put the run's
    session records back as they were. Journals that cannot list a run's records are left alone."""
    if not isinstance(journal, JournalStore):
        yield
        return
    before = {record.session_id: record for record in await journal.sessions(root)}
    steps = await _steps(journal, before.values())
    try:
        yield
    except BaseException:
        with anyio.CancelScope(shield=True):
            if not await _ran(journal, root, steps):
                await _put_back(journal, before)
        raise


async def _steps(journal: JournalStore, sessions: Iterable[SessionRecord]) -> set[tuple[str, int]]:
    return {
        (record.session_id, index)
        for record in sessions
        for index in await journal.step_indices(record.session_id)
    }


async def _ran(journal: JournalStore, root: str, before: set[tuple[str, int]]) -> bool:
    """Whether a step other than a failed model call was recorded since `before`."""
    for session_id, index in await _steps(journal, await journal.sessions(root)) - before:
        step = await journal.get_step(session_id, index)
        if step is not None and (step.kind != "model" or step.error is None):
            return True
    return False


async def _put_back(journal: JournalStore, before: dict[str, SessionRecord]) -> None:
    # the root last: a SQL store leaves a child's record behind, and the root's carries it
    for session_id, record in sorted(before.items(), key=lambda item: item[1].parent_id is None):
        if await journal.get_session(session_id) != record:
            await journal.put_session(record)
