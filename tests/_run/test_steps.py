"""The step path: the progress envelope (its values kept at every journaled step, the JSON
built when read, the event only when emitted) and the step's write (a step cancelled
mid-write is still recorded whole)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, Budget, ScriptedModel
from jeeves.events import Progress
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import StepRecord
from jeeves.messages import Usage
from jeeves.testing import Reply, call
from tests.memory_journal import cancel_mid_write

pytestmark = pytest.mark.anyio

DROPPED = {"seq", "ts", "replayed", "type"}


async def _envelopes(arch: Any, model: ScriptedModel, budget: Budget | None) -> tuple[list[Progress], Any]:
    """The run's progress events (one per step: `progress_s=0`) and its root record's envelope."""
    journal = MemoryJournal()
    async with jeeves.stream(
        arch, "t", model=model, budget=budget, journal=journal, session_id="p", progress_s=0
    ) as events:
        seen = [e async for e in events if isinstance(e, Progress)]
    root = await journal.get_session("p")
    assert root is not None
    return seen, root.progress


def _dumped(event: Progress) -> str:
    return json.dumps(event.model_dump(mode="json", exclude=DROPPED))


@pytest.mark.parametrize(
    "budget",
    [None, Budget(max_tokens=1000, max_usd=5, max_model_calls=5, deadline_s=600)],
    ids=["unlimited", "every-axis"],
)
async def test_the_recorded_envelope_is_the_last_event_as_it_dumps(budget: Budget | None) -> None:
    @jeeves.tool(approval="read_only")
    def lookup(q: str) -> str:
        """Look it up."""
        return "found"

    priced = Usage(input_tokens=90, output_tokens=10, model_calls=1, cost_usd=0.25)
    model = ScriptedModel(
        [Reply(tool_calls=[call("lookup", {"q": "a"})], usage=priced), Reply(text="done", usage=priced)]
    )
    seen, recorded = await _envelopes(Agent("x", tools=[lookup]), model, budget)
    assert [e.step for e in seen] == [0, 1, 2]
    # the same keys in the same order, each value of the event's type (5.0, not 5)
    assert json.dumps(recorded) == _dumped(seen[-1])
    if budget is not None:
        assert (seen[-1].tokens_left, seen[-1].model_calls_left, seen[-1].usd_left) == (800, 3, 4.5)
        assert isinstance(recorded["usd_left"], float) and 0 < recorded["seconds_left"] <= 600


async def test_a_plans_envelope_is_the_last_event_as_it_dumps() -> None:
    from tests.architectures.test_plan_execute import Shop, arch, refund_plan

    seen, recorded = await _envelopes(
        arch(Shop()), ScriptedModel({"planner": [refund_plan(pinned=True)]}), None
    )
    assert (seen[-1].total_steps, seen[-1].plan_steps_completed, seen[-1].current_step) == (3, 3, "refund")
    assert json.dumps(recorded) == _dumped(seen[-1])


class _SlowWrites(MemoryJournal):
    """A store whose step writes wait until released: its put_step suspends."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = anyio.Event()
        self.release = anyio.Event()

    async def put_step(self, record: StepRecord) -> None:
        self.writing.set()
        await self.release.wait()
        await super().put_step(record)


async def test_a_step_cancelled_mid_write_is_still_recorded_whole() -> None:
    journal = _SlowWrites()
    model = ScriptedModel([Reply(tool_calls=[call("lookup", {"key": "k"})]), "done"])

    @jeeves.tool
    def lookup(key: str) -> str:
        """Look up."""
        return "v"

    # cancelled while the first model step's record is being written
    scope = await cancel_mid_write(
        journal,
        lambda: jeeves.run(Agent("x", tools=[lookup]), "t", model=model, journal=journal, session_id="s"),
    )
    assert scope.cancelled_caught
    step = await journal.get_step("s", 0)
    assert step is not None and step.kind == "model" and step.result is not None
    assert await journal.get_step("s", 1) is None  # the result was not used: the run stopped there


