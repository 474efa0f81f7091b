"""jeevesagent's ActorCritic through jeeves.compat: its constructor, defaults and templates."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import jeeves
from jeeves import ActorCritic as JeevesActorCritic
from jeeves import Agent, FunctionModel, ScriptedModel, Verdict
from jeeves.architectures import ActorCriticOutput
from jeeves.compat.jeevesagent import (
    DEFAULT_CRITIQUE_TEMPLATE,
    DEFAULT_REFINE_TEMPLATE,
    ActorCritic,
    CriticOutput,
)
from jeeves.errors import UserError
from jeeves.events import Event
from jeeves.messages import ModelRequest
from jeeves.testing import call
from tests.conftest import REPO, subprocess_env
from tests.memory_journal import DictJournal

pytestmark = pytest.mark.anyio

TASK = "Write add(a, b)."
ACTOR = Agent("You write Python.")
CRITIC = Agent("You are a strict code reviewer.")


def echo(text: str) -> str:
    """Echo the text."""
    return text


def critique(score: float, *issues: str, summary: str = "") -> str:
    return json.dumps({"issues": list(issues), "score": score, "summary": summary})


async def run_stream(
    arch: JeevesActorCritic, model: object, **kw: object
) -> tuple[jeeves.RunResult, list[Event]]:
    async with jeeves.stream(arch, TASK, model=model, session_id="job", **kw) as events:  # type: ignore[arg-type]
        seen = [e async for e in events]
        result = await events.result()
    return result, seen


def shape(result: jeeves.RunResult, events: list[Event]) -> tuple[object, ...]:
    detail = result.detail
    assert isinstance(detail, ActorCriticOutput)
    rounds = [(r.round, r.text, r.score, r.passed) for r in detail.rounds]
    ids = [e.session_id for e in events if e.type == "session.started"]
    return result.stop_reason, result.output, detail.best_round, rounds, ids


def script(drafts: list[str], scores: list[float]) -> dict[str, list[str]]:
    return {"actor": drafts, "critic": [critique(s, f"issue {i}") for i, s in enumerate(scores)]}


def test_jeevesagents_defaults() -> None:
    arch = ActorCritic(actor=ACTOR, critic=CRITIC)
    assert arch.settings.threshold == 0.9
    assert arch.settings.max_rounds == 2  # three reviews: the draft and two revisions
    assert isinstance(arch, JeevesActorCritic)


@pytest.mark.parametrize(
    ("max_rounds", "scores", "stop"),
    [
        (3, [0.2, 0.5, 0.7], "max_rounds"),  # three reviews, two revisions, no approval
        (3, [0.2, 0.9], "approved"),  # 0.9 is at the threshold: approved, as in jeevesagent
        (1, [0.3], "max_rounds"),  # one review of the first draft, no revision
        (2, [0.89, 0.95], "approved"),
    ],
)
async def test_same_rounds_stop_and_ids_as_the_equivalent_jeeves_actor_critic(
    max_rounds: int, scores: list[float], stop: str
) -> None:
    drafts = [f"draft {i}" for i in range(len(scores))]
    compat = ActorCritic(actor=ACTOR, critic=CRITIC, max_rounds=max_rounds, approval_threshold=0.9)
    native = JeevesActorCritic(ACTOR, CRITIC, threshold=0.9, max_rounds=max_rounds - 1)

    compat_model = ScriptedModel(script(drafts, scores))
    native_model = ScriptedModel(script(drafts, scores))
    got = shape(*await run_stream(compat, compat_model))
    want = shape(*await run_stream(native, native_model))
    compat_model.assert_consumed()
    native_model.assert_consumed()

    assert got == want
    assert got[0] == stop
    assert len(got[3]) == len(scores)
    reviews = [i for i in got[4] if "__critic_" in i]
    assert reviews == [f"job__critic_{r}" for r in range(len(scores))]


def _recording(replies: dict[str, list[str]]) -> tuple[FunctionModel, dict[str, list[ModelRequest]]]:
    seen: dict[str, list[ModelRequest]] = {"actor": [], "critic": []}

    def answer(request: ModelRequest) -> str:
        system = request.messages[0].content or ""
        role = "critic" if system.startswith("You are a strict") else "actor"
        seen[role].append(request)
        return replies[role][len(seen[role]) - 1]

    return FunctionModel(answer), seen


async def test_default_templates_render_as_jeevesagent_renders_them() -> None:
    model, seen = _recording(
        {
            "actor": ["def add(a, b): pass", "def add(a, b): return a + b"],
            "critic": [critique(0.2, "returns None", "no docstring", summary="Wrong."), critique(1.0)],
        }
    )
    result, _ = await run_stream(ActorCritic(actor=ACTOR, critic=CRITIC), model)
    assert (result.stop_reason, result.output) == ("approved", "def add(a, b): return a + b")

    first_review = seen["critic"][0].messages
    assert [m.role for m in first_review] == ["system", "user"]
    assert first_review[0].content == CRITIC.instructions  # nothing appended to the critic's instructions
    assert first_review[1].content == DEFAULT_CRITIQUE_TEMPLATE.format(
        prompt=TASK, output="def add(a, b): pass"
    )

    revision = seen["actor"][1].messages[-1].content
    assert revision == DEFAULT_REFINE_TEMPLATE.format(
        prompt=TASK,
        output="def add(a, b): pass",
        critique="Wrong.",
        issues_bulleted="- returns None\n- no docstring",
    )
    assert "- returns None\n- no docstring" in (revision or "")


async def test_custom_templates_with_every_placeholder() -> None:
    critique_template = "Task: {prompt}\nAnswer: {output}\nReply in JSON."
    refine_template = "Task: {prompt}\nWas: {output}\nVerdict: {critique}\nFix:\n{issues_bulleted}"
    model, seen = _recording(
        {"actor": ["v1", "v2"], "critic": [critique(0.1, summary="Not there yet."), critique(0.95)]}
    )
    arch = ActorCritic(
        actor=ACTOR,
        critic=CRITIC,
        max_rounds=2,
        critique_template=critique_template,
        refine_template=refine_template,
    )
    result, _ = await run_stream(arch, model)
    assert result.stop_reason == "approved"
    assert seen["critic"][1].messages[1].content == "Task: Write add(a, b).\nAnswer: v2\nReply in JSON."
    # No issues listed: jeevesagent's own sentence, not jeeves' "(none)".
    assert seen["actor"][1].messages[-1].content == (
        "Task: Write add(a, b).\nWas: v1\nVerdict: Not there yet.\n"
        "Fix:\n(no specific issues listed; general improvement)"
    )


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"critique_template": "{prompt} {critique}"}, "{critique}"),
        ({"refine_template": "{task} {output}"}, "{task}"),
        ({"refine_template": "{prompt"}, "not a valid format string"),
        ({"critique_template": 42}, "must be a str"),
        ({"max_rounds": 0}, "max_rounds must be an int >= 1"),
        ({"max_rounds": "3"}, "'3'"),
        ({"approval_threshold": 1.5}, "approval_threshold must be a score in [0, 1], got 1.5"),
        ({"critic": Agent("x", tools=[echo])}, "tools"),
    ],
)
def test_bad_options_are_user_errors(kwargs: dict[str, object], needle: str) -> None:
    options: dict[str, object] = {"actor": ACTOR, "critic": CRITIC, **kwargs}
    with pytest.raises(UserError) as info:
        ActorCritic(**options)  # type: ignore[arg-type]
    assert needle in str(info.value)


async def test_an_unreadable_critique_scores_zero_as_in_jeevesagent_and_is_flagged() -> None:
    model = ScriptedModel({"actor": ["v1"], "critic": ["Looks fine to me!"]})
    result, events = await run_stream(ActorCritic(actor=ACTOR, critic=CRITIC, max_rounds=1), model)
    model.assert_consumed()  # read as jeevesagent reads it: no second ask
    assert result.stop_reason == "max_rounds"
    review = next(e for e in events if e.type == "critique")
    assert (review.score, review.issues, review.passed, review.obtained) == (
        0.0,
        ["Looks fine to me!"],
        False,
        "fallback",
    )


async def test_an_out_of_range_score_is_clamped_and_approves_the_first_draft() -> None:
    model = ScriptedModel({"actor": ["v0"], "critic": [critique(1.5)]})
    result, _ = await run_stream(ActorCritic(actor=ACTOR, critic=CRITIC), model)
    detail = result.detail
    assert isinstance(detail, ActorCriticOutput)
    assert (result.stop_reason, result.output, [r.score for r in detail.rounds]) == ("approved", "v0", [1.0])
    assert jeeves.critics.parse_verdict(critique(1.5)).score == 0.15  # jeeves' own parser is unchanged


async def test_a_prose_critique_keeps_its_score_and_becomes_the_issue_to_fix() -> None:
    prose = "The loop is off by one. score: 0.42"
    model, seen = _recording({"actor": ["v0", "v1"], "critic": [prose, critique(0.95)]})
    result, events = await run_stream(ActorCritic(actor=ACTOR, critic=CRITIC, max_rounds=2), model)
    assert (result.stop_reason, result.output) == ("approved", "v1")
    first = next(e for e in events if e.type == "critique")
    assert (first.score, first.issues) == (0.42, [prose])
    revision = seen["actor"][1].messages[-1].content or ""
    assert f"Critique:\n- {prose}" in revision
    assert "(no specific issues listed" not in revision


@pytest.mark.parametrize(("who", "reason"), [("actor", "actor:round_0:"), ("critic", "critic:round_1:")])
async def test_an_agent_out_of_turns_is_an_interrupted_result_not_an_error(who: str, reason: str) -> None:
    from jeeves.compat.jeevesagent import Agent as JaAgent
    from jeeves.compat.jeevesagent import ScriptedModel as JaModel
    from jeeves.compat.jeevesagent import ScriptedTurn

    def agent(turns: int, *replies: str) -> JaAgent:
        return JaAgent(who, model=JaModel([ScriptedTurn(text=r) for r in replies]), max_turns=turns)

    actor = agent(0, "never") if who == "actor" else agent(1, "v0")
    critic = agent(0, "never") if who == "critic" else agent(1, critique(1.0))
    arch = ActorCritic(actor=actor, critic=critic)
    result = await jeeves.run(arch, TASK, session_id="job")
    detail = result.detail
    assert result.stop_reason == "interrupted"
    assert getattr(detail, "interrupted", False) is True
    assert getattr(detail, "interruption_reason", None) == reason + "max_turns_exceeded"
    assert result.text == ("v0" if who == "critic" else "")


def test_the_critic_agents_max_turns_is_kept() -> None:
    from jeeves.compat.jeevesagent import Agent as JaAgent
    from jeeves.compat.jeevesagent._critique import JeevesagentCritic

    arch = ActorCritic(actor=ACTOR, critic=JaAgent("review", max_turns=0))
    assert isinstance(arch.critic, JeevesagentCritic)
    assert arch.critic.max_turns == 0
    assert ActorCritic(actor=ACTOR, critic=Agent("r", max_turns=4)).critic.max_turns == 4  # type: ignore[attr-defined]


def test_critic_output_reads_as_a_verdict() -> None:
    out = CriticOutput(issues=["off by one"], score=0.4, summary="close")
    assert isinstance(out, Verdict)
    assert (out.score, out.issues, out.summary) == (0.4, ["off by one"], "close")
    assert CriticOutput().score == 0.0
    assert Verdict.model_validate(out.model_dump()).score == 0.4
    assert not out.approves(0.9)


async def test_a_function_critic_may_return_critic_output() -> None:
    def reviewer(task: str, output: str) -> CriticOutput:
        return CriticOutput(
            score=1.0 if "return" in output else 0.0, issues=[] if "return" in output else ["x"]
        )

    arch = ActorCritic(actor=ACTOR, critic=reviewer, max_rounds=2)
    result, _ = await run_stream(arch, ScriptedModel({"actor": ["pass", "return 1"]}))
    assert (result.stop_reason, result.output) == ("approved", "return 1")


async def test_replay_of_a_compat_run_is_exact() -> None:
    arch = ActorCritic(actor=Agent("You write Python.", tools=[echo]), critic=CRITIC, max_rounds=2)
    script = {
        "actor": [jeeves.testing.Reply(tool_calls=[call("echo", {"text": "hi"})]), "v1", "v2"],
        "critic": [critique(0.3, "too short"), critique(0.9)],
    }
    journal = DictJournal()
    recorded, live = await run_stream(arch, ScriptedModel(script), journal=journal)
    replayed, again = await run_stream(arch, ScriptedModel([]), journal=journal, mode="replay")

    def per_session(events: list[Event]) -> list[dict[str, object]]:
        return [e.model_dump(exclude={"seq", "ts", "replayed"}) for e in events]

    assert per_session(again) == per_session(live)
    assert replayed.detail == recorded.detail
    assert replayed.output == "v2"


def test_import_jeeves_does_not_import_the_compat_layer() -> None:
    code = "import sys, jeeves; assert not [m for m in sys.modules if m.startswith('jeeves.compat')]; print('ok')"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=subprocess_env()
    )
    assert out.returncode == 0, out.stderr


def test_options_the_layer_does_not_run_are_user_errors() -> None:
    from jeeves.compat.jeevesagent import Agent as JaAgent

    class Blocking:
        async def allows_step(self) -> object:
            return None

    with pytest.raises(UserError, match="'memory'"):
        JaAgent("x", memory="sqlite")
    with pytest.raises(UserError, match="SelfRefine rounds only"):
        JaAgent("x", budget=Blocking())
    with pytest.raises(UserError, match="'reflexion'"):
        JaAgent("x", architecture="reflexion")
    assert JaAgent("x", budget=Blocking(), architecture="self-refine").budget is not None
