"""The plan critic's pure phases: verify, score, consolidate, decide (seed 000, as written)."""

from __future__ import annotations

from typing import Any

import pytest

from jeeves.critics import Verdict
from jeeves.critics.plan import (
    CriticReport,
    DecisionSpec,
    Evaluation,
    Evidence,
    Plan,
    PlanStep,
    ScoreVerdict,
    VerifyVerdict,
    consolidate,
    decide,
    required_evidence,
    score,
    verify,
)

SURFACE: dict[str, Any] = {
    "lookup_order": "read_only",
    "issue_refund": "destructive",
    "notify": "network",
}
REQUIRES = {"issue_refund": ["refund_window_evidence"]}
"""What the tools declare (`@tool(requires_evidence=...)`), as PlanExecute hands it to verify."""
WINDOW = "kg:refund_window:rw_881#snapshot_kg_2026_05_09_T0930"
MANIFEST = [Evidence(id=WINDOW, classification="refund_window_evidence")]
SPEC = DecisionSpec(required_outputs=["refund_amount_inr", "refund_reason_class"])


def seed_plan(*, refs: list[str] | None = None, requires: list[str] | None = None) -> Plan:
    """The seed's plan A (no `refs`) or plan B (`refs=[WINDOW]`), in jeeves' plan shape."""
    refund: dict[str, Any] = {
        "id": "s2",
        "tool": "issue_refund",
        "arguments": {"id": "pay_8861", "amount_inr": 24500},
    }
    if requires is not None:
        refund["evidence_required"] = requires
    if refs is not None:
        refund["evidence"] = {"refund_window_evidence": refs}
    return Plan.model_validate(
        {
            "plan_id": "refund",
            "intent": "support.refund",
            "steps": [{"id": "s1", "tool": "lookup_order", "arguments": {"id": "ord_881"}}, refund],
            "outputs": ["refund_amount_inr", "refund_reason_class"],
        }
    )


def check(plan: Plan, spec: DecisionSpec = SPEC, **kw: Any) -> VerifyVerdict:
    return verify(
        plan,
        spec,
        SURFACE,
        requires=kw.pop("requires", REQUIRES),
        manifest=kw.pop("manifest", MANIFEST),
        **kw,
    )


def test_the_seeds_plan_a_gets_the_seeds_refusal_word_for_word() -> None:
    verdict = check(seed_plan(requires=["refund_window_evidence"]))
    assert verdict.model_dump(exclude_none=True) == {
        "ok": False,
        "kind": "missing_evidence",
        "reasons": ["step 1 requires evidence class refund_window_evidence, none pinned"],
        "offending_step": 1,
        "offending_step_id": "s2",
    }


def test_the_seeds_plan_b_passes_saying_what_it_covered() -> None:
    assert check(seed_plan(refs=[WINDOW])).model_dump(exclude_none=True) == {
        "ok": True,
        "reasons": ["2 steps, 2 required outputs covered"],
    }


def test_the_requirement_is_the_capabilitys_so_a_plan_that_leaves_it_off_is_still_refused() -> None:
    verdict = check(seed_plan(requires=[]))  # the planner wrote no requirement at all
    assert (verdict.kind, verdict.offending_step, verdict.offending_step_id) == ("missing_evidence", 1, "s2")


def test_the_planner_can_add_requirements_never_remove_them() -> None:
    step = seed_plan(refs=[WINDOW], requires=["order_record"]).steps[1]
    assert required_evidence(step, SPEC, REQUIRES) == ["refund_window_evidence", "order_record"]
    verdict = check(seed_plan(refs=[WINDOW], requires=["order_record"]))
    assert verdict.reasons == ["step 1 requires evidence class order_record, none pinned"]


def test_a_decision_spec_can_require_evidence_of_a_capability_too() -> None:
    spec = DecisionSpec(
        required_outputs=SPEC.required_outputs, requires_evidence={"lookup_order": ["order_id"]}
    )
    verdict = check(seed_plan(refs=[WINDOW]), spec)
    assert (verdict.kind, verdict.offending_step, verdict.reasons) == (
        "missing_evidence",
        0,
        ["step 0 requires evidence class order_id, none pinned"],
    )


