from __future__ import annotations

import pytest

from jeeves.evals import CaseResult, build_report, chart_data, format_table


def run(
    case: int, sample: int, passed: bool, rounds: list[bool], tokens: int = 10, usd: float = 0.01
) -> CaseResult:
    return CaseResult(
        config="c",
        case=case,
        case_id=f"t{case}",
        sample=sample,
        session_id=f"e__case_{case}_sample_{sample}",
        passed=passed,
        round_passed=rounds,
        rounds=len(rounds),
        tokens=tokens,
        usd=usd,
        latency_s=1.0 + case,
    )


def test_pass_at_k_round_rates_and_cost_per_solved_from_samples() -> None:
    results = [
        run(0, 0, True, [False, True]),
        run(0, 1, False, [False, False]),
        run(1, 0, False, [False]),
        run(1, 1, False, [False]),
    ]
    (c,) = build_report("e", "d.jsonl", "x", ["c"], results, 2).configs
    assert (c.runs, c.passed, c.pass_rate) == (4, 1, 0.25)
    assert c.pass_at_k == {1: pytest.approx(0.25), 2: pytest.approx(0.5)}  # case 0: 1 of 2; case 1: 0 of 2
    assert c.round_pass_rates == [0.0, 0.25]  # one-round runs carry their only round forward
    assert (c.tokens_per_solved, c.usd_per_solved) == (40.0, pytest.approx(0.04))
    assert (c.latency_mean_s, c.rounds_mean) == (1.5, 1.5)


def test_unpriced_usage_is_said_not_shown_as_free() -> None:
    report = build_report("e", "d.jsonl", "x", ["c"], [run(0, 0, True, [True], usd=0.0)], 1)
    assert report.configs[0].usd is None and "unpriced" in format_table(report)
    assert chart_data(report)["pass_rate"] == [1.0]
