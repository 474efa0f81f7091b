"""The in-memory journal tests record into, with a helper to list what was journaled, and
one to cancel a writer while its write is in flight."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio

from jeeves.journal.memory import MemoryJournal


class HeldWrite(Protocol):
    """A store whose write sets `writing` once it is in flight, then waits for `release`."""

    writing: anyio.Event
    release: anyio.Event


async def cancel_mid_write(journal: HeldWrite, body: Callable[[], Awaitable[object]]) -> anyio.CancelScope:
    """Run `body` in a cancel scope, cancel it while `journal`'s write is in flight, then let
    the write go on (`release`) once every task settled; the scope, for its `cancelled_caught`."""
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            await body()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await journal.writing.wait()
        scope.cancel()
        await anyio.wait_all_tasks_blocked()
        journal.release.set()
    return scope


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
