"""EventRecorder: a run's events land in the log with the run's own seqs, in fewer batches
than events, and a second attempt (a takeover, a resume past a gate) keeps one gap-free
sequence: what is already persisted is skipped, what is new goes on after it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

import jeeves
from jeeves import ActorCritic, Agent, ScriptedModel
from jeeves.events import Event, ModelDelta
from jeeves.journal.eventlog import EventLog, open_event_log, same_event
from jeeves.journal.recorder import EventRecorder
from tests.waiting import eventually

pytestmark = pytest.mark.anyio


def arch() -> ActorCritic:
    review = {"issues": ["more"], "score": 0.4, "summary": "no"}
    approve = {"issues": [], "score": 0.95, "summary": "ok"}
    return ActorCritic(
        actor=Agent("Write.", model=ScriptedModel(["draft one", "draft two"])),
        critic=Agent("Judge.", model=ScriptedModel([json.dumps(review), json.dumps(approve)])),
        max_rounds=2,
    )


async def run_events() -> list[Event]:
    async with jeeves.stream(arch(), "Write add", session_id="job") as events:
        return [event async for event in events]


async def record(path: Path, *attempts: Sequence[Event], status: str | None = "completed") -> EventRecorder:
    """Record each attempt in turn, as one worker execution does (the flusher running; it
    registers the run, and reads where its log ends, before it writes anything)."""
    log = open_event_log(path)
    recorder = EventRecorder(log, "job", architecture="ac", task="Write add", flush_s=0.01)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(recorder.run)
            for attempt in attempts:
                recorder.new_attempt()
                for event in attempt:
                    recorder.add(event)
                    await anyio.lowlevel.checkpoint()
            await recorder.close(status)
    finally:
        await log.aclose()
    return recorder


async def logged(path: Path) -> list[Event]:
    log = open_event_log(path)
    try:
        return await log.after("job", 0, limit=10_000)
    finally:
        await log.aclose()


def as_replayed(events: Sequence[Event]) -> list[Event]:
    return [e.model_copy(update={"replayed": True, "ts": e.ts + 100}) for e in events]


async def test_an_uninterrupted_run_is_logged_with_its_own_seqs_in_fewer_batches(tmp_path: Path) -> None:
    events = await run_events()
    recorder = await record(tmp_path / "runs.db", events)
    got = await logged(tmp_path / "runs.db")
    assert [e.model_dump() for e in got] == [e.model_dump() for e in events]
    assert 0 < recorder.flushes < len(events)  # deltas wait for the timer or the step's end
    log = open_event_log(tmp_path / "runs.db")
    run = await log.run("job")
    await log.aclose()
    assert run is not None and (run.status, run.last_seq) == ("completed", len(events))


async def test_a_takeover_that_replays_the_persisted_events_adds_only_what_is_new(tmp_path: Path) -> None:
    events = await run_events()
    cut = next(i for i, e in enumerate(events) if e.type == "critique") + 1  # the worker died here
    await record(tmp_path / "runs.db", events[:cut], status=None)
    resumed = [*as_replayed(events[:cut]), *events[cut:]]  # served from the journal, then live
    await record(tmp_path / "runs.db", resumed)
    got = await logged(tmp_path / "runs.db")
    assert [e.seq for e in got] == list(range(1, len(events) + 1))
    assert all(same_event(a, b) for a, b in zip(got, events, strict=True))
    assert not any(e.replayed for e in got)  # the persisted originals stayed


async def test_a_resume_past_a_gate_in_one_execution_is_aligned_too(tmp_path: Path) -> None:
    events = await run_events()
    cut = len(events) // 2
    await record(tmp_path / "runs.db", events[:cut], [*as_replayed(events[:cut]), *events[cut:]])
    assert [e.seq for e in await logged(tmp_path / "runs.db")] == list(range(1, len(events) + 1))


async def test_an_attempt_that_goes_another_way_goes_on_after_the_log_without_a_gap(tmp_path: Path) -> None:
    events = await run_events()
    await record(tmp_path / "runs.db", events[:10], status=None)
    # The step in flight streamed other text the second time: from there it is new.
    other = [ModelDelta(session_id="job__actor_0", text="redone", seq=i) for i in (6, 7)]
    await record(tmp_path / "runs.db", [*as_replayed(events[:5]), *other])
    got = await logged(tmp_path / "runs.db")
    assert [e.seq for e in got] == list(range(1, 13))
    assert [e.text for e in got[10:]] == ["redone", "redone"]  # type: ignore[attr-defined]
    assert all(same_event(a, b) for a, b in zip(got[:10], events[:10], strict=True))


async def test_a_delta_queued_while_the_flusher_idles_is_written_within_flush_s(tmp_path: Path) -> None:
    """Nothing ends a step after it, so only the flusher's timer writes it; an idle flusher
    (nothing queued) runs no timer, and the first deferred event starts one."""
    log = open_event_log(tmp_path / "runs.db")
    recorder = EventRecorder(log, "job", architecture="ac", task="Write add", flush_s=0.01)
    await recorder.open()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(recorder.run)
            await anyio.lowlevel.checkpoint()  # the flusher waits, nothing queued
            recorder.add(ModelDelta(session_id="job__actor_0", text="par", seq=1))
            recorder.add(ModelDelta(session_id="job__actor_0", text="tial", seq=2))
            got = await eventually(lambda: log.after("job", 0), "the deltas in the log", within_s=10)
            assert [e.text for e in got] == ["par", "tial"]  # type: ignore[attr-defined]
            assert recorder.flushes == 1
            await recorder.close("completed")
    finally:
        await log.aclose()


class _Writes:
    """An event log that counts the writes it is asked for (what reaches the database)."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.writes: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.log, name)

    async def append(self, root: str, events: Sequence[Event], *, status: str | None = None) -> None:
        self.writes.append(f"append {len(events)} {status}")
        await self.log.append(root, events, status=status)

    async def set_status(self, root: str, status: str) -> None:
        self.writes.append(f"status {status}")
        await self.log.set_status(root, status)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_a_run_s_last_events_and_its_status_are_one_write(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Closing (and a gate's status) writes what is queued with the status, in one write:
    a follower sees how the run ended with its last events, and the run waits for one
    transaction, not two; with nothing queued, the status alone."""
    target = str(request.getfixturevalue("postgres_url")) if kind == "postgres" else str(tmp_path / "runs.db")
    log = _Writes(open_event_log(target))
    recorder = EventRecorder(log, "job", architecture="ac", task="t")  # type: ignore[arg-type]
    await recorder.open()
    try:
        recorder.add(ModelDelta(session_id="job__actor_0", text="par", seq=1))
        await recorder.set_status("awaiting_approval")
        run = await log.log.run("job")
        assert run is not None and (run.status, run.last_seq) == ("awaiting_approval", 1)
        await recorder.set_status("running")
        recorder.add(ModelDelta(session_id="job__actor_0", text="tial", seq=2))
        await recorder.close("completed")
        assert log.writes == ["append 1 awaiting_approval", "append 0 running", "append 1 completed"]
        run = await log.log.run("job")
        assert run is not None and (run.status, run.last_seq) == ("completed", 2)
        assert [e.text for e in await log.log.after("job", 0)] == ["par", "tial"]  # type: ignore[attr-defined]
    finally:
        await log.log.aclose()
