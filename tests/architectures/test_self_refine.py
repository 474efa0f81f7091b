from __future__ import annotations

import json

import pytest

import jeeves
from jeeves import ActorCritic, Agent, FunctionModel, Router, ScriptedModel, SelfRefine
from jeeves.architectures import SelfRefineOutput
from jeeves.errors import CriticError, ProviderError, UserError
from jeeves.messages import ModelRequest
from tests.memory_journal import DictJournal

pytestmark = pytest.mark.anyio

WRITER = Agent("You write haiku.", role="writer")


def feedback(score: float, *issues: str) -> str:
    return json.dumps({"score": score, "issues": list(issues), "summary": ""})


class PerRole:
    """A model that answers drafts and feedback from two scripts and remembers who asked."""

    def __init__(self, name: str, drafts: list[str], verdicts: list[str]) -> None:
        self.scripted = ScriptedModel({"draft": drafts, "feedback": verdicts}, model_name=name)
        self.model_name = name

    @property
    def requests(self) -> list[ModelRequest]:
        return self.scripted.requests

    async def complete(self, request: ModelRequest, *, on_delta: object = None) -> jeeves.ModelResponse:
        return await self.scripted.complete(request)


async def test_draft_feedback_refine_with_the_full_history() -> None:
    model = ScriptedModel(
        {
            "draft": ["attempt zero", "attempt one", "attempt two"],
            "feedback": [feedback(0.3, "too long"), feedback(0.5, "no season word"), feedback(0.9)],
        }
    )
    async with jeeves.stream(
        SelfRefine(WRITER, no_improvement=None), "A haiku on rain.", model=model, session_id="s"
    ) as events:
        seen = [e async for e in events]
        result = await events.result()
    model.assert_consumed()
    assert isinstance(result.detail, SelfRefineOutput)
    assert (result.stop_reason, result.output, result.detail.best_round) == ("approved", "attempt two", 2)
    started = [e.session_id for e in seen if e.type == "session.started"]
    assert started == [
        "s",
        "s__draft_0",
        "s__feedback_0",
        "s__draft_1",
        "s__feedback_1",
        "s__draft_2",
        "s__feedback_2",
    ]
    third_prompt = [r for r in model.requests if r.role_path[-1] == "draft"][2].messages[-1].content or ""
    for text in ("A haiku on rain.", "attempt zero", "- too long", "attempt one", "- no season word"):
        assert text in third_prompt
    assert third_prompt.index("attempt zero") < third_prompt.index("attempt one")
    feedback_system = [r for r in model.requests if r.role_path[-1] == "feedback"][0].messages[
        0
    ].content or ""
    assert feedback_system.startswith("You wrote the answer below.") and '"score"' in feedback_system


async def test_drafts_and_feedback_share_the_selfrefine_route() -> None:
    same = PerRole("writer-model", ["a", "b"], [feedback(0.4, "x"), feedback(0.9)])
    other = FunctionModel(lambda r: "never", model_name="other-model")
    router = Router({"writer": same, "draft": other, "feedback": other, "default": other})
    async with jeeves.stream(SelfRefine(WRITER), "t", router=router, session_id="s") as events:
        models = {e.session_id: e.model async for e in events if e.type == "session.started"}
    children = ["s__draft_0", "s__feedback_0", "s__draft_1", "s__feedback_1"]
    assert models == {"s": None} | dict.fromkeys(children, "writer-model")
    assert len(same.requests) == 4 and other.requests == []
    assert [r.role_path for r in same.requests] == [("writer", "draft"), ("writer", "feedback")] * 2


async def test_nested_selfrefine_routes_by_the_role_its_parent_gives_it() -> None:
    actor_model = PerRole("actor-model", ["draft"], [feedback(1.0)])
    critic_model = FunctionModel(lambda r: feedback(1.0), model_name="critic-model")
    router = Router({"actor": actor_model, "critic": critic_model})
    result = await jeeves.run(ActorCritic(SelfRefine(WRITER), jeeves.LLMCritic()), "t", router=router)
    assert result.stop_reason == "approved"
    assert [r.role_path for r in actor_model.requests] == [
        ("actor_critic", "actor", "draft"),
        ("actor_critic", "actor", "feedback"),
    ]
    assert len(critic_model.requests) == 1
    assert set(result.usage_by_role) == {"draft", "feedback", "critic"}


