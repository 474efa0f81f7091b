from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

import jeeves
from jeeves import (
    ActorCritic,
    Agent,
    Budget,
    FunctionModel,
    LLMCritic,
    MemoryJournal,
    Router,
    ScriptedModel,
    Supervisor,
)
from jeeves.architectures import SupervisorOutput
from jeeves.errors import MaxTurnsExceeded, ProviderError, UserError
from jeeves.events import Event
from jeeves.messages import ModelRequest, Usage
from jeeves.testing import Reply, call

pytestmark = pytest.mark.anyio


def delegate(worker: str, instructions: str, *, id: str | None = None) -> Any:
    return call("delegate", {"worker": worker, "instructions": instructions}, id=id)


def forward(worker: str) -> Any:
    return call("forward", {"worker": worker})


def agents(*names: str) -> dict[str, Agent]:
    return {name: Agent(f"You are the {name}.", description=f"The {name}.") for name in names}


async def collect(arch: Any, task: str, **kwargs: Any) -> tuple[list[Event], jeeves.RunResult]:
    async with jeeves.stream(arch, task, **kwargs) as stream:
        events = [e async for e in stream]
        result = await stream.result()
    return events, result


def of(events: list[Event], type_: str, session_id: str | None = None) -> list[Any]:
    return [e for e in events if e.type == type_ and (session_id is None or e.session_id == session_id)]


