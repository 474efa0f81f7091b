"""The plan critic's pure phases: verify, score, consolidate, decide."""

from __future__ import annotations

from typing import Any

import pytest

from jeeves.critics import Verdict
from jeeves.critics.plan import (
    CriticReport,
    DecisionSpec,
    Evaluation,
    Plan,
    PlanStep,
    ScoreVerdict,
    VerifyVerdict,
    consolidate,
    decide,
    score,
    verify,
)

SURFACE: dict[str, Any] = {
    "lookup_order": "read_only",
    "eval_policy": "read_only",
    "issue_refund": "destructive",
    "notify": "network",
}
SPEC = DecisionSpec(
    required_outputs=["refund_amount", "refund_reason_class"], max_steps=12, max_plan_tokens=8000
)


def refund_plan(*, pinned: bool) -> Plan:
    """The seed's worked refund: plan A pins no evidence for the order lookup; plan B does."""
    evidence = {"order_record": ["order:881"]} if pinned else {}
    return Plan(
        plan_id="refund-881-" + ("b" if pinned else "a"),
        intent="Refund order 881 if the policy allows it.",
        outputs=["refund_amount", "refund_reason_class"],
        steps=[
            PlanStep(
                id="1",
                tool="lookup_order",
                arguments={"order_id": "881"},
                evidence_required=["order_record"],
                evidence=evidence,
                estimated_tokens=800,
            ),
            PlanStep(
                id="2",
                tool="eval_policy",
                depends_on=["1"],
                estimated_tokens=1200,
                outputs=["refund_reason_class"],
            ),
            PlanStep(
                id="3",
                tool="issue_refund",
                arguments={"order_id": "881", "amount": 42.0},
                depends_on=["2"],
                estimated_tokens=300,
                outputs=["refund_amount"],
            ),
        ],
    )


def test_the_seeds_refund_plan_a_is_refused_for_missing_evidence_on_step_1() -> None:
    verdict = verify(refund_plan(pinned=False), SPEC, SURFACE)
    assert (verdict.ok, verdict.kind, verdict.offending_step) == (False, "missing_evidence", "1")
    assert verdict.reasons == ["step '1' requires 'order_record' evidence and pins none"]


def test_the_seeds_refund_plan_b_passes() -> None:
    assert verify(refund_plan(pinned=True), SPEC, SURFACE) == VerifyVerdict(ok=True)


def step(id: str, tool: str = "lookup_order", **kw: Any) -> PlanStep:
    return PlanStep(id=id, tool=tool, **kw)


def plan(
    *steps: PlanStep, outputs: tuple[str, ...] = ("refund_amount", "refund_reason_class"), **kw: Any
) -> Plan:
    return Plan(plan_id="p", intent="test", steps=list(steps), outputs=list(outputs), **kw)


@pytest.mark.parametrize(
    ("candidate", "spec", "kind", "offending", "reason"),
    [
        (
            plan(step("1"), outputs=("refund_amount",)),
            SPEC,
            "violates_decision_spec",
            None,
            "'refund_reason_class' is not declared",
        ),
        (
            plan(step("1", tool="rm_rf")),
            SPEC,
            "violates_decision_spec",
            "1",
            "uses 'rm_rf', which is not on the tool surface",
        ),
        (plan(PlanStep(id="1")), SPEC, "violates_decision_spec", "1", "must name exactly one tool or worker"),
        (plan(step("1"), step("1")), SPEC, "violates_decision_spec", "1", "step id '1' is used 2 times"),
        (
            plan(step("1", depends_on=["9"])),
            SPEC,
            "violates_decision_spec",
            "1",
            "depends on unknown step '9'",
        ),
        (
            plan(step("1"), checkpoints=["7"]),
            SPEC,
            "violates_decision_spec",
            None,
            "checkpoint '7' is not a step",
        ),
        (
            plan(*[step(str(i)) for i in range(4)]),
            DecisionSpec(max_steps=3),
            "loop_guard",
            "3",
            "4 steps, more than max_steps=3",
        ),
        (
            plan(step("a", depends_on=["b"]), step("b", depends_on=["a"])),
            SPEC,
            "loop_guard",
            "a",
            "cycle: a → b → a",
        ),
        (
            plan(step("1", tool="issue_refund")),
            DecisionSpec(safety_mode="network"),
            "approval_mode_mismatch",
            "1",
            "(destructive), above the run's safety mode 'network'",
        ),
        (
            plan(step("1", evidence_required=["policy"], evidence={"policy": []})),
            SPEC,
            "missing_evidence",
            "1",
            "requires 'policy' evidence",
        ),
        (
            plan(step("1", estimated_tokens=5000), step("2", estimated_tokens=4000)),
            SPEC,
            "budget_exceeded",
            "1",
            "9,000 tokens, over max_plan_tokens=8,000",
        ),
    ],
)
def test_each_refusal_kind_from_a_minimal_plan(
    candidate: Plan, spec: DecisionSpec, kind: str, offending: str | None, reason: str
) -> None:
    verdict = verify(candidate, spec, SURFACE)
    assert (verdict.ok, verdict.kind, verdict.offending_step) == (False, kind, offending)
    assert any(reason in r for r in verdict.reasons), verdict.reasons


