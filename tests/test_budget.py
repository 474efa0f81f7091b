from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, Budget, FunctionModel, ModelResponse, tool
from jeeves.budget import BudgetMeter
from jeeves.errors import BudgetExceeded, UserError, UserTypeError
from jeeves.events import Event
from jeeves.messages import ModelRequest, Usage
from jeeves.models.base import DeltaSink
from jeeves.testing import Reply, call

pytestmark = pytest.mark.anyio


def priced(request: ModelRequest) -> Reply:
    return Reply(
        text="partial answer", usage=Usage(input_tokens=10, output_tokens=5, model_calls=1, cost_usd=0.2)
    )


async def hang(request: ModelRequest) -> str:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


class StreamsForever:
    """A model that streams tokens and never finishes its reply."""

    model_name = "forever"

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        assert on_delta is not None
        while True:
            await on_delta("more ")
            await anyio.sleep(0.01)  # time, not sync: a token every 10 ms, until the deadline


async def collect(arch: Any, task: str, **kwargs: Any) -> tuple[list[Event], jeeves.RunResult]:
    with anyio.fail_after(5):  # generous: the run must stop at its deadline, not hang
        async with jeeves.stream(arch, task, **kwargs) as events:
            seen = [e async for e in events]
            result = await events.result()
    return seen, result


@pytest.mark.parametrize(
    ("budget", "limit"),
    [
        (Budget(max_usd=0.5), "usd"),
        (Budget(max_tokens=20), "tokens"),
        (Budget(max_model_calls=1), "model_calls"),
    ],
)
def test_meter_limits(budget: Budget, limit: str) -> None:
    meter = BudgetMeter(budget)
    meter.check()
    meter.charge(Usage(input_tokens=10, output_tokens=15, model_calls=1, cost_usd=0.6))
    with pytest.raises(BudgetExceeded) as info:
        meter.check()
    assert info.value.limit == limit
    assert "Raise the limit" in str(info.value)
    with pytest.raises(BudgetExceeded):  # stays exceeded
        meter.check()


async def test_deadline() -> None:
    meter = BudgetMeter(Budget(deadline_s=0.01))
    await anyio.sleep(0.02)  # time, not sync: the meter reads the clock, and its deadline passes
    with pytest.raises(BudgetExceeded) as info:
        meter.check()
    assert info.value.limit == "deadline"


@pytest.mark.parametrize(
    ("kwargs", "error", "shown"),
    [
        ({"max_usd": -1}, UserError, r"max_usd=-1: should be >= 0 \(max_usd: USD"),
        ({"max_tokens": -1}, UserError, r"max_tokens=-1: should be >= 0 \(max_tokens: Input plus output"),
        ({"max_tokens": "100"}, UserTypeError, r"max_tokens='100': should be a valid integer"),
        ({"max_tokens": 1.5}, UserTypeError, r"max_tokens=1\.5: should be a valid integer"),
        ({"max_model_calls": True}, UserTypeError, r"max_model_calls=True: should be a valid integer"),
        ({"max_usd": float("nan")}, UserError, r"max_usd=nan: should be a finite number"),
        ({"deadline_s": -5}, UserError, r"deadline_s=-5: should be >= 0"),
        (
            {"max_dollars": 1},
            UserError,
            r"max_dollars= is not an argument of Budget; its arguments are: max_tokens",
        ),
    ],
)
def test_bad_limits_are_user_errors_naming_the_value(
    kwargs: dict[str, object], error: type[UserError], shown: str
) -> None:
    with pytest.raises(error, match=shown) as info:
        Budget(**kwargs)  # type: ignore[arg-type]
    assert "see help(jeeves.Budget)" in str(info.value)


def test_every_bad_limit_is_reported_at_once() -> None:
    with pytest.raises(UserError) as info:
        Budget(max_tokens=-1, max_usd="1")  # type: ignore[arg-type]
    assert "max_tokens=-1" in str(info.value) and "max_usd='1'" in str(info.value)


