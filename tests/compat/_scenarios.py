"""The scenarios jeevesagent 0.9.7's own suites pin, written for both frameworks.

Each builds the same jeevesagent user code from `side.ja` (jeevesagent itself, or
jeeves.compat.jeevesagent). `pins` names the jeevesagent tests (tests/test_actor_critic.py
"ac", test_self_refine.py "sr", test_supervisor.py "sup") whose behaviour it runs.
"""

from __future__ import annotations

import json
from typing import Any

from tests.compat._differential import Case, Side

CRITIC_IDS = {"model_sessions": "D-critic-ids"}


def scripted(side: Side, replies: list[str], instructions: str = "test") -> Any:
    ja = side.ja
    return ja.Agent(instructions, model=ja.ScriptedModel([ja.ScriptedTurn(text=r) for r in replies]))


def review(score: float, *issues: str, summary: str = "") -> str:
    return json.dumps({"issues": list(issues), "score": score, "summary": summary})


def host(side: Side, architecture: Any) -> Any:
    ja = side.ja
    return ja.Agent(
        "host", model=ja.ScriptedModel([ja.ScriptedTurn(text="never reached")]), architecture=architecture
    )


def actor_critic(side: Side, drafts: list[str], reviews: list[str], **options: Any) -> Any:
    return host(
        side, side.ja.ActorCritic(actor=scripted(side, drafts), critic=scripted(side, reviews), **options)
    )


# -- ActorCritic ---------------------------------------------------------------------------


def approved_first_review(side: Side) -> tuple[Any, str]:
    return actor_critic(
        side, ["round 0 output"], [review(0.95, summary="looks good")], max_rounds=3
    ), "a task"


def refined_then_approved(side: Side) -> tuple[Any, str]:
    reviews = [review(0.4, "too short", summary="needs work"), review(0.95, summary="good")]
    return actor_critic(side, ["draft v0", "polished v1"], reviews, max_rounds=3), "write a thing"


def never_approved(side: Side) -> tuple[Any, str]:
    reviews = [review(0.3, "i1"), review(0.4, "i2")]
    return actor_critic(side, ["v0", "v1", "v2"], reviews, max_rounds=2), "task"


def flat_reviews_reach_max_rounds(side: Side) -> tuple[Any, str]:
    return actor_critic(side, ["v0", "v1"], [review(0.3, "i"), review(0.3, "i")], max_rounds=2), "t"


def out_of_range_score_clamps_and_approves(side: Side) -> tuple[Any, str]:
    return actor_critic(side, ["v0"], ['{"issues": [], "score": 1.5, "summary": ""}']), "t"


def fenced_review(side: Side) -> tuple[Any, str]:
    fenced = '```json\n{"issues": ["a"], "score": 0.4, "summary": "x"}\n```'
    return actor_critic(side, ["v0", "v1"], [fenced, review(0.9)], max_rounds=2), "t"


def prose_review_is_the_critique(side: Side) -> tuple[Any, str]:
    ja = side.ja
    actor = ja.Agent("actor", model=side.recording(["v0", "v1"]))
    critic = scripted(side, ["The loop is off by one and the name is unclear. score: 0.42", review(0.95)])
    return host(side, ja.ActorCritic(actor=actor, critic=critic, max_rounds=2)), "write a loop"


def templates_as_jeevesagent_renders_them(side: Side) -> tuple[Any, str]:
    ja = side.ja
    actor = ja.Agent("actor", model=side.recording(["v0", "v1"]))
    critic = ja.Agent(
        "You are strict.", model=side.recording([review(0.2, "returns None", summary="Wrong."), review(1.0)])
    )
    return host(side, ja.ActorCritic(actor=actor, critic=critic)), "Write add(a, b)."


def custom_templates_no_issues(side: Side) -> tuple[Any, str]:
    ja = side.ja
    actor = ja.Agent("actor", model=side.recording(["v1", "v2"]))
    critic = ja.Agent("critic", model=side.recording([review(0.1, summary="Not there yet."), review(0.95)]))
    arch = ja.ActorCritic(
        actor=actor,
        critic=critic,
        max_rounds=2,
        critique_template="Task: {prompt}\nAnswer: {output}\nReply in JSON.",
        refine_template="Task: {prompt}\nWas: {output}\nVerdict: {critique}\nFix:\n{issues_bulleted}",
    )
    return host(side, arch), "Write add(a, b)."


def snooping(side: Side, role: str, replies: list[str]) -> Any:
    """An Agent subclass overriding `run` to note the session id of each run (jeevesagent's test idiom)."""
    ja = side.ja

    class Snoop(ja.Agent):  # type: ignore[misc,name-defined]
        async def run(self, prompt: str, **kwargs: Any) -> Any:
            side.seen.append({"run": role, "session_id": kwargs.get("session_id")})
            return await super().run(prompt, **kwargs)

    return Snoop(role, model=ja.ScriptedModel([ja.ScriptedTurn(text=r) for r in replies]))


