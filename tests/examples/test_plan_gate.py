"""examples/plan_gate.py runs offline: plan A is refused before any tool runs, plan B completes."""

from __future__ import annotations

from tests.examples import run_example


def test_plan_a_is_refused_with_nothing_executed_and_plan_b_completes() -> None:
    out = run_example("plan_gate.py")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == [
        "plan refund-881-a (attempt 0): refused: missing_evidence on step 'lookup'; tool calls so far: 0",
        "  decision after verify: replan (refused_by_critic)",
        "plan refund-881-b (attempt 1): verified; tool calls so far: 0",
    ]
    assert "  step_2: refunded 42.0 on 881" in lines
    assert lines[-2:] == [
        "report: completed: 2 evaluator(s) passed, score 0.90",
        "stop reason: completed; tool calls: 3; refunded: {'881': 42.0}",
    ]