class _TornWrites(MemoryJournal):
    """A store whose first step write stores half a record, then suspends until released."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.writing = anyio.Event()
        self.release = anyio.Event()

    async def put_step(self, record: StepRecord) -> None:
        self.writes += 1
        if self.writes == 1:
            await super().put_step(record.model_copy(update={"result": None}))
            self.writing.set()
        await self.release.wait()
        await super().put_step(record)


async def test_a_write_cancelled_after_storing_half_a_record_leaves_it_whole() -> None:
    from jeeves._run.steps import put_whole

    journal = _TornWrites()
    record = StepRecord(session_id="s", index=0, kind="tool", name="t", fingerprint="f", result={"ok": 1})
    # the writer is cancelled mid-write, its half record stored
    scope = await cancel_mid_write(journal, lambda: put_whole(journal.put_step, record))
    assert scope.cancelled_caught and journal.writes == 2
    stored = await journal.get_step("s", 0)
    assert stored is not None and stored.result == {"ok": 1}


def test_an_envelope_read_later_reports_the_run_as_it_stood_at_its_step() -> None:
    """A step keeps only what its envelope reports (`RunState.reached`); the envelope is built
    when read, from those values, not from the run as it stands then."""
    from types import SimpleNamespace

    from jeeves._run.state import RunState
    from jeeves._run.steps import completed, envelope, report_plan
    from jeeves.budget import BudgetMeter
    from jeeves.models.router import Router

    state = RunState(router=Router(), meter=BudgetMeter(Budget(max_tokens=100, deadline_s=600)))
    session: Any = SimpleNamespace(_state=state, session_id="s")
    state.meter.charge(Usage(input_tokens=10, output_tokens=0, model_calls=1))
    state.completed_steps = 1
    assert completed(session, 0) is None  # no `progress_s`: nothing to emit
    then = envelope(session, 0, None)
    state.completed_steps = 2  # the run goes on: another step, another charge, a plan, time
    state.meter.charge(Usage(input_tokens=50, output_tokens=0, model_calls=1))
    report_plan(session, 3, 1, "pay")
    state.meter._started -= 100
    assert state.progress is not None
    assert {k: v for k, v in state.progress.items() if k != "seconds_left"} == {
        k: v for k, v in then.items() if k != "seconds_left"
    }
    assert (state.progress["completed_steps"], state.progress["tokens_left"]) == (1, 90)
    assert state.progress["total_steps"] is None and state.progress["seconds_left"] > 550
    state.progress = {"step": 7}  # a gate's envelope replaces it until the next step completes
    assert state.progress == {"step": 7}
    completed(session, 1)
    assert (state.progress["step"], state.progress["completed_steps"], state.progress["tokens_left"]) == (
        1,
        2,
        40,
    )
    assert state.progress["total_steps"] == 3 and state.progress["seconds_left"] < 501


class _Asks:
    """An architecture whose one function step is asked with `request`."""

    name = "asks"

    def __init__(self, request: Any) -> None:
        self.request = request

    async def run(self, ctx: Any, task: str) -> jeeves.Output:
        async def answer() -> str:
            return "done"

        value, _ = await ctx.step("function", "f", self.request, answer, str)
        return jeeves.Output(value=value, text=value)


def _circular() -> dict[str, Any]:
    request: dict[str, Any] = {"a": 1}
    request["self"] = request
    return request


def _deep() -> list[Any]:
    request: list[Any] = []
    for _ in range(100_000):
        request = [request]
    return request


@pytest.mark.parametrize("request_", [_circular, _deep], ids=["circular", "deep"])
async def test_a_request_json_cannot_hold_is_a_one_line_user_error(request_: Any) -> None:
    journal = MemoryJournal()
    with pytest.raises(jeeves.UserError) as caught:
        await jeeves.run(_Asks(request_()), "t", journal=journal, session_id="j")
    message = str(caught.value).splitlines()[0]
    assert message.startswith("Step 0 of session 'j' cannot be journaled: its request holds itself")
    assert "Give ctx.step a JSON-able request" in message
    assert caught.value.__cause__ is None
    assert await journal.step_indices("j") == []
    # the same architecture with a JSON-able request runs
    assert (await jeeves.run(_Asks({"a": [1, 2]}), "t", journal=MemoryJournal())).text == "done"