def child_runs_through_the_agents_run(side: Side) -> tuple[Any, str]:
    actor = snooping(side, "actor", ["v0", "v1"])
    critic = snooping(side, "critic", [review(0.4, "i"), review(0.95)])
    return host(side, side.ja.ActorCritic(actor=actor, critic=critic, max_rounds=3)), "t"


def actor_out_of_turns(side: Side) -> tuple[Any, str]:
    ja = side.ja
    actor = ja.Agent("actor", model=ja.ScriptedModel([ja.ScriptedTurn(text="never")]), max_turns=0)
    return host(side, ja.ActorCritic(actor=actor, critic=scripted(side, ["never"]))), "anything"


def critic_out_of_turns(side: Side) -> tuple[Any, str]:
    ja = side.ja
    critic = ja.Agent("critic", model=ja.ScriptedModel([ja.ScriptedTurn(text="never")]), max_turns=0)
    return host(side, ja.ActorCritic(actor=scripted(side, ["v0"]), critic=critic)), "anything"


def worse_revision(side: Side) -> tuple[Any, str]:
    reviews = [review(0.6, "a"), review(0.3, "b"), review(0.2, "c")]
    return actor_critic(side, ["v0", "v1", "v2"], reviews, max_rounds=3), "t"


def unreadable_review_at_threshold_zero(side: Side) -> tuple[Any, str]:
    return actor_critic(side, ["v0"], ["Looks fine to me!"], max_rounds=1, approval_threshold=0.0), "t"


def empty_review(side: Side) -> tuple[Any, str]:
    return actor_critic(side, ["v0"], ["", review(0.95)], max_rounds=1), "t"


# -- SelfRefine ----------------------------------------------------------------------------


def self_refine(side: Side, base: Any, replies: list[str], **options: Any) -> Any:
    ja = side.ja
    model = ja.ScriptedModel([ja.ScriptedTurn(text=r) for r in replies])
    return ja.Agent("test", model=model, architecture=ja.SelfRefine(base=base, **options))


def converges_on_stop_phrase(side: Side) -> tuple[Any, str]:
    return self_refine(side, side.prebaked("initial good output"), ["no issues"], max_rounds=3), "any prompt"


def one_cycle_then_converges(side: Side) -> tuple[Any, str]:
    replies = ["missing examples; wording unclear", "polished revision", "no issues"]
    return self_refine(side, side.prebaked("rough draft"), replies, max_rounds=3), "write a thing"


def refines_to_max_rounds(side: Side) -> tuple[Any, str]:
    return self_refine(side, side.prebaked("v0"), ["issues 1", "v1", "issues 2", "v2"], max_rounds=2), "task"


def named_self_refine_with_react(side: Side) -> tuple[Any, str]:
    ja = side.ja
    model = ja.ScriptedModel([ja.ScriptedTurn(text="Hello world"), ja.ScriptedTurn(text="no issues")])
    return ja.Agent("test", model=model, architecture="self-refine"), "hi"


def budget_blocks_first_round(side: Side) -> tuple[Any, str]:
    ja = side.ja
    model = ja.ScriptedModel([ja.ScriptedTurn(text="never reached")])
    arch = ja.SelfRefine(base=side.prebaked("initial"), max_rounds=3)
    return ja.Agent("test", model=model, architecture=arch, budget=side.blocking_budget()), "anything"


def react_base_keeps_its_max_turns(side: Side) -> tuple[Any, str]:
    ja = side.ja
    model = side.recording(["Initial", "no issues"])
    return ja.Agent(
        "test", model=model, architecture=ja.SelfRefine(base=ja.ReAct(max_turns=1), max_rounds=3)
    ), "go"


# -- Supervisor ----------------------------------------------------------------------------


def worker(side: Side, reply: str, instructions: str = "I am a specialist worker.") -> Any:
    return scripted(side, [reply], instructions)


def delegate(side: Side, call_id: str, worker_name: str, instructions: str, tool: str = "delegate") -> Any:
    return side.ja.ToolCall(id=call_id, tool=tool, args={"worker": worker_name, "instructions": instructions})


def manager(
    side: Side, turns: list[Any], workers: dict[str, Any], *, record: bool = False, **options: Any
) -> Any:
    ja = side.ja
    model = side.recording(turns) if record else ja.ScriptedModel(turns)
    return ja.Agent("manager", model=model, architecture=ja.Supervisor(workers=workers, **options))


def single_delegation(side: Side) -> tuple[Any, str]:
    ja = side.ja
    turns = [
        ja.ScriptedTurn(tool_calls=[delegate(side, "c1", "coder", "write a hello function")]),
        ja.ScriptedTurn(text="Here is the function: def hello(): return 'hi'"),
    ]
    return manager(
        side, turns, {"coder": worker(side, "def hello(): return 'hi'", "Python coder.")}
    ), "write some code"


