"""Architectures built in code dump to specs that load back equal."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from typing import Any

import pytest

from jeeves import (
    ActorCritic,
    Agent,
    CitationCritic,
    CodeCritic,
    Goal,
    LLMCritic,
    Router,
    SelfRefine,
    Supervisor,
    Tool,
    Watchdog,
)
from jeeves.critics import FunctionCritic
from jeeves.errors import UserError
from jeeves.models.base import Route
from jeeves.models.testing import ScriptedModel
from jeeves.spec import build, dump, dumps, parse_spec, spec_of
from jeeves.stop import (
    BudgetUSD,
    MaxRounds,
    MaxTokens,
    MaxToolCalls,
    NoImprovement,
    ScoreAtLeast,
    StopWhen,
    TextMention,
    ToolMention,
    WallClock,
    WatchdogVerdict,
)
from tests.spec import helpers

TESTS = 'from solution import add\n\n\ndef test_add():\n    assert add(2, 2) == 4, "2 + 2"\n'


def round_trip(arch: object, router: Router | None = None) -> dict[str, Any]:
    """dump → TOML → load → build → dump gives the same table; returns it."""
    table = dump(arch, router=router)
    assert tomllib.loads(dumps(arch, router=router)) == table
    spec = parse_spec(table)
    assert spec.architecture == spec_of(arch)
    rebuilt, rebuilt_router = build(spec)
    assert dump(rebuilt, router=rebuilt_router if router else None) == table
    return table


def test_an_agent_dumps_only_what_differs_from_the_defaults() -> None:
    assert round_trip(Agent("You count words.")) == {"type": "agent", "instructions": "You count words."}


def test_an_agent_with_everything() -> None:
    agent = Agent(
        "You count words.\nUse the tool.",
        role="counter",
        tools=[helpers.word_count, helpers.shout],
        output_type=helpers.Summary,
        max_turns=3,
        model=Route(model="openai/gpt-4o", fallbacks=("openai/gpt-4o-mini",), params={"temperature": 0}),
        params={"max_tokens": 200},
        description="Counts.",
    )
    assert round_trip(agent) == {
        "type": "agent",
        "instructions": "You count words.\nUse the tool.",
        "role": "counter",
        "tools": ["tests.spec.helpers:word_count", "tests.spec.helpers:shout"],
        "output_type": "tests.spec.helpers:Summary",
        "max_turns": 3,
        "model": {
            "model": "openai/gpt-4o",
            "fallbacks": ["openai/gpt-4o-mini"],
            "params": {"temperature": 0},
        },
        "params": {"max_tokens": 200},
        "description": "Counts.",
    }


def test_a_supervisor_over_every_architecture_and_critic_kind() -> None:
    coder = ActorCritic(
        Agent("You write Python.", role="coder"),
        [
            CodeCritic(TESTS, timeout_s=30, memory_mb=None, env={"X": "1"}),
            LLMCritic(name="review", model="openai/gpt-4o", params={"temperature": 0}, repair=False),
            CitationCritic({"a", "b"}, uncited_penalty=0.5, require_citations=False),
            FunctionCritic(helpers.no_todo, name="todo"),
        ],
        threshold=0.9,
        max_rounds=2,
        no_improvement=1,
        on_critic_error="raise",
        critic_template="Task: {task}\nAnswer: {output}",
        weights={"tests": 3, "review": 1, "citations": 1, "todo": 1},
        description="Writes Python.",
    )
    writer = SelfRefine(
        Agent("You write prose.", role="writer"), no_improvement=None, role="prose", threshold=0.7
    )
    inner = Supervisor({"writer": writer}, instructions="Delegate the writing.", max_turns=3)
    lead = Supervisor(
        {"coder": coder, "team": inner, "plain": Agent("Answer.")},
        role="lead",
        max_delegations=5,
        share_task=False,
        model="anthropic/claude-sonnet-4-5",
        params={"temperature": 0.1},
        description="Leads.",
    )
    router = Router(
        {
            "default": "openai/gpt-4o-mini",
            "team.writer": Route(model="openai/gpt-4o", retries=0),
            "coder.critic": "openai/gpt-4o",  # routes nothing: the coder's one LLM critic pins its model
        }
    )
    table = round_trip(lead, router)
    assert table["models"] == {
        "default": "openai/gpt-4o-mini",
        "team.writer": {"model": "openai/gpt-4o", "retries": 0},
    }
    critics = table["workers"]["coder"]["critic"]
    assert [c["type"] for c in critics] == ["code", "llm", "citations", "function"]
    assert critics[0]["tests_source"] == TESTS and critics[0]["memory_mb"] == 0
    assert critics[2]["require_citations"] is False
    assert table["workers"]["team"]["workers"]["writer"]["no_improvement"] == 0


def test_an_agent_given_as_a_critic_dumps_as_an_llm_critic() -> None:
    arch = ActorCritic(Agent("Write."), Agent("Be strict.", role="strict"))
    table = round_trip(arch)
    assert table["critic"] == [{"type": "llm", "instructions": arch.critic.instructions, "name": "strict"}]


def local_tool() -> Agent:
    def echo(text: str) -> str:
        return text

    return Agent("x", tools=[echo])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (local_tool, r"Cannot dump tool .*cannot be imported by another process"),
        (lambda: Agent("x", model=ScriptedModel(["a"])), r"served by the client .*a spec cannot name"),
        (lambda: ActorCritic(Agent("x"), lambda task, output: True), r"Cannot dump critic function"),
        (lambda: Agent("x", output_type=dict[str, int]), r"Cannot dump output type"),
        (
            lambda: type("Custom", (Agent,), {})("x"),
            r"only jeeves\.Agent, ActorCritic, SelfRefine, Supervisor, PlanExecute and Goal",
        ),
    ],
)
def test_what_a_spec_cannot_name_is_a_clear_error(make: Callable[[], object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        dump(make())


def test_a_tool_renamed_in_code_is_not_dumped_as_its_function() -> None:
    with pytest.raises(UserError, match=r"imports .* not this object"):
        dump(Agent("x", tools=[Tool(helpers.shout, name="yell")]))


def test_a_router_route_served_by_a_client_is_refused() -> None:
    with pytest.raises(UserError, match=r"Cannot dump route 'default'"):
        dump(Agent("x"), router=Router({"default": ScriptedModel(["a"])}))


def test_a_plan_execute_with_workers_checks_and_evaluators() -> None:
    from jeeves import PlanExecute
    from jeeves.critics.plan import DecisionSpec

    arch = PlanExecute(
        Agent("You plan.", role="planner"),
        tools=[helpers.word_count],
        workers={"writer": Agent("You write.")},
        spec=DecisionSpec(required_outputs=["summary"], max_steps=4, safety_mode="local_write"),
        evaluators=[FunctionCritic(helpers.no_todo), LLMCritic(name="review")],
        hard=["no_todo"],
        checks=[helpers.small_plans],
        replan_budget=1,
        retry_budget=0,
        threshold=0.7,
        description="Plans and writes.",
    )
    assert round_trip(arch) == {
        "type": "plan_execute",
        "planner": {"type": "agent", "instructions": "You plan.", "role": "planner"},
        "tools": ["tests.spec.helpers:word_count"],
        "workers": {"writer": {"type": "agent", "instructions": "You write."}},
        "decision": {"required_outputs": ["summary"], "max_steps": 4, "safety_mode": "local_write"},
        "evaluators": [
            {"type": "function", "function": "tests.spec.helpers:no_todo"},
            {"type": "llm", "name": "review"},
        ],
        "hard": ["no_todo"],
        "checks": ["tests.spec.helpers:small_plans"],
        "replan_budget": 1,
        "retry_budget": 0,
        "threshold": 0.7,
        "description": "Plans and writes.",
    }


def test_a_stop_condition_dumps_as_nested_any_and_all_tables() -> None:
    stop = (MaxRounds(3) | ScoreAtLeast(0.9)) & MaxToolCalls(50) | WallClock(60)
    table = round_trip(ActorCritic(Agent("Write."), LLMCritic(), stop=stop))
    assert table["stop"] == {
        "any": [
            {"all": [{"any": [{"max_rounds": 3}, {"score_at_least": 0.9}]}, {"max_tool_calls": 50}]},
            {"wall_clock_s": 60.0},
        ]
    }
    rebuilt, _ = build(parse_spec(table))
    assert isinstance(rebuilt, ActorCritic) and rebuilt.settings.stop == stop


def test_every_stop_condition_round_trips() -> None:
    every = (
        MaxRounds(4)
        | NoImprovement(2)
        | MaxTokens(1000)
        | BudgetUSD(0.5)
        | TextMention("DONE")
        | ToolMention("deploy")
        | WatchdogVerdict(("STUCK", "MISLED"))
        | StopWhen(helpers.past_ten_tool_calls)
        | StopWhen(helpers.past_ten_tool_calls, name="busy", deterministic=False)
    )
    table = round_trip(SelfRefine(Agent("Write."), stop=every))
    assert table["stop"]["any"][-2:] == [
        {"when": "tests.spec.helpers:past_ten_tool_calls"},
        {
            "when": {
                "function": "tests.spec.helpers:past_ten_tool_calls",
                "name": "busy",
                "deterministic": False,
            }
        },
    ]
    assert "max_rounds" not in table and "no_improvement" not in table


def test_a_goal_with_everything_round_trips() -> None:
    goal = Goal(
        Agent("You operate a box.", tools=[helpers.word_count], max_turns=20),
        goal="web answers 200",
        success=[helpers.box_is_fixed, LLMCritic(name="review")],
        watchdog=Watchdog(3, model="openai/gpt-4o-mini", repeat_limit=None, on_error="raise", preview=80),
        stop=MaxToolCalls(150) | WallClock(1800) | BudgetUSD(2.0),
        threshold=0.9,
        max_stuck=2,
        role="ops",
        description="Keeps the box up.",
    )
    table = round_trip(goal)
    assert table["agent"] == {
        "type": "agent",
        "instructions": "You operate a box.",
        "tools": ["tests.spec.helpers:word_count"],
        "max_turns": 20,
    }
    assert table["watchdog"] == {
        "every": 3,
        "model": "openai/gpt-4o-mini",
        "repeat_limit": 0,
        "on_error": "raise",
        "preview": 80,
    }
    assert [c["type"] for c in table["success"]] == ["function", "llm"]
    assert table["stop"] == {"any": [{"max_tool_calls": 150}, {"wall_clock_s": 1800.0}, {"budget_usd": 2.0}]}


def test_a_goal_with_its_defaults_dumps_no_stop_and_no_watchdog() -> None:
    goal = Goal(Agent("x"), goal="g", success=helpers.box_is_fixed)
    assert round_trip(goal) == {
        "type": "goal",
        "goal": "g",
        "agent": {"type": "agent", "instructions": "x"},
        "success": [{"type": "function", "function": "tests.spec.helpers:box_is_fixed"}],
    }


def test_a_stop_function_that_cannot_be_imported_is_refused() -> None:
    stop = MaxRounds(3) | StopWhen(lambda state: False)
    with pytest.raises(UserError, match=r"Cannot dump stop function"):
        dump(ActorCritic(Agent("x"), LLMCritic(), stop=stop))


def test_a_plan_executes_step_budget_and_estimate_headroom_round_trip() -> None:
    from jeeves import Budget, PlanExecute

    arch = PlanExecute(
        Agent("You plan.", role="planner"),
        workers={"writer": Agent("You write.")},
        step_budget=Budget(max_tokens=2000, max_model_calls=4, deadline_s=30.0),
        estimate_headroom=1.5,
    )
    table = round_trip(arch)
    assert (table["step_budget"], table["estimate_headroom"]) == (
        {"max_tokens": 2000, "max_model_calls": 4, "deadline_s": 30.0},
        1.5,
    )
    rebuilt, _ = build(parse_spec(table))
    assert isinstance(rebuilt, PlanExecute)
    assert (rebuilt.step_budget, rebuilt.estimate_headroom) == (arch.step_budget, 1.5)
    unsliced, _ = build(parse_spec(round_trip(PlanExecute(Agent("p"), workers={"w": Agent("w")}))))
    assert isinstance(unsliced, PlanExecute)
    assert (unsliced.step_budget, unsliced.estimate_headroom) == (None, None)


def test_a_step_budget_table_refuses_a_negative_limit() -> None:
    with pytest.raises(UserError, match="step_budget"):
        parse_spec(
            {
                "type": "plan_execute",
                "planner": {"instructions": "p"},
                "workers": {"w": {"type": "agent", "instructions": "w"}},
                "step_budget": {"max_tokens": -1},
            }
        )
