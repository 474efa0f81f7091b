"""MemoryJournal keeps JSON, as a file would: no object is shared with whoever put or read a record."""

from __future__ import annotations

from typing import Any

import pytest

import jeeves
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import SessionRecord, StepRecord
from jeeves.journal.store import encode_record
from tests.journal import archs

pytestmark = pytest.mark.anyio


def _step(**fields: Any) -> StepRecord:
    return StepRecord(session_id="r1", index=0, kind="tool", name="add", fingerprint="f" * 64, **fields)


async def test_mutating_a_record_put_or_read_never_changes_the_journal() -> None:
    journal = MemoryJournal()
    put = _step(request={"args": [1, 2]}, result={"text": "3"}, events=[{"type": "model.delta", "text": "x"}])
    kept = encode_record(put)
    await journal.put_step(put)
    put.request["args"].append(3)
    put.result["text"] = "changed after it was put"
    put.events.clear()

    read = await journal.get_step("r1", 0)
    assert read is not None and encode_record(read) == kept
    read.request["args"].clear()
    read.result["text"] = "changed after it was read"
    again = await journal.get_step("r1", 0)
    assert again is not None and again is not read and encode_record(again) == kept

    snapshot = await journal.read_run("r1")
    served = snapshot.step("r1", 0)
    assert served is not None
    served.request["args"].clear()
    assert encode_record(await journal.get_step("r1", 0)) == kept  # type: ignore[arg-type]


async def test_mutating_a_session_record_never_changes_the_journal() -> None:
    journal = MemoryJournal()
    put = SessionRecord(session_id="r1", role="agent", architecture="agent", usage={"model_calls": 1})
    await journal.put_session(put)
    put.usage["model_calls"] = 99
    (listed,) = await journal.sessions()
    listed.usage["model_calls"] = 98
    got = await journal.get_session("r1")
    assert got is not None and got.usage == {"model_calls": 1}


async def test_a_run_recorded_in_memory_replays_from_what_it_holds() -> None:
    """A live run's records, mutated by their reader, are still what a replay serves."""
    journal = MemoryJournal()
    recorded = await jeeves.run(
        archs.build_team(), "add and count", models=archs.team_models(), journal=journal, session_id="r1"
    )
    for record in await journal.sessions("r1"):
        for index in await journal.step_indices(record.session_id):
            step = await journal.get_step(record.session_id, index)
            assert step is not None
            step.result = "tampered with by a reader"
    replayed = await jeeves.replay(archs.build_team(), journal, "r1")
    assert replayed.text == recorded.text
