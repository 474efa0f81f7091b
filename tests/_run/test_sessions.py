"""jeeves._run.sessions: `ctx.started` is the event the stream carried (fields, seq, ts, fields
set), with or without a journal or a tracer, in `jeeves.run` as in `jeeves.stream`."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Output, ScriptedModel
from jeeves._run.context import Context
from jeeves.events import SessionStarted
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import SessionRecord
from jeeves.telemetry.tracer import NULL_SCOPE, NullTracer
from tests.memory_journal import cancel_mid_write

pytestmark = pytest.mark.anyio


class Peek:
    """An architecture that keeps what `ctx.started` gives, before and after a model call."""

    name = "peek"

    def __init__(self) -> None:
        self.seen: list[SessionStarted] = []

    async def run(self, ctx: Context, task: str) -> Output:
        self.seen.append(ctx.started)
        await ctx.run(jeeves.Agent("x", role="inner"), task, role="inner")
        self.seen.append(ctx.started)
        return Output.of("done")


def _same(a: SessionStarted, b: SessionStarted) -> None:
    assert a == b
    assert a.model_fields_set == b.model_fields_set
    assert a.model_dump_json() == b.model_dump_json()


class Tracing(NullTracer):
    """A tracer that records the `started` each hook is given (not the default one)."""

    def __init__(self) -> None:
        self.started: list[SessionStarted] = []

    def session(self, started: SessionStarted) -> Any:
        self.started.append(started)
        return NULL_SCOPE


@pytest.mark.parametrize("journal", [False, True])
@pytest.mark.parametrize("tracer", [False, True])
async def test_ctx_started_is_the_streamed_event(journal: bool, tracer: bool) -> None:
    arch = Peek()
    spans = Tracing() if tracer else None
    kwargs: dict[str, Any] = {"journal": MemoryJournal()} if journal else {}
    async with jeeves.stream(arch, "t", model=ScriptedModel(["hi"]), tracer=spans, **kwargs) as events:
        streamed = [e async for e in events if isinstance(e, SessionStarted)]
    root = streamed[0]
    assert root.seq == 1 and root.ts > 0
    _same(arch.seen[0], root)
    assert arch.seen[1] is arch.seen[0]  # built once, then kept
    if spans is not None:  # a tracer gets the event the stream carried, as before
        assert spans.started[0] is arch.seen[0] and spans.started[1] == streamed[1]


async def test_jeeves_run_session_started_carries_the_seq_it_took() -> None:
    """In `jeeves.run` nobody reads events; the root's `session.started` still carries the seq
    it took (the run's first)."""
    arch = Peek()
    result = await jeeves.run(arch, "t", model=ScriptedModel(["hi"]), session_id="r1")
    assert result.output == "done"
    started = arch.seen[0]
    assert started.session_id == "r1" and started.seq == 1 and started.ts > 0
    assert started.architecture == "peek" and started.task == "t" and started.role_path == ["peek"]
    assert started.model_fields_set == {
        "session_id",
        "parent_id",
        "role",
        "role_path",
        "architecture",
        "model",
        "index",
        "task",
    }


async def test_a_strict_replay_marks_the_built_event_replayed() -> None:
    journal = MemoryJournal()
    recorded = Peek()
    await jeeves.run(recorded, "t", model=ScriptedModel(["hi"]), session_id="p1", journal=journal)
    replayed = Peek()
    async with jeeves.stream(replayed, "t", session_id="p1", journal=journal, mode="replay") as events:
        root = [e async for e in events if isinstance(e, SessionStarted)][0]
    assert root.replayed and replayed.seen[0].replayed
    _same(replayed.seen[0], root)


class _TornSessionWrite(MemoryJournal):
    """A store whose first write of a session's end (the root's, or a child's) stores it torn
    (no output), then suspends until released; every later write goes through."""

    def __init__(self, *, child: bool) -> None:
        super().__init__()
        self.child = child
        self.writes = 0
        self.writing = anyio.Event()
        self.release = anyio.Event()

    async def put_session(self, record: SessionRecord) -> None:
        if record.status != "completed" or (record.parent_id is not None) != self.child:
            return await super().put_session(record)
        self.writes += 1
        if self.writes == 1:
            await super().put_session(record.model_copy(update={"output": None}))
            self.writing.set()
        await self.release.wait()
        await super().put_session(record)


@pytest.mark.parametrize("child", [True, False])
async def test_a_session_record_write_cancelled_midway_is_written_whole(child: bool) -> None:
    """A cancellation that lands while a session's end is being written (a store that
    suspends) writes it again, shielded (`steps.put_whole`), then goes on: the record is
    whole, and the run is cancelled."""
    journal = _TornSessionWrite(child=child)
    # the writer is cancelled mid-write, its torn record stored
    scope = await cancel_mid_write(
        journal,
        lambda: jeeves.run(Peek(), "t", model=ScriptedModel(["hi"]), session_id="w1", journal=journal),
    )
    assert scope.cancelled_caught and journal.writes == 2
    written = [s for s in await journal.sessions("w1") if (s.parent_id is not None) == child]
    assert [(s.status, s.output) for s in written] == [("completed", "hi" if child else "done")]
