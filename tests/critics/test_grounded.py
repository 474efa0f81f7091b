"""The grounded audit critic: the model's critique, corrected by the citation engine."""

from __future__ import annotations

import json
from typing import Any

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


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_audits_telemetry_is_on_the_critique_event_and_span_and_replays_exactly() -> None:
    from tests.memory_journal import DictJournal
    from tests.telemetry.test_telemetry import Traced, attrs

    def run_it(mode: str, traced: Traced, journal: DictJournal) -> Any:
        model = ScriptedModel(
            {
                "actor": ["Paris is the capital of France [a]. It sits on the Loire [c]. It is big."],
                "critic": [json.dumps({"confidence": 0.9})],
            }
        )
        arch = ActorCritic(Agent("x"), GroundedAuditCritic(EVIDENCE), max_rounds=0)
        return jeeves.stream(
            arch,
            "Capital of France?",
            model=model if mode == "record" else ScriptedModel([]),
            session_id="g",
            journal=journal,
            mode=mode,  # type: ignore[arg-type]
            tracer=traced.tracer,
        )

    journal, live, again = DictJournal(), Traced(), Traced()
    async with run_it("record", live, journal) as events:
        recorded = [e async for e in events]
    (critique,) = [e for e in recorded if e.type == "critique"]
    assert critique.audit is not None
    assert (critique.audit.invalid_citations, critique.audit.uncited_claims) == (1, 1)
    assert critique.audit.duration_ms >= 0
    span = attrs(live.named("invoke_agent critic"))
    assert span["jeeves.audit.invalid_citations"] == 1
    assert span["jeeves.audit.uncited_claims"] == 1
    assert span["jeeves.audit.duration_ms"] == critique.audit.duration_ms
    assert ("g__critic_0", 1, "function", "audit_duration") in await journal.kinds()

    async with run_it("replay", again, journal) as events:
        replayed = [e async for e in events]

    def dump(events: list[jeeves.Event]) -> list[dict[str, object]]:
        return [e.model_dump(exclude={"seq", "ts", "replayed"}) for e in events]

    assert dump(replayed) == dump(recorded)  # the recorded duration, not the replay's own
    assert attrs(again.named("invoke_agent critic"))["jeeves.audit.duration_ms"] == critique.audit.duration_ms