async def test_a_pinned_agent_model_gives_the_feedback_too() -> None:
    pinned = PerRole("pinned", ["a"], [feedback(1.0)])
    agent = Agent("You write.", role="writer", model=pinned)
    result = await jeeves.run(
        SelfRefine(agent), "t", router=Router({"default": FunctionModel(lambda r: "no")})
    )
    assert result.stop_reason == "approved" and len(pinned.requests) == 2


async def test_stops_on_no_improvement_and_returns_the_best() -> None:
    model = ScriptedModel({"draft": ["good", "worse"], "feedback": [feedback(0.6, "x"), feedback(0.4, "y")]})
    result = await jeeves.run(SelfRefine(WRITER), "t", model=model)
    model.assert_consumed()
    assert (result.stop_reason, result.output) == ("no_improvement", "good")


async def test_stops_at_max_rounds() -> None:
    model = ScriptedModel({"draft": ["a", "b"], "feedback": [feedback(0.1), feedback(0.2)]})
    result = await jeeves.run(SelfRefine(WRITER, max_rounds=1), "t", model=model)
    assert (result.stop_reason, result.output) == ("max_rounds", "b")


async def test_feedback_failure_keeps_the_draft_or_raises() -> None:
    def script() -> ScriptedModel:
        return ScriptedModel({"draft": ["only"], "feedback": [ProviderError("down", status_code=400)]})

    result = await jeeves.run(SelfRefine(WRITER), "t", model=script())
    assert (result.stop_reason, result.output) == ("critic_failed", "only")
    with pytest.raises(CriticError):
        await jeeves.run(SelfRefine(WRITER, on_critic_error="raise"), "t", model=script())


async def test_a_draft_failing_in_a_refinement_keeps_the_best_attempt() -> None:
    model = ScriptedModel(
        {"draft": ["first", ProviderError("down", status_code=400)], "feedback": [feedback(0.4, "x")]}
    )
    result = await jeeves.run(SelfRefine(WRITER, max_rounds=2, on_actor_error="keep_draft"), "t", model=model)
    model.assert_consumed()
    assert isinstance(result.detail, SelfRefineOutput)
    assert (result.stop_reason, result.output, result.detail.actor_error) == (
        "actor_failed",
        "first",
        "ProviderError: down",
    )


async def test_replay_needs_no_router() -> None:
    model = ScriptedModel({"draft": ["a", "b"], "feedback": ["Score: 4/10\n- shorter", feedback(0.9)]})
    journal = DictJournal()
    recorded = await jeeves.run(SelfRefine(WRITER), "t", model=model, journal=journal, session_id="r")
    replayed = await jeeves.run(SelfRefine(WRITER), "t", journal=journal, mode="replay", session_id="r")
    assert replayed.detail == recorded.detail and replayed.output == "b"


def test_configuration() -> None:
    assert SelfRefine(WRITER).role == "writer"
    assert SelfRefine(Agent("x")).role == "agent"
    assert SelfRefine(WRITER, role="poet").role == "poet"
    with pytest.raises(UserError, match="not an architecture"):
        SelfRefine("writer")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"\{attempts\}"):
        SelfRefine(WRITER, refine_template="{attempts}")
    with pytest.raises(UserError, match="threshold"):
        SelfRefine(WRITER, threshold=-0.1)


async def test_self_refine_takes_a_stop_condition() -> None:
    from jeeves import SelfRefine
    from jeeves.stop import MaxRounds, ScoreAtLeast

    arch = SelfRefine(Agent("You write."), stop=MaxRounds(4) | ScoreAtLeast(0.6))
    assert arch.settings.custom_stop
    with pytest.raises(jeeves.UserError, match="Pass either stop="):
        SelfRefine(Agent("You write."), stop=MaxRounds(2), no_improvement=None)
