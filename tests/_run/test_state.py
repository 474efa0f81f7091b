"""jeeves._run.state.emit, the one place a run acts on whether its events are read.

An event given as its builder and fields (`ctx.emit(RoundStarted, session_id=..., round=0)`)
is built only when the run's events are read. The equivalence this buys its speed with:
whoever reads, a run is the same run. A `jeeves.run` (nothing built), a `jeeves.stream`
and a `jeeves.run` that builds every event (as the kernel did before) give the same
RunResult, usage books, journal records and `seq` numbering; the stream carries exactly
the events the building run built; and an event emitted built or as its builder is the
same event (fields, fields set, JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import jeeves
from jeeves import ActorCritic, Agent, LLMCritic, Output, ScriptedModel, SelfRefine, Supervisor
from jeeves._run.channel import EventChannel
from jeeves._run.context import Context
from jeeves.events import Critique, Event, RoundStarted
from jeeves.journal import MemoryJournal
from jeeves.testing import Reply, call

pytestmark = pytest.mark.anyio


def verdict(score: float, *issues: str) -> str:
    return json.dumps({"score": score, "issues": list(issues), "summary": "reviewed"})


def actor_critic() -> tuple[Any, Callable[[], ScriptedModel]]:
    """Three rounds: revised twice, then approved."""
    arch = ActorCritic(Agent("You write code.", role="actor"), LLMCritic(), max_rounds=3)
    script = {"actor": ["d0", "d1", "d2"], "critic": [verdict(0.2, "x"), verdict(0.5, "y"), verdict(0.9)]}
    return arch, lambda: ScriptedModel(script)


def self_refine() -> tuple[Any, Callable[[], ScriptedModel]]:
    arch = SelfRefine(Agent("You write haiku.", role="writer"), max_rounds=1, no_improvement=None)
    return arch, lambda: ScriptedModel(["h0", verdict(0.3, "flat"), "h1", verdict(0.4)])


def supervised() -> tuple[Any, Callable[[], ScriptedModel]]:
    """A supervisor delegating to an ActorCritic worker (sessions two levels down)."""
    worker = ActorCritic(Agent("You write code."), LLMCritic(), max_rounds=1)
    arch = Supervisor({"coder": worker}, instructions="You coordinate.")
    delegate = call("delegate", {"worker": "coder", "instructions": "add"})
    script = {
        "supervisor": [Reply(tool_calls=[delegate]), "done"],
        "actor": ["c0", "c1"],
        "critic": [verdict(0.1, "bug"), verdict(0.95)],
    }
    return arch, lambda: ScriptedModel(script)


TREES = {"actor_critic": actor_critic, "self_refine": self_refine, "supervisor": supervised}


@contextmanager
def building_every_event() -> Iterator[list[Event]]:
    """Runs in this block build every event, read or not, as the kernel did before `emit`
    took builders; yields the events the channel dropped (a `jeeves.run`'s)."""
    dropped: list[Event] = []
    skip, offer = EventChannel.skip, EventChannel.offer

    def never_skip(self: EventChannel) -> None:
        return None

    def offer_and_keep(self: EventChannel, event: Event) -> bool:
        if not self.consume:
            dropped.append(event)
        return offer(self, event)

    EventChannel.skip, EventChannel.offer = never_skip, offer_and_keep  # type: ignore[method-assign,assignment]
    try:
        yield dropped
    finally:
        EventChannel.skip, EventChannel.offer = skip, offer  # type: ignore[method-assign]


def sent(events: list[Event]) -> list[dict[str, Any]]:
    """Events as a reader compares them: everything but the wall clock."""
    return [e.model_dump(mode="json", exclude={"ts"}) for e in events]


async def records(journal: MemoryJournal, root: str) -> dict[str, Any]:
    """Every session and step record of run `root`, but for the wall clock."""
    clock = {"created_at", "lease_renewed_at"}
    sessions = {r.session_id: r.model_dump(exclude=clock) for r in await journal.sessions(root)}
    steps = {
        sid: [(await journal.get_step(sid, i)) for i in await journal.step_indices(sid)] for sid in sessions
    }
    return {"sessions": sessions, "steps": steps}


@pytest.mark.parametrize("tree", list(TREES))
async def test_whoever_reads_the_events_the_run_is_the_same(tree: str) -> None:
    arch, script = TREES[tree]()
    journals = [MemoryJournal() for _ in range(3)]
    ran = await jeeves.run(arch, "task", model=script(), session_id="q", journal=journals[0])
    async with jeeves.stream(arch, "task", model=script(), session_id="q", journal=journals[1]) as events:
        streamed = [e async for e in events]
        read = await events.result()
    with building_every_event() as built:
        eager = await jeeves.run(arch, "task", model=script(), session_id="q", journal=journals[2])

    assert ran.model_dump() == read.model_dump() == eager.model_dump()
    assert ran.usage.model_calls > 0 and ran.usage_by_session == read.usage_by_session
    recorded = [await records(j, "q") for j in journals]
    assert recorded[0] == recorded[1] == recorded[2]
    assert sent(streamed) == sent(built)  # the stream carries what a building run built
    assert [e.seq for e in streamed] == list(range(1, len(streamed) + 1))
    kinds = {e.type for e in streamed}
    assert {"session.started", "session.completed", "model.completed", "critique"} <= kinds


@pytest.mark.parametrize("tree", list(TREES))
async def test_a_run_without_a_journal_gives_the_streams_result(tree: str) -> None:
    arch, script = TREES[tree]()
    ran = await jeeves.run(arch, "task", model=script(), session_id="q")
    async with jeeves.stream(arch, "task", model=script(), session_id="q") as events:
        async for _ in events:
            pass
        read = await events.result()
    assert ran.model_dump() == read.model_dump()


class BothWays:
    """Emits the same events built and as their builders (a class, a function)."""

    name = "both_ways"

    async def run(self, ctx: Context, task: str) -> Output:
        sid = ctx.session_id
        await ctx.emit(RoundStarted(session_id=sid, round=2))
        await ctx.emit(RoundStarted, session_id=sid, round=2)
        await ctx.emit(Critique(session_id=sid, round=0, score=0.5, passed=False, issues=["a"]))
        await ctx.emit(Critique, session_id=sid, round=0, score=0.5, passed=False, issues=["a"])
        await ctx.emit(_critique, sid)
        return Output.of("ok")


def _critique(session_id: str) -> Critique:
    return Critique(session_id=session_id, round=0, score=0.5, passed=False, issues=["a"])


@pytest.mark.parametrize("mode", ["record", "replay"])
async def test_an_event_built_or_given_as_its_builder_is_the_same_event(mode: str) -> None:
    journal = MemoryJournal()
    await jeeves.run(BothWays(), "t", session_id="b", journal=journal)
    async with jeeves.stream(BothWays(), "t", session_id="b", journal=journal, mode=mode) as events:  # type: ignore[arg-type]
        own = [e for e in events_of(await _all(events)) if e.type in ("round.started", "critique")]
    rounds, critiques = own[:2], own[2:]
    for group in (rounds, critiques):
        first = group[0]
        for other in group[1:]:
            assert other.model_dump(exclude={"seq", "ts"}) == first.model_dump(exclude={"seq", "ts"})
            assert other.model_fields_set == first.model_fields_set
            assert other.replayed == (mode == "replay")


async def _all(events: Any) -> list[Event]:
    return [e async for e in events]


def events_of(events: list[Event]) -> list[Event]:
    return [e for e in events if e.session_id == "b"]


@pytest.mark.parametrize("mode", ["resume", "replay"])
def test_the_live_books_part_from_the_others_at_the_first_call_served(mode: str) -> None:
    """Until a call is served every call is live and the books are kept once; from the first
    call served, the live books (what this process spent) leave it out and what follows."""
    from jeeves._run.state import RunState
    from jeeves.journal.memory import MemoryJournal
    from jeeves.messages import Usage
    from jeeves.models.router import Router

    state = RunState(router=Router(), journal=MemoryJournal(), mode=mode)  # type: ignore[arg-type]
    one = Usage(input_tokens=1, output_tokens=0, model_calls=1)
    state.add_usage("r", one, live=True)
    state.add_usage("r__a_0", one, live=True)
    assert state.usage_by_session() == {"r": one, "r__a_0": one}
    state.add_usage("r__a_0", Usage(input_tokens=10, model_calls=1), live=False)  # served
    state.add_usage("r__a_0", Usage(input_tokens=100, model_calls=1), live=True)
    assert state.usage_by_session()["r__a_0"].input_tokens == 101
    assert state.tree_usage("r", live=True).input_tokens == 102
    assert state.tree_usage("r").input_tokens == 112
    assert state.tree_usage("r__a_0").input_tokens == 111
