from __future__ import annotations

import pytest

from jeeves.evals.stats import pass_at_k, percentile, wilson_interval


def test_wilson_interval_matches_textbook_values() -> None:
    # Newcombe (1998), Table I: 0/10 and 5/10 (95 %).
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 0.0)


def test_pass_at_k_is_chen_et_als_unbiased_estimator() -> None:
    assert pass_at_k(10, 1, 1) == pytest.approx(0.1)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert pass_at_k(5, 5, 5) == 1.0 and pass_at_k(5, 0, 5) == 0.0
    with pytest.raises(ValueError, match="at least 6"):
        pass_at_k(5, 1, 6)


def test_percentile_interpolates() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([], 95) is None
