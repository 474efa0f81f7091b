"""The grounded audit critic: the model's critique, corrected by the citation engine."""

from __future__ import annotations

import json

import pytest

import jeeves
from jeeves import ActorCritic, Agent, ScriptedModel
from jeeves.critics import GroundedAuditCritic
from jeeves.critics.grounded import GroundedCritique, Grounding, fuse, ground

EVIDENCE = {"a": "Paris is the capital of France.", "b": "The Seine flows through Paris."}


def audit(confidence: float, **kw: object) -> GroundedCritique:
    return GroundedCritique(confidence=confidence, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("confidence", "grounding", "expected", "hallucination"),
    [
        (0.8, Grounding(), 0.8, False),
        (0.8, Grounding(invalid=(("Lyon is the capital [z].", ("z",)),), cites_any=True), 0.4, True),
        (0.8, Grounding(uncited=("It is big.",), cites_any=True), 0.72, False),
        (
            0.8,
            Grounding(uncited=("It is big.",), cites_any=False),
            0.8,
            False,
        ),  # no citations at all: left to the model
        (
            0.8,
            Grounding(invalid=(("x y z [q].", ("q",)),), uncited=("It is big.",), cites_any=True),
            0.36,
            True,
        ),
        (85, Grounding(), 0.85, False),  # above 1: a percentage
        (150, Grounding(), 1.0, False),  # then clamped
        (-3, Grounding(), 0.0, False),
    ],
)
def test_the_fusion_arithmetic(
    confidence: float, grounding: Grounding, expected: float, hallucination: bool
) -> None:
    fused = fuse(audit(confidence), grounding)
    assert fused.confidence == pytest.approx(expected)
    assert fused.hallucination_detected is hallucination
    assert fused.needs_retry is hallucination


def test_the_citation_engine_finds_invalid_and_uncited_claims_and_exempts_hedges() -> None:
    answer = (
        "Paris is the capital of France [a]. Lyon is the capital of cheese [z]. "
        "The river is very long indeed. There is not enough information about its length."
    )
    g = ground(answer, list(EVIDENCE))
    assert g.invalid == (("Lyon is the capital of cheese [z].", ("z",)),)
    assert g.uncited == ("The river is very long indeed.",)
    assert g.cites_any


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_in_an_actor_critic_an_invalid_citation_forces_a_retry_whatever_the_model_said() -> None:
    critic = GroundedAuditCritic(EVIDENCE)
    model = ScriptedModel(
        {
            "actor": [
                "Paris is the capital of France [a]. It sits on the Loire [c].",
                "Paris is the capital of France [a].",
            ],
            "critic": [json.dumps({"confidence": 95}), json.dumps({"confidence": 0.9})],
        }
    )
    async with jeeves.stream(ActorCritic(Agent("x"), critic), "Capital of France?", model=model) as events:
        critiques = [e async for e in events if e.type == "critique"]
        result = await events.result()
    first, second = critiques
    assert (first.score, first.hard_fail, first.passed) == (pytest.approx(0.475), True, False)
    assert [(f.rule_id, f.severity) for f in first.findings] == [("invalid_citation", "error")]
    assert (second.score, second.passed) == (0.9, True)
    assert result.output == "Paris is the capital of France [a]."


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_unreadable_audit_is_a_flagged_fallback() -> None:
    model = ScriptedModel({"actor": ["Paris [a]."], "critic": ["Looks fine!"]})
    result = await jeeves.run(
        ActorCritic(Agent("x"), GroundedAuditCritic(EVIDENCE), max_rounds=0), "t", model=model
    )
    assert result.detail.verdict.obtained == "fallback"  # type: ignore[union-attr]
    assert result.stop_reason == "max_rounds"


def test_bad_evidence_is_a_user_error() -> None:
    with pytest.raises(jeeves.UserError, match="evidence must be a dict"):
        GroundedAuditCritic("a")  # type: ignore[arg-type]