def test_checks_run_in_order_and_report_every_reason_of_the_first_kind() -> None:
    bad = plan(step("1", tool="nope"), step("2", tool="also_nope", estimated_tokens=10**6))
    verdict = verify(bad, SPEC, SURFACE)
    assert verdict.kind == "violates_decision_spec"
    assert len(verdict.reasons) == 2


def test_user_checks_run_last_and_can_refuse() -> None:
    def no_refunds_over_40(p: Plan, spec: DecisionSpec) -> VerifyVerdict | None:
        for s in p.steps:
            if s.tool == "issue_refund" and s.arguments.get("amount", 0) > 40:
                return VerifyVerdict.refuse(
                    "violates_decision_spec", [f"refund of {s.arguments['amount']} > 40"], s.id
                )
        return None

    verdict = verify(refund_plan(pinned=True), SPEC, SURFACE, checks=[no_refunds_over_40])
    assert (verdict.kind, verdict.offending_step, verdict.reasons) == (
        "violates_decision_spec",
        "3",
        ["refund of 42.0 > 40"],
    )
    assert verify(refund_plan(pinned=True), SPEC, SURFACE, checks=[lambda p, s: None]).ok


def test_a_hard_fail_evaluator_overrides_a_high_llm_score() -> None:
    card = score(
        [
            Evaluation(name="llm", verdict=Verdict(score=0.95, source="llm")),
            Evaluation(
                name="policy",
                verdict=Verdict(score=0.0, hard_fail=True, issues=["refund above limit"]),
                hard=True,
            ),
        ]
    )
    assert (card.ok, card.hard_failed, card.score) == (False, ["policy"], 0.0)
    assert score([Evaluation(name="llm", verdict=Verdict(score=0.95))]).ok
    assert not score([]).ok


def test_consolidate_says_what_happened_in_one_line() -> None:
    refused = verify(refund_plan(pinned=False), SPEC, SURFACE)
    report = consolidate("job", "refund-881-a#0", refused, None, "2026-11-23T10:00:00Z")
    assert (report.status, report.decided_at) == ("refused_by_critic", "2026-11-23T10:00:00Z")
    assert report.rationale == (
        "refused before execution: missing_evidence on step '1': step '1' requires 'order_record' evidence and pins none"
    )
    good = score([Evaluation(name="llm", verdict=Verdict(score=0.92))])
    assert (
        consolidate("job", "k", VerifyVerdict(ok=True), good, "t").rationale
        == "completed: 1 evaluator(s) passed, score 0.92"
    )
    hard = score(
        [
            Evaluation(
                name="policy",
                verdict=Verdict(score=0.0, hard_fail=True, issues=["over the limit\nsee policy 4.2"]),
                hard=True,
            )
        ]
    )
    partial = consolidate("job", "k", VerifyVerdict(ok=True), hard, "t")
    assert (partial.status, partial.rationale) == (
        "partial",
        "partial: hard-fail evaluator 'policy' failed: over the limit see policy 4.2",
    )
    low = score([Evaluation(name="llm", verdict=Verdict(score=0.5, issues=["vague"]))])
    assert (
        consolidate("job", "k", VerifyVerdict(ok=True), low, "t").rationale
        == "partial: 'llm' scored 0.50, below 0.80: vague"
    )


@pytest.mark.parametrize(
    ("status", "hard", "replans", "retries", "decision"),
    [
        ("completed", False, 0, 0, "accept"),
        ("refused_by_critic", False, 1, 5, "replan"),
        ("refused_by_critic", False, 0, 5, "escalate"),
        ("partial", False, 1, 1, "retry"),
        ("partial", False, 1, 0, "replan"),
        ("partial", True, 1, 5, "replan"),
        ("partial", True, 0, 5, "escalate"),
    ],
)
def test_decide(status: str, hard: bool, replans: int, retries: int, decision: str) -> None:
    card = ScoreVerdict(ok=False, score=0.1, threshold=0.8, hard_failed=["policy"] if hard else [])
    report = CriticReport(
        session_id="s",
        decision_key="k",
        verify=VerifyVerdict(ok=True),
        score=card,
        status=status,
        rationale="r",
        decided_at="t",  # type: ignore[arg-type]
    )
    assert decide(report, replans_left=replans, retries_left=retries) == decision


def test_the_envelope_types_have_json_schemas_and_round_trip() -> None:
    for model in (Plan, VerifyVerdict, ScoreVerdict, CriticReport):
        assert model.model_json_schema()["type"] == "object"
    p = refund_plan(pinned=True)
    assert Plan.model_validate_json(p.model_dump_json()) == p
    with pytest.raises(ValueError):
        Plan.model_validate({"plan_id": "x", "intent": "y", "steps": [], "surprise": 1})