def per_session(events: list[Event]) -> dict[str, list[dict[str, Any]]]:
    """Each session's events without the run-wide fields (seq, ts) and the replay marker."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        out[e.session_id].append(e.model_dump(mode="json", exclude={"seq", "ts", "replayed"}))
    return dict(out)


def reviewed_coder() -> ActorCritic:
    return ActorCritic(Agent("You write Python."), LLMCritic(), max_rounds=2)


def verdict(score: float, *issues: str) -> str:
    return json.dumps({"score": score, "issues": list(issues), "summary": "reviewed"})


# -- parallel delegation --------------------------------------------------------------------


async def test_delegations_of_one_turn_run_at_once_and_settle_in_call_order() -> None:
    alpha_waiting, beta_waiting, beta_finished = anyio.Event(), anyio.Event(), anyio.Event()

    async def alpha(request: ModelRequest) -> str:
        alpha_waiting.set()
        with anyio.fail_after(5):
            await beta_waiting.wait()  # beta is running at the same time…
            await beta_finished.wait()  # …and finishes first
        return "alpha result"

    async def beta(request: ModelRequest) -> str:
        beta_waiting.set()
        with anyio.fail_after(5):
            await alpha_waiting.wait()
        return "beta result"

    coordinator = ScriptedModel(
        [Reply(tool_calls=[delegate("alpha", "part A"), delegate("beta", "part B")]), "both done"]
    )
    models = {"supervisor": coordinator, "alpha": FunctionModel(alpha), "beta": FunctionModel(beta)}
    events: list[Event] = []
    async with jeeves.stream(Supervisor(agents("alpha", "beta")), "task", models=models, session_id="p") as s:
        async for event in s:
            events.append(event)
            if event.type == "session.completed" and event.session_id == "p__beta_0":
                beta_finished.set()
        result = await s.result()

    assert result.output == "both done"
    order = [(e.type, e.session_id) for e in events if e.type in ("session.started", "session.completed")]
    started_both = max(order.index(("session.started", f"p__{w}_0")) for w in ("alpha", "beta"))
    assert started_both < order.index(
        ("session.completed", "p__beta_0")
    )  # interleaved, not one after the other
    assert order.index(("session.completed", "p__beta_0")) < order.index(("session.completed", "p__alpha_0"))
    # the supervisor's own events follow the calls, whichever worker finished first
    kinds = ("tool.started", "tool.completed", "delegation.started", "delegation.completed")
    assert [
        (e.type, getattr(e, "worker", "")) for e in events if e.session_id == "p" and e.type in kinds
    ] == [
        ("tool.started", ""),
        ("delegation.started", "alpha"),
        ("tool.started", ""),
        ("delegation.started", "beta"),
        ("delegation.completed", "alpha"),
        ("tool.completed", ""),
        ("delegation.completed", "beta"),
        ("tool.completed", ""),
    ]
    tool_messages = [m for m in coordinator.requests[1].messages if m.role == "tool"]
    assert [m.content for m in tool_messages] == ["alpha result", "beta result"]
    started = of(events, "delegation.started")
    assert [(e.worker, e.child_session_id, e.instructions) for e in started] == [
        ("alpha", "p__alpha_0", "part A"),
        ("beta", "p__beta_0", "part B"),
    ]
    assert [e.tool_call_id for e in started] == [c.id for c in coordinator.requests[1].messages[2].tool_calls]


async def test_child_index_counts_each_workers_delegations_in_call_order() -> None:
    coordinator = ScriptedModel(
        [
            Reply(tool_calls=[delegate("a", "1"), delegate("b", "2"), delegate("a", "3")]),
            Reply(tool_calls=[delegate("a", "4")]),
            "done",
        ]
    )
    worker = FunctionModel(lambda r: f"did {(r.messages[-1].content or '')[:1]}")
    sup = Supervisor(agents("a", "b"), share_task=False)
    events, result = await collect(
        sup, "t", models={"supervisor": coordinator, "default": worker}, session_id="r"
    )
    assert [(e.child_session_id, e.instructions) for e in of(events, "delegation.started")] == [
        ("r__a_0", "1"),
        ("r__b_0", "2"),
        ("r__a_1", "3"),
        ("r__a_2", "4"),
    ]
    detail = result.detail
    assert isinstance(detail, SupervisorOutput)
    assert [(d.session_id, d.index, d.text) for d in detail.delegations] == [
        ("r__a_0", 0, "did 1"),
        ("r__b_0", 0, "did 2"),
        ("r__a_1", 1, "did 3"),
        ("r__a_2", 2, "did 4"),
    ]


async def test_worker_sees_instructions_and_shared_task_in_documented_format() -> None:
    for share, expected in (
        (
            True,
            "Sum it.\n\n---\nThe user's original task, for context (your job is the instructions above):\nAdd 1+2",
        ),
        (False, "Sum it."),
    ):
        model = ScriptedModel(
            {"supervisor": [Reply(tool_calls=[delegate("math", "Sum it.")]), "3"], "math": ["3"]}
        )
        await jeeves.run(Supervisor(agents("math"), share_task=share), "Add 1+2", model=model)
        worker_request = next(r for r in model.requests if r.role_path[-1] == "math")
        assert worker_request.messages[-1].content == expected


# -- bad calls are conversation --------------------------------------------------------------


async def test_unknown_worker_is_a_tool_error_listing_the_workers() -> None:
    coordinator = ScriptedModel([Reply(tool_calls=[delegate("designer", "draw")]), "I'll do it myself."])
    events, result = await collect(Supervisor(agents("coder", "writer")), "t", model=coordinator)
    assert result.output == "I'll do it myself."
    rejected = of(events, "delegation.rejected")
    assert [(e.worker, e.reason) for e in rejected] == [
        ("designer", "Unknown worker 'designer'; the workers are: coder, writer.")
    ]
    done = of(events, "tool.completed")
    assert done[0].is_error and done[0].result == rejected[0].reason
    assert coordinator.requests[1].messages[-1].content == rejected[0].reason
    assert not of(events, "delegation.started")


async def test_delegations_beyond_the_limit_are_refused_with_an_event() -> None:
    coordinator = ScriptedModel(
        [
            Reply(tool_calls=[delegate("coder", "one"), delegate("coder", "two")]),
            Reply(tool_calls=[delegate("coder", "three")]),
            "settled",
        ]
    )
    sup = Supervisor(agents("coder"), max_delegations=1)
    model = {"supervisor": coordinator, "coder": ScriptedModel(["first"])}
    events, result = await collect(sup, "t", models=model, session_id="m")
    assert result.output == "settled"
    assert [e.child_session_id for e in of(events, "delegation.started")] == ["m__coder_0"]
    rejected = of(events, "delegation.rejected")
    assert len(rejected) == 2 and all("max_delegations" in e.reason for e in rejected)
    results = [m.content for m in coordinator.requests[1].messages if m.role == "tool"]
    assert results[0] == "first" and "refused" in (results[1] or "")


async def test_failing_worker_is_a_tool_error_and_its_sibling_finishes() -> None:
    def broken(request: ModelRequest) -> str:
        raise RuntimeError("disk on fire")

    coordinator = ScriptedModel(
        [Reply(tool_calls=[delegate("broken", "go"), delegate("fine", "go")]), "fine said ok"]
    )
    models = {"supervisor": coordinator, "broken": FunctionModel(broken), "fine": ScriptedModel(["ok"])}
    events, result = await collect(Supervisor(agents("broken", "fine")), "t", models=models, session_id="f")
    assert result.output == "fine said ok" and result.stop_reason == "completed"
    assert [e.session_id for e in of(events, "session.failed")] == ["f__broken_0"]
    completed = of(events, "delegation.completed")
    assert [(e.worker, e.is_error) for e in completed] == [("broken", True), ("fine", False)]
    message = coordinator.requests[1].messages[-2].content or ""
    assert message == "Worker 'broken' failed: RuntimeError: disk on fire"
    assert "TaskGroup" not in message
    assert coordinator.requests[1].messages[-1].content == "ok"


async def test_misconfiguration_in_a_worker_ends_the_run_instead_of_becoming_conversation() -> None:
    coordinator = ScriptedModel(
        [Reply(tool_calls=[delegate("coder", "go"), delegate("fine", "go")]), "unused"]
    )
    router = Router({"supervisor": coordinator, "fine": ScriptedModel(["ok"])})  # no route for the coder
    with pytest.raises(UserError, match="No model route for role 'supervisor.coder'"):
        await jeeves.run(Supervisor(agents("coder", "fine")), "t", router=router, session_id="u")
    assert len(coordinator.requests) == 1


async def test_malformed_calls_and_unknown_tools_are_tool_errors() -> None:
    coordinator = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    call("delegate", "{not json"),
                    call("delegate", {"worker": "coder"}),
                    call("search", {"q": "x"}),
                    call("forward", {}),
                ]
            ),
            "sorry",
        ]
    )
    events, result = await collect(Supervisor(agents("coder")), "t", model=coordinator)
    assert result.output == "sorry"
    results = [e.result for e in of(events, "tool.completed")]
    assert all(e.is_error for e in of(events, "tool.completed"))
    assert "not JSON" in results[0] and '"instructions": "..."' in results[0]
    assert "'instructions' must be a non-empty string" in results[1]
    assert results[2] == "Unknown tool 'search'; the tools are: delegate, forward."
    assert "'worker' must be a non-empty string" in results[3]
    assert len(of(events, "delegation.rejected")) == 2


# -- forward -----------------------------------------------------------------------------------


class Plan(BaseModel):
    steps: list[str]


async def test_forward_returns_the_workers_output_verbatim_with_its_typed_value() -> None:
    planner = Agent("You plan.", output_type=Plan)
    coordinator = ScriptedModel([Reply(tool_calls=[delegate("planner", "plan it"), forward("planner")])])
    models = {"supervisor": coordinator, "planner": ScriptedModel(['{"steps": ["a", "b"]}'])}
    events, result = await collect(Supervisor({"planner": planner}), "t", models=models, session_id="w")
    assert result.stop_reason == "forwarded"
    assert result.output == Plan(steps=["a", "b"])
    assert result.text == '{"steps":["a","b"]}'
    assert isinstance(result.detail, SupervisorOutput) and result.detail.forwarded_from == "w__planner_0"
    assert len(coordinator.requests) == 1  # forwarding costs no further coordinator call
    assert [e.name for e in of(events, "tool.completed")] == ["delegate", "forward"]


async def test_forward_without_output_is_an_error_and_the_first_valid_forward_wins() -> None:
    def worker(request: ModelRequest) -> str:
        if "fail" in (request.messages[-1].content or ""):
            raise RuntimeError("nope")
        return f"out of {request.session_id}"

    coordinator = ScriptedModel(
        [
            Reply(tool_calls=[forward("a")]),
            Reply(tool_calls=[delegate("a", "fail")]),
            Reply(tool_calls=[forward("a")]),
            Reply(tool_calls=[delegate("b", "work"), forward("a"), forward("b"), forward("b")]),
        ]
    )
    sup = Supervisor(agents("a", "b"), share_task=False)
    events, result = await collect(
        sup, "t", models={"supervisor": coordinator, "default": FunctionModel(worker)}
    )
    results = [(e.result, e.is_error) for e in of(events, "tool.completed") if e.name == "forward"]
    assert "'a' has not been delegated to yet" in results[0][0]
    assert "'a''s latest delegation" in results[1][0] and "nope" in results[1][0]
    assert results[2][0].startswith("Nothing to forward: 'a'")
    assert results[3] == (f"out of {result.session_id}__b_0", False)
    assert results[4] == ("Not forwarded: this reply already forwards 'b''s output.", True)
    assert result.stop_reason == "forwarded" and result.output == f"out of {result.session_id}__b_0"


async def test_forward_replays_from_the_recorded_worker_output() -> None:
    def broken(request: ModelRequest) -> str:
        raise RuntimeError("flaky tool chain")

    def script() -> dict[str, Any]:
        return {
            "supervisor": ScriptedModel(
                [
                    Reply(tool_calls=[delegate("coder", "write it"), delegate("broken", "help")]),
                    Reply(text="Forwarding the coder.", tool_calls=[forward("coder")]),
                ]
            ),
            "coder": ScriptedModel(["def f(): return 42"]),
            "broken": FunctionModel(broken),
        }

    journal = MemoryJournal()  # a fresh Supervisor replays: nothing is carried over in memory
    live_events, live = await collect(
        Supervisor(agents("coder", "broken")), "t", models=script(), journal=journal, session_id="rec"
    )
    replay_events, replayed = await collect(
        Supervisor(agents("coder", "broken")),
        "t",
        router=Router(),
        journal=journal,
        mode="replay",
        session_id="rec",
    )
    assert (
        (replayed.output, replayed.stop_reason)
        == ("def f(): return 42", "forwarded")
        == (
            live.output,
            live.stop_reason,
        )
    )
    assert replayed.usage.model_calls == 0 < live.usage.model_calls
    assert per_session(replay_events) == per_session(live_events)


# -- nesting -----------------------------------------------------------------------------------


def nested_script() -> ScriptedModel:
    code = "job__team_0__coder_"
    return ScriptedModel(
        {
            "job": [
                Reply(tool_calls=[delegate("team", "Build add() with tests")]),
                Reply(tool_calls=[forward("team")]),
            ],
            "job__team_0": [
                Reply(
                    tool_calls=[delegate("coder", "write add()"), delegate("coder", "write tests for add()")]
                ),
                "add() and its tests are ready.",
            ],
            f"{code}0__actor_0": ["def add(a, b): return a - b"],
            f"{code}0__critic_0": [verdict(0.2, "It subtracts.")],
            f"{code}0__actor_1": ["def add(a, b): return a + b"],
            f"{code}0__critic_1": [verdict(1.0)],
            f"{code}1__actor_0": ["assert add(1, 2) == 3"],
            f"{code}1__critic_0": [verdict(0.9)],
        }
    )


def nested() -> Supervisor:
    team = Supervisor({"coder": reviewed_coder()}, description="A team lead with a reviewed coder.")
    return Supervisor({"team": team})


async def test_three_levels_give_expected_ids_and_repeat_identically() -> None:
    runs = []
    for _ in range(2):
        model = nested_script()
        events, result = await collect(nested(), "Ship add()", model=model, session_id="job")
        model.assert_consumed()
        runs.append((events, result))
    (events, result), (again, _) = runs
    assert result.output == "add() and its tests are ready." and result.stop_reason == "forwarded"
    ids = sorted(e.session_id for e in of(events, "session.started"))
    assert ids == [
        "job",
        "job__team_0",
        "job__team_0__coder_0",
        "job__team_0__coder_0__actor_0",
        "job__team_0__coder_0__actor_1",
        "job__team_0__coder_0__critic_0",
        "job__team_0__coder_0__critic_1",
        "job__team_0__coder_1",
        "job__team_0__coder_1__actor_0",
        "job__team_0__coder_1__critic_0",
    ]
    assert ids == sorted(e.session_id for e in of(again, "session.started"))
    assert per_session(events) == per_session(again)
    # nested workers' text streams through live, before the outer delegation completes
    outer_done = next(e.seq for e in of(events, "delegation.completed", "job"))
    deep = [e for e in of(events, "model.delta") if e.session_id.startswith("job__team_0__coder_")]
    assert deep and all(e.seq < outer_done for e in deep)
    started = {e.session_id: e for e in of(events, "session.started")}
    assert started["job__team_0__coder_1__critic_0"].role_path == ["supervisor", "team", "coder", "critic"]
    assert started["job__team_0"].architecture == "supervisor"


async def test_usage_rolls_up_per_delegation_and_per_worker() -> None:
    model = nested_script()
    events, result = await collect(nested(), "Ship add()", model=model, session_id="job")
    outer = result.detail
    assert isinstance(outer, SupervisorOutput)
    (team,) = outer.delegations
    inner = team.output
    assert isinstance(inner, SupervisorOutput)
    completed = {e.session_id: e.usage for e in of(events, "session.completed")}
    assert team.usage == completed["job__team_0"] == of(events, "delegation.completed", "job")[0].usage
    assert [d.usage for d in inner.delegations] == [
        completed["job__team_0__coder_0"],
        completed["job__team_0__coder_1"],
    ]
    assert (
        inner.usage_by_worker["coder"]
        == completed["job__team_0__coder_0"] + completed["job__team_0__coder_1"]
    )
    assert inner.usage_by_worker["coder"].model_calls == 6
    assert outer.usage == completed["job"] == result.usage
    assert result.usage.model_calls == 2 + 2 + 6
    assert set(result.usage_by_role) == {"supervisor", "team", "actor", "critic"}


# -- budget, turns, construction ---------------------------------------------------------------


async def test_worker_out_of_budget_stops_with_the_latest_worker_output() -> None:
    coordinator = ScriptedModel(
        [Reply(tool_calls=[delegate("coder", "v1")]), Reply(tool_calls=[delegate("coder", "v2")]), "unused"]
    )
    models = {"supervisor": coordinator, "coder": ScriptedModel(["code v1", "code v2"])}
    events, result = await collect(
        Supervisor(agents("coder")), "t", models=models, budget=Budget(max_model_calls=3)
    )
    assert (result.output, result.stop_reason) == ("code v1", "budget")
    assert [(e.worker, e.is_error) for e in of(events, "delegation.completed")] == [
        ("coder", False),
        ("coder", True),
    ]
    assert len(of(events, "budget.exceeded")) == 1
    assert len(coordinator.requests) == 2  # no call spent to learn the budget is gone


async def test_budget_with_nothing_but_the_coordinators_text_keeps_that_text() -> None:
    async def run(text: str) -> jeeves.RunResult:
        coordinator = ScriptedModel([Reply(text=text, tool_calls=[delegate("coder", "v1")])])
        budget = Budget(max_model_calls=1)  # the coder's call is refused
        return await jeeves.run(Supervisor(agents("coder")), "t", model=coordinator, budget=budget)

    result = await run("Asking the coder.")
    assert (result.output, result.stop_reason) == ("Asking the coder.", "budget")
    result = await run("")
    assert (result.output, result.stop_reason) == (
        None,
        "budget",
    )  # nothing to keep: BudgetExceeded ends the run


def worker_models(names: str, tokens: int, *, wait_for: int = 0) -> dict[str, FunctionModel]:
    """Each worker's model; `c` awaits forever (in flight when the budget breaks). The
    others answer once `wait_for` calls have started, so those are in flight together."""
    started: list[str] = []
    enough = anyio.Event()

    def model(name: str) -> FunctionModel:
        async def answer(request: ModelRequest) -> Reply:
            started.append(name)
            if len(started) >= wait_for:
                enough.set()
            if name == "c":
                await anyio.sleep_forever()
            await enough.wait()
            return Reply(text=f"{name} out", usage=Usage(output_tokens=tokens, model_calls=1))

        return FunctionModel(answer)

    return {name: model(name) for name in names}


async def test_a_breach_cancels_parallel_workers_in_flight_and_returns_no_fragment() -> None:
    split = Reply(
        tool_calls=[delegate("a", "x"), delegate("b", "y"), delegate("c", "z")],
        usage=Usage(input_tokens=10, model_calls=1),
    )
    # All three calls are in flight before any returns.
    models = {"supervisor": ScriptedModel([split]), **worker_models("abc", 400, wait_for=3)}
    with anyio.fail_after(5):  # generous: c is cancelled at the breach, not waited for
        events, result = await collect(
            Supervisor(agents("a", "b", "c")), "t", models=models, budget=Budget(max_tokens=500)
        )
    # 10 + 400 + 400: the charge that reached the limit cancelled c; the overshoot is under one call.
    assert result.usage.total_tokens == 810 < 500 + 400
    assert result.usage.model_calls == 3
    done = {e.worker: e.is_error for e in of(events, "delegation.completed")}
    assert done == {"a": False, "b": False, "c": True}
    assert len(of(events, "budget.exceeded")) == 1
    # a and b are pieces of a split task: neither is the answer, and c's stream is discarded.
    assert (result.stop_reason, result.output) == ("budget", None)


async def test_parallel_workers_reserve_model_calls_before_they_start() -> None:
    split = Reply(tool_calls=[delegate("a", "x"), delegate("b", "y"), delegate("d", "w")])
    models = {"supervisor": ScriptedModel([split]), **worker_models("abd", 1)}
    events, result = await collect(
        Supervisor(agents("a", "b", "d")), "t", models=models, budget=Budget(max_model_calls=2)
    )
    assert result.usage.model_calls == 2  # the coordinator's and one worker's; the others are refused
    assert sorted(e.is_error for e in of(events, "delegation.completed")) == [False, True, True]
    assert (result.stop_reason, result.output) == ("budget", None)


async def test_a_call_refused_by_the_reservation_lets_the_calls_in_flight_finish() -> None:
    split = Reply(
        tool_calls=[delegate("a", "x"), delegate("b", "y"), delegate("d", "w")],
        usage=Usage(input_tokens=100, model_calls=1),
    )
    models = {"supervisor": ScriptedModel([split]), **worker_models("abd", 100, wait_for=2)}
    events, result = await collect(
        Supervisor(agents("a", "b", "d")), "t", models=models, budget=Budget(max_tokens=350)
    )
    # 100 spent; two calls in flight reserve 100 each; a third could reach 400 > 350: refused.
    assert sorted(e.is_error for e in of(events, "delegation.completed")) == [False, False, True]
    assert result.usage.total_tokens == 300 <= 350
    assert result.stop_reason == "budget"


async def test_a_worker_whose_actor_fails_while_revising_hands_back_its_judged_draft() -> None:
    coordinator = ScriptedModel(
        [Reply(tool_calls=[delegate("coder", "v1")]), Reply(tool_calls=[forward("coder")])]
    )
    coder = ScriptedModel(
        {"actor": ["code v1", ProviderError("bad request", status_code=400)], "critic": [verdict(0.5, "x")]}
    )
    coder_arch = ActorCritic(
        Agent("You write Python."), LLMCritic(), max_rounds=2, on_actor_error="keep_draft"
    )
    events, result = await collect(
        Supervisor({"coder": coder_arch}),
        "t",
        models={"supervisor": coordinator, "coder.actor": coder, "coder.critic": coder},
    )
    coder.assert_consumed()
    (done,) = of(events, "delegation.completed")
    assert (done.is_error, done.output) == (False, "code v1")
    assert (result.output, result.stop_reason) == ("code v1", "forwarded")
    assert result.detail is not None and result.detail.delegations[0].stop_reason == "actor_failed"


async def test_max_turns_returns_the_latest_worker_output_or_raises() -> None:
    loop = [Reply(tool_calls=[delegate("coder", "again")])] * 2
    model = ScriptedModel({"supervisor": loop, "coder": ["draft 1", "draft 2"]})
    result = await jeeves.run(Supervisor(agents("coder"), max_turns=2), "t", model=model)
    assert (result.output, result.stop_reason) == ("draft 2", "max_turns")

    model = ScriptedModel({"supervisor": [Reply(tool_calls=[forward("coder")])]})
    with pytest.raises(MaxTurnsExceeded, match="max_turns=1"):
        await jeeves.run(Supervisor(agents("coder"), max_turns=1), "t", model=model)


def test_tools_show_workers_as_an_enum_with_their_descriptions() -> None:
    sup = Supervisor({"coder": Agent("x", description="Writes\n  Python."), "reviewed": reviewed_coder()})
    delegate_spec, forward_spec = sup.tool_specs
    assert delegate_spec.parameters["properties"]["worker"]["enum"] == ["coder", "reviewed"]
    assert forward_spec.parameters["properties"]["worker"]["enum"] == ["coder", "reviewed"]
    assert "Workers:\n- coder: Writes Python.\n- reviewed" in delegate_spec.description
    assert delegate_spec.parameters["required"] == ["worker", "instructions"]
    json.dumps([delegate_spec.model_dump(), forward_spec.model_dump()])


@pytest.mark.parametrize(
    ("workers", "kwargs", "message"),
    [
        ({"Coder": Agent("x")}, {}, "Invalid worker name 'Coder'"),
        ({"a__b": Agent("x")}, {}, "Invalid worker name 'a__b'"),
        ({"coder": "an agent"}, {}, "Worker 'coder' is 'an agent', not an architecture"),
        ({}, {}, "needs a mapping of worker names"),
        (
            {"coder": Agent("x")},
            {"max_delegations": 0},
            "max_delegations must be an int >= 1, got 0",
        ),
        ({"coder": Agent("x")}, {"max_turns": 0}, "max_turns must be an int >= 1, got 0"),
        ({"coder": Agent("x")}, {"role": "Boss"}, "Invalid role name 'Boss'"),
    ],
)
def test_bad_configuration_is_a_user_error(workers: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        Supervisor(workers, **kwargs)


def test_critic_loops_describe_themselves_to_the_coordinator() -> None:
    coder = ActorCritic(Agent("You write Python.", description="Writes Python code."), LLMCritic())
    polished = ActorCritic(Agent("x"), LLMCritic(), description="Reviewed prose.")
    spec = Supervisor(workers={"coder": coder, "writer": polished}).tool_specs[0]
    assert "- coder: Writes Python code." in spec.description
    assert "- writer: Reviewed prose." in spec.description
