"""`jeeves._run.lifecycle.supervise`: the helper tasks a run gets only when it needs them."""

from __future__ import annotations

import anyio
import pytest

import jeeves
from jeeves import Agent, FunctionModel
from jeeves._run.context import Context, Output
from jeeves._run.gates import gate
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
