"""What a strict replay does not build: only what its checks read (and a resume still writes
everything). Each test fails if the replay goes back to building the unused work."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

import jeeves
from jeeves._run import state as _runstate
from jeeves._run.replay import _Served
from jeeves.errors import JournalError
from jeeves.events import EVENT_ADAPTER, Event
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import SCHEMA_VERSION, TERMINAL, SessionRecord, StepRecord, served_events
from jeeves.journal.sqlite import SQLiteJournal
from jeeves.journal.store import decode_record, decode_text
from tests.journal import archs

pytestmark = pytest.mark.anyio

TASK = "add and count"


class Spy(MemoryJournal):
    """A memory journal that keeps every session record written, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[SessionRecord] = []

    async def put_session(self, record: SessionRecord) -> None:
        self.written.append(record)
        await super().put_session(record)


def _stable(record: SessionRecord) -> dict[str, Any]:
    """A record without what changes from one attempt to the next (its clock and lease)."""
    return record.model_dump(exclude={"created_at", "lease_owner", "lease_renewed_at", "progress"})


def _by_session(records: list[SessionRecord]) -> dict[str, list[dict[str, Any]]]:
    """Each session's records in the order written (parallel workers interleave theirs)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        out.setdefault(record.session_id, []).append(_stable(record))
    return out


async def test_a_strict_replay_reports_only_ends_and_a_resume_still_writes_every_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal = Spy()
    await jeeves.run(archs.build_team(), TASK, models=archs.team_models(), journal=journal, session_id="r1")
    recorded = list(journal.written)
    sessions = {r.session_id for r in recorded}
    assert len(sessions) == 7
    assert [r.status for r in recorded].count("in_progress") == 7  # each session, as it starts

    reported: list[SessionRecord] = []
    check = _Served.put_session

    async def spy(self: _Served, record: SessionRecord) -> None:
        reported.append(record)
        await check(self, record)

    monkeypatch.setattr(_Served, "put_session", spy)
    journal.written.clear()
    replayed = await jeeves.replay(archs.build_team(), journal, "r1")
    assert journal.written == []  # a strict replay writes nothing
    # one report per session, its end, with only the compared fields: no usage, no root fields
    assert sorted(r.session_id for r in reported) == sorted(sessions)
    assert all(r.status in TERMINAL and r.usage == {} and r.source is None for r in reported)
    ends = {r.session_id: r for r in recorded if r.status in TERMINAL}
    for report in reported:
        end = ends[report.session_id]
        assert (report.status, report.stop_reason, report.output, report.rounds) == (
            end.status,
            end.stop_reason,
            end.output,
            end.rounds,
        )
    assert replayed.text == ends["r1"].output

    # a resume (record mode on a run the journal holds) serves every step and still writes
    # each session's record as it starts and as it ends, usage and root fields included
    await jeeves.run(archs.build_team(), TASK, models=archs.team_models(), journal=journal, session_id="r1")
    assert _by_session(journal.written) == _by_session(recorded)
    assert journal.written[0].lease_owner is not None and journal.written[-1].usage == recorded[-1].usage


def _record(events: list[Any]) -> StepRecord:
    # built unchecked: damage a store's own checks would stop must still fail here
    return StepRecord.model_construct(session_id="r1", index=0, kind="model", fingerprint="f", events=events)


def _one_by_one(record: StepRecord, replayed: bool) -> list[Event]:
    """How a served step's events were read before: each validated, then marked."""
    served = [EVENT_ADAPTER.validate_python(data) for data in record.events]
    for event in served:
        event.replayed = replayed
    return served


async def test_a_steps_events_are_served_in_one_validation_as_they_were_one_by_one() -> None:
    journal = MemoryJournal()
    await jeeves.run(archs.build_team(), TASK, models=archs.team_models(), journal=journal, session_id="r1")
    records = [
        step
        for session in await journal.sessions()
        for i in await journal.step_indices(session.session_id)
        if (step := await journal.get_step(session.session_id, i)) is not None and step.events
    ]
    assert records
    for record in records:
        for replayed in (True, False):  # a strict replay's, an adopted session's
            served = served_events(record, "here", replayed=replayed)
            expected = _one_by_one(record, replayed)
            assert served == expected
            assert [e.model_fields_set for e in served] == [e.model_fields_set for e in expected]
            assert all(e.replayed is replayed for e in served)


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "model.delta", "session_id": "r1"},  # a field missing
        {"type": "no.such.event", "session_id": "r1"},
        {"type": "model.delta", "session_id": "r1", "text": "x", "replayed": "maybe"},  # never recorded
        "not an event",
    ],
)
async def test_a_damaged_steps_events_fail_as_they_did_one_by_one(bad: Any) -> None:
    good = {"type": "model.delta", "session_id": "r1", "text": "hi"}
    record = _record([good, bad, good])
    with pytest.raises(JournalError) as expected:
        served_events(record, "journal.db (session 'r1' step 0)")
    with pytest.raises(JournalError) as served:
        served_events(record, "journal.db (session 'r1' step 0)", replayed=True)
    assert str(served.value) == str(expected.value)
    assert "a recorded event does not validate" in str(served.value)


