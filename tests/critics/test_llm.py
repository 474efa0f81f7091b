from __future__ import annotations

import pytest

import jeeves
from jeeves.critics import REVIEW_INSTRUCTIONS, LLMCritic
from jeeves.errors import UserError
from jeeves.models.testing import FunctionModel, ScriptedModel
from tests.critics.helpers import review

pytestmark = pytest.mark.anyio


async def test_asks_with_the_verdict_schema_and_reads_a_schema_reply() -> None:
    model = ScriptedModel(['{"score": 0.7, "issues": ["handle b=0"], "summary": "close"}'])
    verdict = await review(LLMCritic(), "def div(a, b): return a / b", model=model)
    assert (verdict.score, verdict.issues, verdict.obtained, verdict.source) == (
        0.7,
        ["handle b=0"],
        "schema",
        "llm",
    )
    request = model.requests[0]
    assert request.output_schema is not None and request.output_schema["required"] == [
        "score",
        "issues",
        "summary",
    ]
    assert request.output_name == "Verdict"
    assert request.messages[0].content == REVIEW_INSTRUCTIONS
    assert "def div(a, b)" in (request.messages[1].content or "")


async def test_a_sloppy_reply_is_repaired_without_another_call() -> None:
    model = ScriptedModel(['Sure! Here\'s my review.\n```json\n{"score": 8, "issues": "one\\ntwo"}\n```'])
    verdict = await review(LLMCritic(), "x", model=model)
    assert (verdict.score, verdict.issues, verdict.obtained) == (0.8, ["one", "two"], "repaired")
    model.assert_consumed()


async def test_an_unreadable_reply_gets_one_repair_turn() -> None:
    model = ScriptedModel(["It looks fine.", '{"score": 0.9, "issues": [], "summary": "ok"}'])
    async with jeeves.stream(_session(), "review", model=model) as events:
        types = [e.type async for e in events]
        verdict = (await events.result()).output
    assert (verdict.score, verdict.obtained) == (0.9, "repaired")
    assert "output.retrying" in types
    assert "could not be read" in (model.requests[1].messages[-1].content or "")


async def test_a_reply_with_two_different_scores_is_asked_again_not_read_as_either() -> None:
    ambiguous = "I'd give it a score of 0.4. Once the sign is fixed it would get a score of 0.95."
    model = ScriptedModel([ambiguous, '{"score": 0.4, "issues": ["fix the sign"], "summary": "s"}'])
    async with jeeves.stream(_session(), "review", model=model) as events:
        retrying = [e async for e in events if e.type == "output.retrying"]
        verdict = (await events.result()).output
    assert (verdict.score, verdict.obtained) == (0.4, "repaired")
    assert [e.error for e in retrying] == [
        "The critic's reply could not be read as a verdict: it mentions different scores ('0.4', '0.95') "
        "and has no `Score:` line to settle which is the verdict; it does not count as an approval."
    ]


async def test_two_unreadable_replies_fall_back_with_the_first_reply_as_the_issue() -> None:
    model = ScriptedModel(["It looks fine.", "Still fine!"])
    verdict = await review(LLMCritic(), "x", model=model)
    assert (verdict.score, verdict.issues, verdict.obtained) == (0.0, ["It looks fine."], "fallback")
    assert not verdict.approves(0.0)
    no_repair = await review(LLMCritic(repair=False), "x", model=ScriptedModel(["Nice."]))
    assert no_repair.obtained == "fallback"


async def test_a_pinned_model_and_params() -> None:
    pinned = FunctionModel(lambda r: '{"score": 1, "issues": [], "summary": ""}', model_name="judge")
    critic = LLMCritic("Judge.", name="judge", model=pinned, params={"temperature": 0})
    verdict = await review(critic, "x", model=ScriptedModel([]))
    assert verdict.source == "judge"
    assert pinned.requests[0].params == {"temperature": 0}


def test_bad_configuration() -> None:
    with pytest.raises(UserError, match="must not be empty"):
        LLMCritic("  ")
    with pytest.raises(UserError, match="'LLM'"):
        LLMCritic(name="LLM")


def _session() -> jeeves.Architecture:
    from jeeves.critics import CriticSession, Review

    return CriticSession(LLMCritic(), Review(task="t", output="x", round=0, prompt="t\n\nx"))
