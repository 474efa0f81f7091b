"""`jeeves._run.lifecycle.supervise`: the helper tasks a run gets only when it needs them."""

from __future__ import annotations

import gc
import types
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

import jeeves
from jeeves import Agent, FunctionModel
from jeeves._run.context import Context, Output
from jeeves._run.gates import gate
from jeeves._run.state import RunState, Suspension
from jeeves._run.steps import next_index
from jeeves.approvals.decide import Approvals
from jeeves.errors import UserError
from jeeves.journal.memory import MemoryJournal
from jeeves.messages import ModelRequest

pytestmark = pytest.mark.anyio


def _counting_model(seen: list[int]) -> FunctionModel:
    def reply(request: ModelRequest) -> str:
        seen.append(len(anyio.get_running_tasks()))
        return "done"

    return FunctionModel(reply)


async def test_a_run_with_nothing_to_supervise_runs_its_root_alone() -> None:
    """No journal, no approval policy, no TTL: no lease to renew and no gate to park at, so
    no heartbeat or suspension watcher task (two tasks and a task group less per run)."""
    seen: list[int] = []
    before = len(anyio.get_running_tasks())
    result = await jeeves.run(Agent("x"), "go", model=_counting_model(seen))
    assert result.output == "done"
    assert seen == [before]


@pytest.mark.parametrize(
    "options",
    [
        {"approvals": Approvals()},
        {"journal": "memory"},
        {"session_ttl_s": 60.0},
    ],
    ids=["approvals", "journal", "ttl"],
)
async def test_a_run_that_needs_its_helpers_gets_them(options: dict[str, object]) -> None:
    seen: list[int] = []
    before = len(anyio.get_running_tasks())
    kwargs = dict(options)
    if kwargs.get("journal") == "memory":
        kwargs["journal"] = MemoryJournal()
    result = await jeeves.run(Agent("x"), "go", model=_counting_model(seen), **kwargs)  # type: ignore[arg-type]
    assert result.output == "done"
    assert seen[0] > before


class _GatesWithoutPolicy:
    name = "gated"

    async def run(self, ctx: Context, task: str) -> Output:
        await gate(ctx, "pay", "call-1", {"amount": 5}, "destructive", index=next_index(ctx))
        return Output.of("paid")


async def test_a_gate_reached_without_a_policy_is_a_user_error_not_a_hang() -> None:
    with pytest.raises(UserError, match=r"no approval policy.*approvals=Approvals") as caught:
        await jeeves.run(_GatesWithoutPolicy(), "go", model=FunctionModel(lambda r: "x"))
    assert "'pay'" in str(caught.value)


async def test_the_same_gate_with_a_policy_suspends() -> None:
    result = await jeeves.run(
        _GatesWithoutPolicy(), "go", model=FunctionModel(lambda r: "x"), approvals=Approvals()
    )
    assert result.status == "awaiting_approval"
    assert [g.tool for g in result.pending] == ["pay"]


@contextmanager
def _garbage() -> Iterator[list[object]]:
    """What only reference cycles hold, among the objects made inside the block: the
    cyclic collector stays off, then one collection saves what it would have freed."""
    enabled, debug = gc.isenabled(), gc.get_debug()
    gc.collect()
    gc.disable()
    # kept alive through the block: an earlier test's leftovers (a store's thread, a task
    # finishing late) cannot turn into garbage here, nor lend their ids to the run's objects
    existing = gc.get_objects()
    found: list[object] = []
    try:
        yield found
        gc.set_debug(debug | gc.DEBUG_SAVEALL)
        gc.collect()
        old = {id(o) for o in existing}
        found.extend(o for o in gc.garbage if id(o) not in old)
    finally:
        del existing
        gc.garbage.clear()
        gc.set_debug(debug)
        if enabled:
            gc.enable()


def _kernel_objects(garbage: list[object]) -> dict[str, int]:
    """The run's objects (and the tasks and frames running it) among `garbage`, by type."""
    kinds = (Context, RunState, Suspension, MemoryJournal, types.FrameType, types.TracebackType)
    return dict(
        Counter(
            type(o).__qualname__
            for o in garbage
            if isinstance(o, kinds) or type(o).__module__.startswith("jeeves.") or "Task" in type(o).__name__
        )
    )


def _critic_loop() -> jeeves.ActorCritic:
    return jeeves.ActorCritic(
        Agent("write", role="actor"),
        Agent("review", role="critic", output_type=jeeves.Verdict),
        max_rounds=2,
        threshold=0.9,
    )


def _critic_model(request: ModelRequest) -> str:
    role = request.role_path[-1]
    return '{"score": 0.5, "passed": false, "feedback": "more"}' if role == "critic" else "draft"


@pytest.mark.parametrize("journaled", [False, True], ids=["bare", "journaled"])
async def test_a_finished_run_leaves_nothing_only_cycles_hold(journaled: bool) -> None:
    """A run's state (its contexts, RunState, journal, helper tasks) is freed by reference
    counting when the run returns: nothing of it waits for the cyclic collector. The
    heartbeat and the suspension watcher end when the run does, not by a cancellation whose
    traceback would hold their frames (and through them the run) in a cycle."""
    arch, model = _critic_loop(), FunctionModel(_critic_model)
    await jeeves.run(arch, "go", model=model, journal=MemoryJournal())  # warm: first-use caches
    with _garbage() as garbage:
        for _ in range(3):
            journal = MemoryJournal() if journaled else None
            result = await jeeves.run(arch, "go", model=model, journal=journal)
            assert result.status == "completed"
            del result, journal
    assert _kernel_objects(garbage) == {}


async def test_a_suspended_run_leaves_nothing_only_cycles_hold() -> None:
    """At a gate the watcher cancels the root's tree only; the heartbeat still ends by itself."""
    model = FunctionModel(lambda r: "x")
    with _garbage() as garbage:
        for _ in range(3):
            result = await jeeves.run(
                _GatesWithoutPolicy(), "go", model=model, approvals=Approvals(), journal=MemoryJournal()
            )
            assert result.status == "awaiting_approval"
            del result
    assert _kernel_objects(garbage) == {}


async def test_an_architecture_built_per_run_leaves_no_garbage() -> None:
    """An output type's JSON schema is generated once per type, not per `Agent`: pydantic's
    schema generator (bound methods in a dict on itself) is a cycle per generation."""
    model = FunctionModel(_critic_model)
    await jeeves.run(_critic_loop(), "go", model=model, journal=MemoryJournal())  # warm: first-use caches
    with _garbage() as garbage:
        for _ in range(3):
            result = await jeeves.run(_critic_loop(), "go", model=model, journal=MemoryJournal())
            assert result.status == "completed"
            del result
    assert dict(Counter(type(o).__qualname__ for o in garbage)) == {}


async def test_a_run_failed_at_a_step_leaves_nothing_only_cycles_hold() -> None:
    """A step's error is raised from the step path without a local holding it: its traceback
    (which holds that frame) would otherwise keep the run alive in a cycle."""

    def broken(request: ModelRequest) -> str:
        raise ValueError("the provider broke")

    arch, model = _critic_loop(), FunctionModel(broken)
    with pytest.raises(ValueError):
        await jeeves.run(arch, "go", model=model, journal=MemoryJournal())  # warm: first-use caches
    with _garbage() as garbage:
        for _ in range(3):
            with pytest.raises(ValueError):
                await jeeves.run(arch, "go", model=model, journal=MemoryJournal())
    assert _kernel_objects(garbage) == {}