async def test_result_adapters_are_built_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []

    def counting(tp: Any) -> TypeAdapter[Any]:
        built.append(tp)
        return TypeAdapter(tp)

    journal = MemoryJournal()
    await jeeves.run(archs.build_team(), TASK, models=archs.team_models(), journal=journal, session_id="r1")
    monkeypatch.setattr(_runstate, "TypeAdapter", counting)
    monkeypatch.setattr(_runstate, "_ADAPTERS", {})
    await jeeves.replay(archs.build_team(), journal, "r1")
    assert built  # the first replay in this (fresh) cache builds each result type's adapter once
    assert len(built) == len({repr(tp) for tp in built})
    built.clear()
    await jeeves.replay(archs.build_team(), journal, "r1")
    assert built == []  # and no later run builds one again


def test_the_adapter_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_runstate, "_ADAPTERS", {})
    monkeypatch.setattr(_runstate, "MAX_ADAPTERS", 2)
    first = _runstate.type_adapter(list[int])
    assert _runstate.type_adapter(list[int]) is first
    _runstate.type_adapter(list[str])
    _runstate.type_adapter(list[float])  # a third type drops the oldest
    assert list(_runstate._ADAPTERS) == [list[str], list[float]]
    assert _runstate.type_adapter(list[int]) is not first
    assert first.validate_python(["1"]) == [1]


async def test_a_served_tool_step_computes_no_fingerprint_for_its_tool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    journal = MemoryJournal()
    await jeeves.run(archs.build_team(), TASK, models=archs.team_models(), journal=journal, session_id="r1")
    from jeeves.agent import tools

    asked: list[Any] = []

    def spy(payload: Any) -> str:
        asked.append(payload)
        raise AssertionError("a served tool step built its ToolContext")

    monkeypatch.setattr(tools, "fingerprint", spy)
    result = await jeeves.replay(archs.build_team(), journal, "r1")
    assert asked == [] and result.text


async def test_a_stored_row_is_read_in_one_parse_as_the_checked_read_reads_it(tmp_path: Path) -> None:
    async with SQLiteJournal(tmp_path / "runs.db") as journal:
        await jeeves.run(
            archs.build_team(), TASK, models=archs.team_models(), journal=journal, session_id="r1"
        )
        sessions, steps = await journal._call(journal._read_run, "r1")
    rows = [(str(t), SessionRecord) for _, t in sessions] + [(str(t), StepRecord) for _, _, t in steps]
    assert len(rows) == 21
    for text, cls in rows:
        record = decode_text(text, "here", cls)
        checked = decode_record(json.loads(text), "here")  # the read every damaged row takes
        assert type(record) is cls and record == checked
        assert record.model_fields_set == checked.model_fields_set
        assert list(record.__dict__) == list(cls.model_fields)
    text, cls = rows[-1]
    head = f'{{"type":"step","v":{SCHEMA_VERSION},'
    assert text.startswith(head)
    body = text[len(head) :]
    damaged = {  # each read plainly would pass the one-parse read's fields; the checks refuse it
        '{"type":"step","v":3.0,' + body: "has no schema version",
        '{"type":"step","v":"2",' + body: "has no schema version",
        '{"type":"step","v":true,' + body: "has no schema version",
        '{"type":"step",' + body: "has no schema version",
        f'{{"type":"step","v":{SCHEMA_VERSION + 1},' + body: "newer jeeves",
        text[:-1]
        + f', "v": {SCHEMA_VERSION + 1}}}': "newer jeeves",  # the last key wins, as json.loads reads it
        text[:-1] + ', "type": "session"}': "malformed session record",
    }
    for bad, problem in damaged.items():
        with pytest.raises(JournalError, match=problem):
            decode_text(bad, "here", cls)
