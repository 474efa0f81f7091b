"""examples/step_budgets.py runs offline: the step over its slice fails, its sibling completes, the planner replans."""

from __future__ import annotations

from tests.examples import run_example


def test_the_deep_step_runs_out_of_its_slice_and_the_replanned_run_completes() -> None:
    out = run_example("step_budgets.py")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[:5] == [
        "each step: at most 4 model calls, and its estimate x 1.5 tokens",
        "plan wide (attempt 0)",
        "  step_0: slice of 150 tokens, 4 model calls",
        "  step_1: slice of 150 tokens, 4 model calls",
        "  step_1: tokens ran out in the slice of step_1 (120 of 150)",
    ]
    assert lines[5].startswith("  decision: replan (executor fail: step 'deep' failed: budget_exceeded")
    assert lines[6] == "plan narrow (attempt 1)"
    assert lines[-3:] == [
        "step quick: done",
        "step summary: done",
        # 200 + 40 + 120 by the first plan, 200 + 40 + 60 by the second
        "stop reason: completed; run tokens: 660 (each counted once)",
    ]