def test_whole_numbers_are_fine_for_money_and_time() -> None:
    assert Budget(max_usd=1, deadline_s=2).max_usd == 1.0


class _Twice:
    """Two agents one after the other: the budget is shared by the whole tree."""

    name = "twice"

    async def run(self, ctx: jeeves.Context, task: str) -> jeeves.Output:
        first = await ctx.run(Agent("a"), task, role="first")
        try:
            await ctx.run(Agent("b"), task, role="second")
        except BudgetExceeded:
            return jeeves.Output.of(first.text, stop_reason="budget")
        return first


async def test_budget_is_shared_by_the_tree_and_event_emitted_once() -> None:
    model = FunctionModel(priced)  # $0.20 a call
    async with jeeves.stream(_Twice(), "t", model=model, budget=Budget(max_usd=0.3)) as events:
        seen = [e async for e in events]
        result = await events.result()
    assert [e.type for e in seen].count("budget.exceeded") == 1
    breach = next(e for e in seen if e.type == "budget.exceeded")
    assert breach.session_id.endswith("__second_0")
    assert (result.stop_reason, result.output) == ("budget", "partial answer")
    # The limit holds: a second $0.20 call could cross $0.30, so it is refused before it starts.
    assert result.cost_usd == pytest.approx(0.2)
    assert result.cost_usd <= 0.3
    assert len(model.requests) == 1


async def test_every_live_call_counts_even_when_the_client_reports_no_calls() -> None:
    model = FunctionModel(lambda r: Reply(text="x", usage=Usage(input_tokens=1)))
    result = await jeeves.run(Agent("a"), "t", model=model, budget=Budget(max_model_calls=5))
    assert result.usage.model_calls == 1


async def test_a_call_is_refused_when_the_calls_in_flight_could_cross_a_limit() -> None:
    meter = BudgetMeter(Budget(max_tokens=100))
    meter.charge(Usage(input_tokens=20, output_tokens=20, model_calls=1))  # the costliest call: 40
    with meter.live(model_call=True):  # 40 spent + 40 reserved
        with pytest.raises(BudgetExceeded, match="in flight or starting may need 80") as info:
            meter.check(calls_starting=1)  # + 40 more would reach 120 > 100
    assert (info.value.limit, info.value.spent) == ("tokens", 40)


async def test_model_calls_count_when_they_start() -> None:
    meter = BudgetMeter(Budget(max_model_calls=2))
    with meter.live(model_call=True), meter.live(model_call=True):
        with pytest.raises(BudgetExceeded) as info:
            meter.check(calls_starting=1)
    assert info.value.limit == "model_calls"


@pytest.mark.parametrize("model", [FunctionModel(hang), StreamsForever()], ids=["awaits", "streams"])
async def test_the_deadline_cancels_a_model_call_that_never_ends(model: Any) -> None:
    seen, result = await collect(Agent("a"), "t", model=model, budget=Budget(deadline_s=0.5))
    assert (result.stop_reason, result.output) == ("budget", None)
    (breach,) = [e for e in seen if e.type == "budget.exceeded"]
    assert (breach.limit, breach.allowed) == ("deadline", 0.5)
    assert breach.spent >= 0.5
    assert "model.completed" not in [e.type for e in seen]


async def test_the_deadline_cancels_a_tool_that_never_ends_and_keeps_the_text_so_far() -> None:
    @tool
    async def wait() -> str:
        """Waits forever."""
        await anyio.sleep_forever()
        return "never"

    model = FunctionModel(lambda r: Reply(text="Looking it up.", tool_calls=[call("wait")]))
    seen, result = await collect(Agent("a", tools=[wait]), "t", model=model, budget=Budget(deadline_s=0.5))
    assert (result.stop_reason, result.output) == ("budget", "Looking it up.")
    assert [e.type for e in seen].count("budget.exceeded") == 1
    assert len(model.requests) == 1


# -- budget slices on the journal-less path (the h-hot fast paths meet per-session slices) --


