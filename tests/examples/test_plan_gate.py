"""examples/plan_gate.py runs offline: plan A is refused before any tool runs, plan B completes."""

from __future__ import annotations

from tests.examples import run_example


def test_plan_a_is_refused_with_nothing_executed_and_plan_b_completes() -> None:
    out = run_example("plan_gate.py")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == [
        "plan refund-881-a (attempt 0): refused: missing_evidence on step 1 ('refund'); tool calls so far: 0",
        "  decision after verify: replan (refused_by_critic: verify failed: missing_evidence — "
        "step 1 requires evidence class refund_window_evidence, none pinned)",
        "plan refund-881-b (attempt 1): verified (2 steps, 2 required outputs covered); tool calls so far: 0",
    ]
    assert "  step_1: refunded 24500 INR on pay_8861" in lines
    assert lines[-3:] == [
        "scorecard: policy (hard) 1.00, safety (hard) 1.00, correctness 1.00, completeness 1.00, llm 0.90",
        "report: completed: verify and score passed",
        "stop reason: completed; tool calls: 2; refunded: {'pay_8861': 24500}",
    ]
