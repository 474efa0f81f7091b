"""Seed 002 (the MASIS critic) as written: each of its fifteen numbers, one worked example each
(the numbering is docs/critics.md's table), and its hedges.

The seed's rules, from its code: invalid citations ×0.5 and hallucination + retry forced;
uncited claims ×0.9 only when the answer cites something; hedged sentences ("insufficient
evidence", "not provided", "cannot provide") are not claims; a confidence above 1 is divided
by 100, then clamped to [0, 1]; a missing confidence is 0.0; the structured critique has six
typed, required fields; and the telemetry example (0.612, 2 invalid, 3 uncited, 0 conflicts).
docs/critics.md lists them with these tests.
"""

from __future__ import annotations

import json

import pytest

import jeeves
from jeeves import ActorCritic, Agent, ScriptedModel
from jeeves.critics import GroundedAuditCritic, GroundedCritique, Grounding, fuse, ground
from jeeves.critics.citations import HEDGES
from jeeves.critics.grounded import INVALID_CITATION_FACTOR, UNCITED_FACTOR

EVIDENCE = ["chunk_1", "chunk_2"]
CITED = "Revenue grew in 2023 [chunk_1]."
INVENTED = "Revenue declined in 2024 [chunk_99]."
UNCITED = "The strategy is primarily defensive."


def fused(confidence: float, answer: str) -> GroundedCritique:
    return fuse(GroundedCritique(confidence=confidence), ground(answer, EVIDENCE))


def test_1_an_invalid_citation_halves_the_confidence_and_forces_hallucination_and_retry() -> None:
    assert INVALID_CITATION_FACTOR == 0.5
    out = fused(0.8, f"{CITED} {INVENTED}")
    assert (out.confidence, out.hallucination_detected, out.needs_retry) == (pytest.approx(0.4), True, True)


def test_2_uncited_claims_cost_ten_percent_when_the_answer_cites_something() -> None:
    assert UNCITED_FACTOR == 0.9
    assert fused(0.8, f"{CITED} {UNCITED}").confidence == pytest.approx(0.72)


def test_3_a_fully_cited_answer_keeps_the_models_confidence_the_factor_starts_at_one() -> None:
    assert fused(0.8, CITED).confidence == pytest.approx(0.8)


def test_4_an_answer_citing_nothing_skips_the_uncited_penalty() -> None:
    assert fused(0.8, f"{UNCITED} Margins were thin this year.").confidence == pytest.approx(0.8)


def test_5_both_penalties_multiply_to_0_45() -> None:
    assert fused(1.0, f"{CITED} {INVENTED} {UNCITED}").confidence == pytest.approx(0.45)


def test_6_a_confidence_of_exactly_1_is_not_divided() -> None:
    assert fused(1, CITED).confidence == 1.0


def test_7_a_confidence_above_1_is_divided_by_100_85_is_0_85() -> None:
    assert fused(85, CITED).confidence == pytest.approx(0.85)
    assert fused(85, f"{CITED} {INVENTED}").confidence == pytest.approx(0.425)  # normalised, then penalised


def test_8_then_clamped_to_1() -> None:
    assert fused(150, CITED).confidence == 1.0


def test_9_and_clamped_to_0() -> None:
    assert fused(-3, CITED).confidence == 0.0


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_10_a_missing_confidence_scores_0() -> None:
    model = ScriptedModel({"actor": [CITED], "critic": [json.dumps({"hallucination_detected": False})]})
    loop = ActorCritic(Agent("x"), GroundedAuditCritic(EVIDENCE), max_rounds=0)
    result = await jeeves.run(loop, "t", model=model)
    verdict = result.detail.verdict  # type: ignore[union-attr]
    assert (verdict.score, verdict.obtained) == (0.0, "fallback")  # 0.0, as the seed's .get default; flagged


def test_11_the_structured_critique_has_six_typed_required_fields() -> None:
    schema = GroundedCritique.model_json_schema()
    fields = [
        "confidence",
        "hallucination_detected",
        "unsupported_claims",
        "logical_gaps",
        "conflicting_evidence",
        "needs_retry",
    ]
    assert list(schema["properties"]) == fields
    assert schema["required"] == fields
    types = {name: schema["properties"][name].get("type") for name in fields}
    assert types == {
        "confidence": "number",
        "hallucination_detected": "boolean",
        "unsupported_claims": "array",
        "logical_gaps": "array",
        "conflicting_evidence": "array",
        "needs_retry": "boolean",
    }


@pytest.mark.parametrize("hedge", ["insufficient evidence", "not provided", "cannot provide"])
def test_the_seeds_three_hedges_are_not_claims_by_default(hedge: str) -> None:
    assert hedge in HEDGES
    sentence = (
        f"The 2024 figure is {hedge} here."
        if hedge != "cannot provide"
        else "I cannot provide the 2024 figure."
    )
    g = ground(f"{CITED} {sentence}", EVIDENCE)
    assert g.uncited == ()
    assert fuse(GroundedCritique(confidence=0.8), g).confidence == pytest.approx(0.8)  # no ×0.9


def telemetry_answer() -> str:
    """Two invented citations and three uncited claims, as in the seed's telemetry example."""
    return (
        f"{CITED} Costs rose by a third [chunk_7]. Profit fell sharply [chunk_8]. "
        "The strategy is primarily defensive. The board expects a rebound. Competitors are struggling badly."
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_12_to_15_the_telemetry_examples_counts_hold_and_its_0_612_cannot() -> None:
    model = ScriptedModel(
        {
            "actor": [telemetry_answer()],
            "critic": [json.dumps({"confidence": 0.68, "conflicting_evidence": []})],
        }
    )
    loop = ActorCritic(Agent("x"), GroundedAuditCritic(EVIDENCE), max_rounds=0)
    async with jeeves.stream(loop, "t", model=model) as events:
        (critique,) = [e async for e in events if e.type == "critique"]
    audit = critique.audit
    assert audit is not None
    # 13, 14, 15: invalid_citations 2, uncited_claims 3, conflicts 0, as in the seed's telemetry
    assert (audit.invalid_citations, audit.uncited_claims, audit.conflicts) == (2, 3, 0)
    assert (audit.hallucination_detected, audit.needs_retry) == (True, True)
    # 12: the seed's example reports confidence 0.612 beside 2 invalid citations. Its own rule
    # caps that at 0.45 (x0.5 x0.9 of at most 1.0); 0.612 is 0.68 x 0.9, the uncited penalty
    # alone. jeeves applies both, as the seed's code does: 0.68 x 0.5 x 0.9 = 0.306.
    assert audit.confidence == pytest.approx(0.306)
    assert critique.score == pytest.approx(0.306)
    assert fuse(
        GroundedCritique(confidence=0.68), Grounding(uncited=("x",), cites_any=True)
    ).confidence == pytest.approx(0.612)