def parallel_delegations(side: Side) -> tuple[Any, str]:
    ja = side.ja
    calls = [
        delegate(side, "c1", "researcher", "find a citation"),
        delegate(side, "c2", "coder", "write a function"),
    ]
    turns = [ja.ScriptedTurn(tool_calls=calls), ja.ScriptedTurn(text="Combined: X and Y")]
    workers = {"researcher": worker(side, "found citation X"), "coder": worker(side, "wrote function Y")}
    return manager(side, turns, workers, record=True), "research and code"


def unknown_worker(side: Side) -> tuple[Any, str]:
    ja = side.ja
    turns = [
        ja.ScriptedTurn(tool_calls=[delegate(side, "c1", "ghost", "do something")]),
        ja.ScriptedTurn(text="oh, never mind"),
    ]
    return manager(side, turns, {"real": worker(side, "ok")}), "anything"


def instructions_and_tools_the_coordinator_sees(side: Side) -> tuple[Any, str]:
    ja = side.ja
    workers = {
        "coder": worker(side, "c", "Python expert who writes idiomatic code."),
        "writer": worker(side, "w", "Markdown writer."),
    }
    model = side.recording(["ok"])
    return ja.Agent(
        "You are the manager of a small team.", model=model, architecture=ja.Supervisor(workers=workers)
    ), "anything"


def same_worker_twice(side: Side) -> tuple[Any, str]:
    ja = side.ja
    calls = [delegate(side, "c1", "snoop", "task one"), delegate(side, "c2", "snoop", "task two")]
    turns = [ja.ScriptedTurn(tool_calls=calls), ja.ScriptedTurn(text="done")]
    snoop = scripted(side, ["ok1", "ok2"], "snooper")
    return manager(side, turns, {"snoop": snoop}), "two tasks"


def own_tools_kept(side: Side) -> tuple[Any, str]:
    ja = side.ja

    @ja.tool
    async def my_calc(a: int, b: int) -> int:
        """Add two ints."""
        return a + b

    turns = [
        ja.ScriptedTurn(tool_calls=[ja.ToolCall(id="c1", tool="my_calc", args={"a": 2, "b": 3})]),
        ja.ScriptedTurn(tool_calls=[delegate(side, "c2", "coder", "write something")]),
        ja.ScriptedTurn(text="final"),
    ]
    model = ja.ScriptedModel(turns)
    arch = ja.Supervisor(workers={"coder": worker(side, "written")})
    return ja.Agent("manager", model=model, tools=[my_calc], architecture=arch), "multi-step"


def direct_answer(side: Side) -> tuple[Any, str]:
    turns = [side.ja.ScriptedTurn(text="just a direct answer, no delegation")]
    return manager(side, turns, {"coder": worker(side, "code")}), "hello"


def renamed_delegate_tool(side: Side) -> tuple[Any, str]:
    ja = side.ja
    turns = [
        ja.ScriptedTurn(tool_calls=[delegate(side, "c1", "coder", "code it", tool="hand_off")]),
        ja.ScriptedTurn(text="all set"),
    ]
    return manager(side, turns, {"coder": worker(side, "done")}, delegate_tool_name="hand_off"), "go"


def forward_message_verbatim(side: Side) -> tuple[Any, str]:
    ja = side.ja
    turns = [
        ja.ScriptedTurn(tool_calls=[delegate(side, "c1", "coder", "do the thing")]),
        ja.ScriptedTurn(tool_calls=[ja.ToolCall(id="c2", tool="forward_message", args={"worker": "coder"})]),
        ja.ScriptedTurn(text="[done]"),
    ]
    return manager(
        side, turns, {"coder": worker(side, "The exact polished answer the user wants.")}
    ), "write some code"


def forward_before_delegating(side: Side) -> tuple[Any, str]:
    ja = side.ja
    turns = [
        ja.ScriptedTurn(tool_calls=[ja.ToolCall(id="c1", tool="forward_message", args={"worker": "coder"})]),
        ja.ScriptedTurn(text="fallback supervisor response"),
    ]
    return manager(side, turns, {"coder": worker(side, "hello")}), "forward without delegating"


WORKER_IDS = {"model_sessions": "D-worker-ids", "turns": "D-turns-tree"}