def test_a_meter_is_unlimited_only_when_it_and_every_meter_above_it_limit_nothing() -> None:
    free = BudgetMeter()
    assert free.unlimited
    assert free.slice(Budget(), owner="r__a_0").unlimited
    assert not free.slice(Budget(max_tokens=5), owner="r__a_0").unlimited
    limited = BudgetMeter(Budget(max_model_calls=1))
    under = limited.slice(Budget(), owner="r__a_0")
    assert not under.unlimited  # its own budget is empty, but its parent's live() must still run
    assert not under.slice(Budget(), owner="r__a_0__b_0").unlimited
    limited.charge(Usage(input_tokens=1, model_calls=1))
    with pytest.raises(BudgetExceeded) as info, under.live(model_call=True):
        raise AssertionError("the run's spent budget must refuse a call in its unlimited slice")
    assert (info.value.limit, info.value.slice_id) == ("model_calls", None)


def _looks_twice(request: ModelRequest) -> Reply:
    """A tool call on the first turn, a text answer on the second."""
    if len(request.messages) <= 2:
        return Reply(text="Looking.", tool_calls=[call("note", {"text": "x"})], usage=Usage(input_tokens=10))
    return Reply(text="Done.", usage=Usage(input_tokens=10))


@tool
def note(text: str) -> str:
    """Write a note down."""
    return "noted"


class _Sliced:
    """Runs one Agent under a slice and reports what `ctx.run` raised (its slice id and limit)."""

    name = "sliced"

    def __init__(self, child: Any, slice_budget: Budget) -> None:
        self.child, self.slice_budget = child, slice_budget
        self.awaitable: object = None

    async def run(self, ctx: Any, task: str) -> jeeves.Output:
        pending = ctx.run(self.child, task, role="step", budget=self.slice_budget)
        self.awaitable = pending
        try:
            out = await pending
        except BudgetExceeded as exc:
            kept = exc.output.text if exc.output is not None else None
            return jeeves.Output.of(f"{exc.slice_id}:{exc.limit}:{kept}", stop_reason="slice")
        return out


async def test_a_journal_less_slice_stops_its_childs_model_call_and_ctx_run_raises_its_error() -> None:
    model = FunctionModel(_looks_twice)
    arch = _Sliced(Agent("a", tools=[note]), Budget(max_model_calls=1))
    result = await jeeves.run(arch, "t", model=model, session_id="r")  # no journal, no reader, no run budget
    assert (result.stop_reason, result.text) == ("slice", "r__step_0:model_calls:Looking.")
    assert len(model.requests) == 1  # the second call was refused before it started
    assert result.usage.model_calls == 1
    assert inspect.iscoroutine(arch.awaitable)  # a sliced ctx.run is still a plain coroutine


async def test_a_journal_less_unlimited_slice_under_a_limited_run_is_stopped_by_the_run() -> None:
    model = FunctionModel(_looks_twice)
    arch = _Sliced(Agent("a", tools=[note]), Budget())
    seen, result = await collect(arch, "t", model=model, session_id="r", budget=Budget(max_model_calls=1))
    assert len(model.requests) == 1
    (breach,) = [e for e in seen if e.type == "budget.exceeded"]
    assert (breach.session_id, breach.slice_id, breach.limit) == ("r__step_0", None, "model_calls")
    assert result.text == "Looking."  # not the slice's error: the run's own budget stopped it


async def test_a_journal_less_slices_deadline_cancels_its_childs_tool() -> None:
    @tool
    async def wait() -> str:
        """Waits forever."""
        await anyio.sleep_forever()
        return "never"

    model = FunctionModel(lambda r: Reply(text="Looking it up.", tool_calls=[call("wait")]))
    arch = _Sliced(Agent("a", tools=[wait]), Budget(deadline_s=0.3))
    seen, result = await collect(arch, "t", model=model, session_id="r")
    assert (result.stop_reason, result.text) == ("slice", "r__step_0:deadline:Looking it up.")
    (breach,) = [e for e in seen if e.type == "budget.exceeded"]
    assert (breach.slice_id, breach.limit) == ("r__step_0", "deadline")
