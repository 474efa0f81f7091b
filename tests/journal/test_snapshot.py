"""RunSnapshot: a strict replay reads its run once, and only its run, and only for that replay."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import jeeves
from jeeves.errors import JournalError, ReplayDivergence
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import SessionRecord, StepRecord
from jeeves.journal.snapshot import RunSnapshot
from jeeves.journal.sqlite import SQLiteJournal
from jeeves.journal.store import JournalStore
from tests.journal import archs
from tests.journal.conftest import Stores

pytestmark = pytest.mark.anyio

ROOTS = ("r1", "r10", "r1_a", "r1_A", "r1.b", "r")
"""Root ids that share a prefix with r1 (r10, r1_a…), or that r1 extends (r): none is r1's."""


async def test_a_run_read_at_once_is_the_run_and_nothing_else(stores: Stores) -> None:
    store = stores.open()
    for root in ROOTS:
        await jeeves.run(
            archs.build_fanout(), "count these", model=archs.model(), journal=store, session_id=root
        )
    reader = stores.open()
    for root in ROOTS:
        run = await reader.read_run(root)  # type: ignore[attr-defined]
        assert isinstance(run, RunSnapshot)
        recorded = await reader.sessions(root)
        assert [r.session_id for r in recorded] == [r.session_id for r in run.sessions()]
        assert len(recorded) == 4 and all(r.session_id.split("__")[0] == root for r in recorded)
        for record in recorded:
            assert run.session(record.session_id) == record
            indices = await reader.step_indices(record.session_id)
            assert indices and run.step_indices(record.session_id) == indices
            for index in indices:
                assert run.step(record.session_id, index) == await reader.get_step(record.session_id, index)
            assert run.step(record.session_id, indices[-1] + 1) is None
        assert run.session(f"{root}__nobody_0") is None and run.step_indices(f"{root}__nobody_0") == []
    assert (await reader.read_run("r2")).sessions() == []  # type: ignore[attr-defined]


async def test_a_sqlite_replay_makes_one_round_trip_to_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        for root in ("r1", "r10"):
            await jeeves.run(
                archs.build_fanout(), "count these", model=archs.model(), journal=journal, session_id=root
            )
    calls: list[str] = []
    original = SQLiteJournal._locked

    def spy(self: SQLiteJournal, fn: Any, *args: object) -> Any:
        calls.append(fn.__name__)
        return original(self, fn, *args)

    monkeypatch.setattr(SQLiteJournal, "_locked", spy)
    async with SQLiteJournal(path, create=False) as journal:
        result = await jeeves.replay(archs.build_fanout(), journal, "r1")
        assert calls == ["_read_run"]  # four sessions, their steps: one query per table, once
        await jeeves.replay(archs.build_fanout(), journal, "r1")
    assert calls == ["_read_run", "_read_run"]  # each replay reads the run again
    calls.clear()
    assert (await jeeves.replay(archs.build_fanout(), path, "r1")).text == result.text  # by path, too
    assert calls == ["_read_run"]


async def test_each_replay_reads_the_journal_as_it_is_then(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await jeeves.run(
            archs.build_agent(), "count these", model=archs.model(), journal=journal, session_id="r1"
        )
        await jeeves.replay(archs.build_agent(), journal, "r1")
        with sqlite3.connect(path) as other:  # another process changes the recorded outcome
            (text,) = other.execute("SELECT record FROM sessions WHERE session_id = 'r1'").fetchone()
            record = SessionRecord.model_validate_json(text).model_copy(update={"output": "something else"})
            other.execute(
                "UPDATE sessions SET record = ? WHERE session_id = 'r1'",
                ('{"type": "session", ' + record.model_dump_json()[1:],),
            )
        other.close()
        with pytest.raises(ReplayDivergence, match="ended otherwise than recorded"):
            await jeeves.replay(archs.build_agent(), journal, "r1")


async def test_a_damaged_step_fails_when_the_replay_reaches_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await jeeves.run(archs.Steps(3), "t", journal=path, session_id="r1")
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE steps SET record = \'{"type": "step", "v": 2}\' WHERE idx = 1')
    conn.close()
    async with SQLiteJournal(path) as journal:
        run = await journal.read_run("r1")  # reading the run decodes nothing yet
        assert isinstance(run.step("r1", 0), StepRecord)
        with pytest.raises(JournalError, match=r"runs.db \(session 'r1' step 1\): a malformed step record"):
            run.step("r1", 1)
        seen: list[str] = []
        with pytest.raises(JournalError, match=r"session 'r1' step 1\): a malformed step record"):
            async with jeeves.stream(
                archs.Steps(3), "t", journal=journal, session_id="r1", mode="replay"
            ) as events:
                async for event in events:
                    seen.append(event.type)
        assert seen[0] == "session.started" and "session.failed" in seen  # the session failed at step 1


class _Bare:
    """A journal with only the Journal protocol and listing (no `read_run`): read at each step."""

    def __init__(self) -> None:
        self.inner = MemoryJournal()
        self.reads = 0

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        self.reads += 1
        return await self.inner.get_step(session_id, index)

    async def put_step(self, record: StepRecord) -> None:
        await self.inner.put_step(record)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self.inner.get_session(session_id)

    async def put_session(self, record: SessionRecord) -> None:
        await self.inner.put_session(record)

    async def sessions(self, root: str | None = None) -> list[SessionRecord]:
        return await self.inner.sessions(root)

    async def step_indices(self, session_id: str) -> list[int]:
        return await self.inner.step_indices(session_id)

    async def aclose(self) -> None:
        pass


async def test_a_store_that_cannot_read_a_run_at_once_replays_as_strictly() -> None:
    bare = _Bare()
    assert isinstance(bare, JournalStore) and not hasattr(bare, "read_run")
    await jeeves.run(archs.Steps(3), "t", journal=bare, session_id="r1")
    before = bare.reads
    await jeeves.replay(archs.Steps(3), bare, "r1")
    assert bare.reads - before == 3  # served step by step from the store
    with pytest.raises(ReplayDivergence, match="step 2 of session 'r1', which the replay never asked for"):
        await jeeves.replay(archs.Steps(2), bare, "r1")
