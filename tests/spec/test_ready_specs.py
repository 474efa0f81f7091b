"""The ready specs in architectures/: each validates, round-trips, and runs offline from its
[demo] script (real pytest for codegen); with API keys set, each runs live too (`-m live`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import jeeves
from jeeves import Budget, ScriptedModel
from jeeves.architectures import ActorCriticOutput, GoalOutput, PlanExecuteOutput, SupervisorOutput
from jeeves.spec import build, dump, load_spec, parse_spec
from tests.conftest import REPO

pytestmark = pytest.mark.anyio

SPECS = sorted((REPO / "architectures").glob("*.toml"))


def test_the_three_ready_specs_are_there() -> None:
    assert {p.stem for p in SPECS} >= {"codegen", "research_team", "self_refine", "ops_goal"}


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_each_spec_round_trips(path: Path) -> None:
    spec = load_spec(path)
    arch, router = build(spec)
    table = dump(arch, router=router)
    again, again_router = build(parse_spec(table, path=path))
    assert dump(again, router=again_router) == table


async def run_offline(path: Path) -> jeeves.RunResult:
    spec = load_spec(path)
    assert spec.demo is not None and spec.demo.task, f"{path.name} needs a [demo] task and script"
    arch, router = build(spec, offline=True)
    result = await jeeves.run(arch, spec.demo.task, router=router, session_id=path.stem)
    script = router.routes["default"].client
    assert isinstance(script, ScriptedModel)
    script.assert_consumed()
    return result


async def test_refund_plan_offline_refuses_plan_a_before_any_tool_and_completes_plan_b() -> None:
    result = await run_offline(REPO / "architectures" / "refund_plan.toml")
    detail = result.detail
    assert isinstance(detail, PlanExecuteOutput) and detail.report is not None
    assert result.stop_reason == "completed"
    first, second = detail.reports
    assert (first.status, first.verify.kind, first.verify.offending_step, first.verify.offending_step_id) == (
        "refused_by_critic",
        "missing_evidence",
        1,
        "refund",
    )
    assert second.verify.reasons == ["2 steps, 2 required outputs covered"]
    assert (second.status, second.rationale) == ("completed", "verify and score passed")
    assert second.score is not None
    assert [(i.name, i.hard, i.passed) for i in second.score.items] == [
        ("policy", True, True),
        ("safety", True, True),
        ("correctness", False, True),
        ("completeness", False, True),
        ("reviewer", False, True),
    ]
    assert all(i.score >= 0.9 for i in second.score.items)  # the seed: "all five pass with score >= 0.9"
    assert [s.step_id for s in detail.steps] == ["lookup", "refund"]
    assert result.text.endswith("[refund] refunded 24500 INR on pay_8861")


async def test_refund_plan_over_the_policy_limit_is_refused_by_the_critic_after_execution() -> None:
    """The seed's consolidate: a hard-fail evaluator failing after execution is
    `refused_by_critic` with the evaluator's one-line reason, not `partial`."""
    import json

    from jeeves import Router

    spec = load_spec(REPO / "architectures" / "refund_plan.toml")
    arch, _ = build(spec, offline=True)
    window = "kg:refund_window:rw_882#snapshot_kg_2026_05_09_T0930"
    plan = {
        "plan_id": "refund-882",
        "intent": "Refund order ord_882.",
        "outputs": ["refund_amount_inr", "refund_reason_class"],
        "steps": [
            {"id": "lookup", "tool": "lookup_order", "arguments": {"order_id": "ord_882"}},
            {
                "id": "refund",
                "tool": "issue_refund",
                "arguments": {"payment_id": "pay_8862", "amount_inr": 40000},
                "evidence": {"refund_window_evidence": [window]},
                "depends_on": ["lookup"],
            },
        ],
    }
    model = ScriptedModel({"planner": [json.dumps(plan)] * 3, "evaluator": ['{"score": 0.9}'] * 3})
    result = await jeeves.run(
        arch, "Refund order ord_882.", router=Router({"default": model}), session_id="r"
    )
    detail = result.detail
    assert isinstance(detail, PlanExecuteOutput) and detail.report is not None
    assert result.stop_reason == "escalated"  # replanned twice, refused each time
    assert [r.status for r in detail.reports] == ["refused_by_critic"] * 3
    assert detail.report.verify.reasons == ["2 steps, 2 required outputs covered"]
    assert detail.report.rationale == "policy fail: refund of 40000 INR is over the 30000 INR policy limit"


async def test_codegen_offline_first_draft_fails_a_test_second_passes() -> None:
    result = await run_offline(REPO / "architectures" / "codegen.toml")
    detail = result.detail
    assert isinstance(detail, ActorCriticOutput)
    assert result.stop_reason == "approved"
    first, second = detail.rounds
    assert first.verdict is not None and second.verdict is not None
    assert "[tests] test_combined_units failed: ValueError" in "\n".join(first.issues)
    assert first.verdict.hard_fail and not first.passed
    assert second.passed and second.score == 0.95
    assert "_PART.findall(compact)" in result.text
    assert set(result.usage_by_role) == {"actor", "critic"}


async def test_research_team_offline_cites_every_claim() -> None:
    result = await run_offline(REPO / "architectures" / "research_team.toml")
    detail = result.detail
    assert isinstance(detail, SupervisorOutput)
    assert result.stop_reason == "forwarded"
    assert [d.worker for d in detail.delegations] == ["researcher", "writer"]
    assert "[n5]" in result.text and "only sensible way" not in result.text
    writer = detail.delegations[1].output
    assert isinstance(writer, ActorCriticOutput)
    assert any(i.startswith("[citations] uncited claim") for i in writer.rounds[0].issues)


async def test_self_refine_offline_is_approved_on_the_second_attempt() -> None:
    result = await run_offline(REPO / "architectures" / "self_refine.toml")
    detail = result.detail
    assert isinstance(detail, ActorCriticOutput)
    assert (result.stop_reason, detail.best_round) == ("approved", 1)
    assert "yield" in result.text


async def test_ops_goal_offline_is_steered_out_of_a_loop_and_verified_by_the_box() -> None:
    box = sys.modules.get("ops_tools")
    if box is not None:
        box.reset()
    try:
        result = await run_offline(REPO / "architectures" / "ops_goal.toml")
        detail = result.detail
        assert isinstance(detail, GoalOutput)
        assert result.stop_reason == "verified"
        assert [(f.verdict, f.source) for f in detail.watchdog] == [
            ("STUCK", "signal"),
            ("PROGRESSING", "model"),
        ]
        assert "restart_service with the same arguments 3 times" in detail.watchdog[0].reason
        assert [(v.score, v.hard_fail) for v in detail.verifications] == [(0.9, False)]
        assert detail.steps == 8 and "port 8080" in detail.report
        assert sys.modules["ops_tools"].BOX.healthy()
        assert set(result.usage_by_role) == {"agent", "watchdog", "success"}
    finally:
        sys.modules["ops_tools"].reset()


def _keys_for(path: Path) -> list[str]:
    _, router = build(load_spec(path))
    providers = {route.model.split("/", 1)[0] for route in router.routes.values()}
    return sorted(f"{p.upper()}_API_KEY" for p in providers)


@pytest.mark.live
@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_each_spec_runs_live(path: Path) -> None:
    missing = [key for key in _keys_for(path) if not os.environ.get(key)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not set")
    spec = load_spec(path)
    assert spec.demo is not None
    arch, router = build(spec)
    result = await jeeves.run(arch, spec.demo.task, router=router, budget=Budget(max_usd=0.5))
    assert result.text.strip()
    assert result.usage.model_calls > 0