@pytest.mark.parametrize(
    ("refs", "manifest", "reason"),
    [
        (
            ["kg:refund_window:rw_999#snapshot_made_up"],
            MANIFEST,
            "step 1 pins kg:refund_window:rw_999#snapshot_made_up as refund_window_evidence evidence, "
            "which is not in the run's evidence manifest",
        ),
        (
            [WINDOW],
            [],
            f"step 1 pins {WINDOW} as refund_window_evidence evidence, which is not in the run's evidence manifest",
        ),
        (
            [WINDOW],
            [Evidence(id=WINDOW, classification="order_record")],
            f"step 1 pins {WINDOW} as refund_window_evidence evidence, but the manifest classifies it as order_record",
        ),
        (
            [WINDOW, "kg:invented"],
            MANIFEST,
            "step 1 pins kg:invented as refund_window_evidence evidence, which is not in the run's evidence manifest",
        ),
    ],
)
def test_a_reference_counts_only_if_it_resolves_in_the_manifest_with_the_required_class(
    refs: list[str], manifest: list[Evidence], reason: str
) -> None:
    verdict = check(seed_plan(refs=refs), manifest=manifest)
    assert (verdict.ok, verdict.kind, verdict.reasons) == (False, "unresolved_evidence", [reason])
    assert (verdict.offending_step, verdict.offending_step_id) == (1, "s2")


def step(id: str, tool: str = "lookup_order", **kw: Any) -> PlanStep:
    return PlanStep(id=id, tool=tool, **kw)


def plan(
    *steps: PlanStep, outputs: tuple[str, ...] = ("refund_amount_inr", "refund_reason_class"), **kw: Any
) -> Plan:
    return Plan(plan_id="p", intent="test", steps=list(steps), outputs=list(outputs), **kw)


def test_the_loop_guard_has_the_seeds_defaults_unless_configured() -> None:
    spec = DecisionSpec()
    assert (spec.max_steps, spec.max_plan_tokens) == (12, 8000)
    twelve = plan(*[step(str(i)) for i in range(12)], outputs=())
    assert check(twelve, spec).ok
    thirteen = check(plan(*[step(str(i)) for i in range(13)], outputs=()), spec)
    assert (thirteen.kind, thirteen.reasons, thirteen.offending_step) == (
        "loop_guard",
        ["plan has 13 steps, exceeds max_steps (12)"],
        12,
    )
    at_limit = plan(step("a", estimated_tokens=5000), step("b", estimated_tokens=3000), outputs=())
    assert check(at_limit, spec).ok
    over = check(plan(step("a", estimated_tokens=5000), step("b", estimated_tokens=3001), outputs=()), spec)
    assert (over.kind, over.reasons, over.offending_step, over.offending_step_id) == (
        "budget_exceeded",
        ["plan exceeds max_plan_tokens: 8,001 estimated tokens, 8,000 allowed"],
        0,
        "a",
    )
    assert check(plan(*[step(str(i)) for i in range(13)], outputs=()), DecisionSpec(max_steps=20)).ok
    assert check(plan(step("a", estimated_tokens=10**6), outputs=()), DecisionSpec(max_plan_tokens=None)).ok


