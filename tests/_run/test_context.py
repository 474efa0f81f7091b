"""The kernel's own contract: what `Context` offers an architecture, and what it promises.

- its public members are the short list an architecture author uses (pinned here);
- session ids come from the role and index a parent runs a child under;
- step indices are allocated in program order within a session;
- a journaled step served on replay re-emits its recorded events, marked `replayed`;
- events reach the reader in the order they were emitted, `seq` strictly increasing.
"""

from __future__ import annotations

from typing import Any

import pytest

import jeeves
from jeeves import Output, ScriptedModel
from jeeves._run.context import Context
from jeeves.events import ModelDelta, RoundStarted
from jeeves.journal import MemoryJournal
from jeeves.messages import Message, ModelRequest

pytestmark = pytest.mark.anyio

PUBLIC = [
    "call_model",
    "emit",
    "parent_id",
    "replaying",
    "role",
    "role_path",
    "run",
    "session_id",
    "started",
    "step",
    "usage",
]


def test_the_public_members_are_what_an_architecture_author_uses() -> None:
    public = sorted(name for name in dir(Context) if not name.startswith("_"))
    assert public == PUBLIC
    assert len(public) <= 12


class Leaf:
    """Emits two rounds, runs two function steps and one model call, in that order."""

    name = "leaf"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, tuple[str, ...]]] = []

    async def run(self, ctx: Context, task: str) -> Output:
        self.seen.append((ctx.session_id, ctx.parent_id, ctx.role_path))
        await ctx.emit(RoundStarted(session_id=ctx.session_id, round=0))

        async def first() -> str:
            return "one"

        async def second() -> str:
            return "two"

        a = (await ctx.step("function", "first", {"n": 1}, first, str)).value
        b = (await ctx.step("function", "second", {"n": 2}, second, str)).value
        await ctx.emit(RoundStarted(session_id=ctx.session_id, round=1))
        reply = await ctx.call_model(ModelRequest(messages=[Message(role="user", content=task)]))
        return Output.of(f"{a} {b} {reply.text}")


class Parent:
    name = "parent"

    def __init__(self) -> None:
        self.leaf = Leaf()

    async def run(self, ctx: Context, task: str) -> Output:
        await ctx.run(self.leaf, task, role="worker", index=0)
        return await ctx.run(self.leaf, task, role="worker", index=2)


async def test_session_ids_come_from_the_role_and_index() -> None:
    parent = Parent()
    result = await jeeves.run(parent, "t", model=ScriptedModel(["a", "b"]), session_id="r1")
    assert parent.leaf.seen == [
        ("r1__worker_0", "r1", ("parent", "worker")),
        ("r1__worker_2", "r1", ("parent", "worker")),
    ]
    assert result.text == "one two b"


async def test_step_indices_follow_program_order() -> None:
    journal = MemoryJournal()
    await jeeves.run(Leaf(), "t", model=ScriptedModel(["hi"]), session_id="s1", journal=journal)
    steps = [await journal.get_step("s1", index) for index in range(3)]
    assert [(s.kind, s.name) for s in steps if s is not None] == [
        ("function", "first"),
        ("function", "second"),
        ("model", ""),
    ]
    assert await journal.get_step("s1", 3) is None


async def test_a_replayed_step_re_emits_its_events_marked_replayed() -> None:
    journal = MemoryJournal()
    async with jeeves.stream(
        Leaf(), "t", model=ScriptedModel(["hi"]), session_id="p1", journal=journal
    ) as events:
        live = [e async for e in events]
    async with jeeves.stream(Leaf(), "t", session_id="p1", journal=journal, mode="replay") as events:
        replayed = [e async for e in events]
    live_deltas = [e for e in live if isinstance(e, ModelDelta)]
    replayed_deltas = [e for e in replayed if isinstance(e, ModelDelta)]
    assert live_deltas and not any(e.replayed for e in live_deltas)
    assert [e.text for e in replayed_deltas] == [e.text for e in live_deltas]
    assert all(e.replayed for e in replayed)
    assert [e.type for e in replayed] == [e.type for e in live]


async def test_events_arrive_in_emit_order_with_seq_increasing() -> None:
    async with jeeves.stream(Leaf(), "t", model=ScriptedModel(["hi"]), session_id="o1") as events:
        seen: list[Any] = [e async for e in events]
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    kinds = [e.type for e in seen]
    assert kinds[0] == "session.started" and kinds[-1] == "session.completed"
    rounds = [e.round for e in seen if isinstance(e, RoundStarted)]
    assert rounds == [0, 1]
    assert kinds.index("model.completed") > max(i for i, k in enumerate(kinds) if k == "round.started")


async def test_jeeves_run_gives_the_result_a_read_stream_gives() -> None:
    """Whoever reads the events, the run is the same: `jeeves.run`'s result, usage books
    included, is the stream's, and the stream's seq numbers run without a gap."""
    run = await jeeves.run(Parent(), "t", model=ScriptedModel(["a", "b"]), session_id="e1")
    async with jeeves.stream(Parent(), "t", model=ScriptedModel(["a", "b"]), session_id="e1") as events:
        seen = [e async for e in events]
        streamed = await events.result()
    assert run.model_dump() == streamed.model_dump()
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