CASES = [
    Case(
        "approved_first_review",
        approved_first_review,
        CRITIC_IDS,
        "ac: approves_round_1_no_refine_call, full event sequence",
    ),
    Case(
        "refined_then_approved",
        refined_then_approved,
        CRITIC_IDS,
        "ac: refines_on_low_score_then_approves, emits_full_event_sequence, deterministic session ids",
    ),
    Case("never_approved", never_approved, CRITIC_IDS, "ac: returns_latest_output_at_max_rounds"),
    Case(
        "flat_reviews_reach_max_rounds",
        flat_reviews_reach_max_rounds,
        CRITIC_IDS,
        "ac: emits_max_rounds_reached_event",
    ),
    Case(
        "out_of_range_score_clamps_and_approves",
        out_of_range_score_clamps_and_approves,
        CRITIC_IDS,
        "ac: parse_critique_clamps_oob_score_in_json",
    ),
    Case("fenced_review", fenced_review, CRITIC_IDS, "ac: parse_critique_json_in_markdown_fences"),
    Case(
        "prose_review_is_the_critique",
        prose_review_is_the_critique,
        CRITIC_IDS,
        "ac: parse_critique_regex_fallback_for_loose_text",
    ),
    Case(
        "templates_as_jeevesagent_renders_them",
        templates_as_jeevesagent_renders_them,
        CRITIC_IDS,
        "ac: default templates",
    ),
    Case(
        "custom_templates_no_issues",
        custom_templates_no_issues,
        CRITIC_IDS,
        "ac: critique_template / refine_template",
    ),
    Case(
        "child_runs_through_the_agents_run",
        child_runs_through_the_agents_run,
        {**CRITIC_IDS, "requests": "D-child-run-hook"},
        "ac: uses_deterministic_session_ids (its snooping Agent subclass); sup: worker_session_ids_unique_per_call",
    ),
    Case("actor_out_of_turns", actor_out_of_turns, {}, "ac: propagates_actor_interruption"),
    Case("critic_out_of_turns", critic_out_of_turns, {}, "ac: propagates_critic_interruption"),
    Case(
        "worse_revision",
        worse_revision,
        {**CRITIC_IDS, "output": "D-best-candidate"},
        "ac: returns the latest output",
    ),
    Case(
        "unreadable_review_at_threshold_zero",
        unreadable_review_at_threshold_zero,
        {**CRITIC_IDS, "events": "D-fallback-never-approves"},
        "ac: parse_critique_no_score_returns_zero",
    ),
    Case(
        "empty_review",
        empty_review,
        {**CRITIC_IDS, "turns": "D-empty-critique", "events": "D-empty-critique"},
        "ac: parse_critique_empty_text_returns_default",
    ),
    Case(
        "converges_on_stop_phrase",
        converges_on_stop_phrase,
        {"turns": "D-custom-base-turns"},
        "sr: converges_on_stop_phrase",
    ),
    Case(
        "one_cycle_then_converges",
        one_cycle_then_converges,
        {"turns": "D-custom-base-turns"},
        "sr: one_full_cycle_then_converge, emits_progress_events",
    ),
    Case(
        "refines_to_max_rounds",
        refines_to_max_rounds,
        {"turns": "D-custom-base-turns"},
        "sr: respects_max_rounds",
    ),
    Case(
        "named_self_refine_with_react",
        named_self_refine_with_react,
        {},
        "sr: via_string_arg_with_react_base, resolver",
    ),
    Case(
        "budget_blocks_first_round",
        budget_blocks_first_round,
        {"turns": "D-custom-base-turns", "events": "D-budget-event"},
        "sr: budget_blocks_before_round_starts",
    ),
    Case(
        "react_base_keeps_its_max_turns",
        react_base_keeps_its_max_turns,
        {},
        "sr: passes_through_base_max_turns_override",
    ),
    Case("single_delegation", single_delegation, WORKER_IDS, "sup: single_delegation_returns_worker_output"),
    Case(
        "parallel_delegations", parallel_delegations, WORKER_IDS, "sup: parallel_delegations_both_workers_run"
    ),
    Case("unknown_worker", unknown_worker, {}, "sup: unknown_worker_returns_error_string"),
    Case(
        "instructions_and_tools_the_coordinator_sees",
        instructions_and_tools_the_coordinator_sees,
        {},
        "sup: composes_user_instructions_with_template, delegate/forward tool schemas",
    ),
    Case("same_worker_twice", same_worker_twice, WORKER_IDS, "sup: worker_session_ids_unique_per_call"),
    Case("own_tools_kept", own_tools_kept, WORKER_IDS, "sup: does_not_hide_pre_existing_tools"),
    Case("direct_answer", direct_answer, {}, "sup: emits_workers_ready_and_completed_events"),
    Case("renamed_delegate_tool", renamed_delegate_tool, WORKER_IDS, "sup: accepts_custom_delegate_name"),
    Case(
        "forward_message_verbatim",
        forward_message_verbatim,
        WORKER_IDS,
        "sup: forward_message_returns_worker_output_verbatim",
    ),
    Case(
        "forward_before_delegating",
        forward_before_delegating,
        {},
        "sup: forward_message_unknown_worker_returns_error",
    ),
]