@pytest.mark.parametrize(
    ("candidate", "spec", "kind", "offending", "reason"),
    [
        (
            plan(step("1"), outputs=("refund_amount_inr",)),
            SPEC,
            "violates_decision_spec",
            (None, None),
            "plan does not produce required output refund_reason_class",
        ),
        (
            plan(step("1", tool="rm_rf")),
            SPEC,
            "violates_decision_spec",
            (0, "1"),
            "plan step 0 calls rm_rf which is not in the surface (issue_refund, lookup_order, notify)",
        ),
        (
            plan(PlanStep(id="1")),
            SPEC,
            "violates_decision_spec",
            (0, "1"),
            "must name exactly one tool or worker",
        ),
        (
            plan(step("1"), step("1")),
            SPEC,
            "violates_decision_spec",
            (0, "1"),
            "step 0 id '1' is used 2 times",
        ),
        (
            plan(step("1", depends_on=["9"])),
            SPEC,
            "violates_decision_spec",
            (0, "1"),
            "depends on unknown step '9'",
        ),
        (
            plan(step("1"), checkpoints=["7"]),
            SPEC,
            "violates_decision_spec",
            (None, None),
            "checkpoint '7' is not a step",
        ),
        (
            plan(step("a", depends_on=["b"]), step("b", depends_on=["a"])),
            SPEC,
            "loop_guard",
            (0, "a"),
            "cycle: a → b → a",
        ),
        (
            plan(step("1", tool="notify")),
            DecisionSpec(safety_mode="local_write"),
            "approval_mode_mismatch",
            (0, "1"),
            "step 0 mode network > safety_mode local_write",
        ),
        (
            plan(step("1", evidence_required=["policy"], evidence={"policy": []})),
            SPEC,
            "missing_evidence",
            (0, "1"),
            "step 0 requires evidence class policy, none pinned",
        ),
    ],
)
def test_each_refusal_kind_names_its_step_by_index_and_id(
    candidate: Plan, spec: DecisionSpec, kind: str, offending: tuple[int | None, str | None], reason: str
) -> None:
    verdict = check(candidate, spec, requires={})
    assert (verdict.ok, verdict.kind, (verdict.offending_step, verdict.offending_step_id)) == (
        False,
        kind,
        offending,
    )
    assert any(reason in r for r in verdict.reasons), verdict.reasons


def test_checks_run_in_the_seeds_order_and_report_every_reason_of_the_first_kind() -> None:
    bad = plan(step("1", tool="nope"), step("2", tool="also_nope", estimated_tokens=10**6))
    verdict = check(bad)
    assert verdict.kind == "violates_decision_spec"
    assert len(verdict.reasons) == 2
    # evidence before the loop guard (the seed's order): a 13-step plan missing evidence is refused for the evidence
    long = plan(*[step(str(i)) for i in range(12)], step("r", tool="issue_refund"))
    assert check(long).kind == "missing_evidence"


def test_user_checks_run_last_and_can_refuse() -> None:
    def no_refunds_over_20000(p: Plan, spec: DecisionSpec) -> VerifyVerdict | None:
        for i, s in enumerate(p.steps):
            if s.tool == "issue_refund" and s.arguments.get("amount_inr", 0) > 20000:
                return VerifyVerdict.refuse(
                    "violates_decision_spec", [f"refund of {s.arguments['amount_inr']} > 20000"], i, s.id
                )
        return None

    verdict = check(seed_plan(refs=[WINDOW]), checks=[no_refunds_over_20000])
    assert (verdict.kind, verdict.offending_step, verdict.offending_step_id, verdict.reasons) == (
        "violates_decision_spec",
        1,
        "s2",
        ["refund of 24500 > 20000"],
    )
    assert check(seed_plan(refs=[WINDOW]), checks=[lambda p, s: None]).ok


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
    low = score([Evaluation(name="llm", verdict=Verdict(score=0.5))])
    assert (low.ok, low.below_threshold) == (
        True,
        ["llm"],
    )  # the seed: only a hard-fail evaluator fails the score


def policy_over_limit() -> ScoreVerdict:
    return score(
        [
            Evaluation(name="reviewer", verdict=Verdict(score=0.95)),
            Evaluation(
                name="policy",
                verdict=Verdict(score=0.0, issues=["refund of 40000 INR is over the 30000 INR policy limit"]),
                hard=True,
            ),
        ]
    )


def test_consolidate_gives_the_seeds_status_and_one_line_rationale_for_each_case() -> None:
    passed = check(seed_plan(refs=[WINDOW]))
    refused = check(seed_plan())
    cases = [
        (
            consolidate("job", "k", refused, None, "2026-05-09T09:30:00Z"),
            "refused_by_critic",
            "verify failed: missing_evidence — step 1 requires evidence class refund_window_evidence, none pinned",
        ),
        (consolidate("job", "k", passed, None, "t"), "partial", "verify passed; no score (no execution)"),
        (
            consolidate("job", "k", passed, policy_over_limit(), "t"),
            "refused_by_critic",
            "policy fail: refund of 40000 INR is over the 30000 INR policy limit",
        ),
        (
            consolidate(
                "job", "k", passed, score([Evaluation(name="llm", verdict=Verdict(score=0.92))]), "t"
            ),
            "completed",
            "verify and score passed",
        ),
    ]
    for report, status, rationale in cases:
        assert (report.status, report.rationale) == (status, rationale)
    assert cases[0][0].decided_at == "2026-05-09T09:30:00Z"


def test_consolidate_joins_several_hard_failures_and_names_soft_ones_below_the_threshold() -> None:
    passed = check(seed_plan(refs=[WINDOW]))
    both = score(
        [
            Evaluation(name="policy", verdict=Verdict(score=0.0, issues=["a", "b"]), hard=True),
            Evaluation(
                name="safety", verdict=Verdict(score=0.0, issues=["over the limit\nsee 4.2"]), hard=True
            ),
        ]
    )
    assert (
        consolidate("j", "k", passed, both, "t").rationale
        == "policy fail: a, b; safety fail: over the limit see 4.2"
    )
    soft = score([Evaluation(name="llm", verdict=Verdict(score=0.5, issues=["vague"]))])
    report = consolidate("j", "k", passed, soft, "t")
    assert (report.status, report.rationale) == (
        "completed",
        "verify and score passed; below the threshold 0.80: llm scored 0.50 (vague)",
    )


def report_of(status: str, *, below: bool = False, hard: bool = False) -> CriticReport:
    card = ScoreVerdict(
        ok=not hard,
        score=0.1,
        threshold=0.8,
        hard_failed=["policy"] if hard else [],
        below_threshold=["llm"] if below else [],
    )
    return CriticReport(
        session_id="s",
        decision_key="k",
        verify=VerifyVerdict(ok=True),
        score=card,
        status=status,  # type: ignore[arg-type]
        rationale="r",
        decided_at="t",
    )


@pytest.mark.parametrize(
    ("status", "below", "hard", "replans", "retries", "decision"),
    [
        ("completed", False, False, 0, 0, "accept"),
        ("completed", True, False, 1, 1, "retry"),
        ("completed", True, False, 1, 0, "replan"),
        ("completed", True, False, 0, 0, "escalate"),
        ("refused_by_critic", False, True, 1, 5, "replan"),
        ("refused_by_critic", False, True, 0, 5, "escalate"),
        ("partial", False, False, 1, 1, "retry"),
        ("partial", False, False, 0, 0, "escalate"),
    ],
)
def test_decide(status: str, below: bool, hard: bool, replans: int, retries: int, decision: str) -> None:
    assert (
        decide(report_of(status, below=below, hard=hard), replans_left=replans, retries_left=retries)
        == decision
    )


def test_the_envelope_types_have_json_schemas_and_round_trip() -> None:
    for model in (Plan, VerifyVerdict, ScoreVerdict, CriticReport, Evidence):
        assert model.model_json_schema()["type"] == "object"
    p = seed_plan(refs=[WINDOW])
    assert Plan.model_validate_json(p.model_dump_json()) == p
    with pytest.raises(ValueError):
        Plan.model_validate({"plan_id": "x", "intent": "y", "steps": [], "surprise": 1})


def test_a_verdict_recorded_with_a_step_id_reads_with_that_id_and_no_index() -> None:
    old = VerifyVerdict.model_validate_json(
        '{"ok": false, "kind": "missing_evidence", "reasons": ["r"], "offending_step": "lookup"}'
    )
    assert (old.offending_step, old.offending_step_id) == (None, "lookup")
