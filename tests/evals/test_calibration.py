from __future__ import annotations

import pytest

from jeeves.errors import UserError
from jeeves.evals.calibration import (
    Judged,
    auc,
    calibrate,
    cohen_kappa,
    confusion,
    format_calibration,
    parse_thresholds,
)


def matrix(tp: int, fp: int, fn: int, tn: int, critic: str = "llm") -> list[Judged]:
    cells = [(True, True)] * tp + [(True, False)] * fp + [(False, True)] * fn + [(False, False)] * tn
    return [
        Judged(critic=critic, item=f"r{i}#0", approved=a, score=1.0 if a else 0.0, truth=t)
        for i, (a, t) in enumerate(cells)
    ]


def test_metrics_on_a_hand_built_confusion_matrix_equal_the_textbook_values() -> None:
    # tp=40 fp=10 fn=20 tn=30: precision 40/50, recall 40/60, false-approve 10/40, base rate 60/100.
    judged = matrix(40, 10, 20, 30)
    assert confusion(judged) == (40, 10, 20, 30)
    (stats,) = calibrate(judged, "precision>=0.8,far<=0.2").critics
    assert (stats.precision, stats.recall, stats.far) == pytest.approx((0.8, 2 / 3, 0.25))
    assert (stats.base_rate, stats.approve_rate) == pytest.approx((0.6, 0.5))
    # binary scores: AUC = (TPR + TNR) / 2 = (40/60 + 30/40) / 2
    assert stats.auc == pytest.approx((40 / 60 + 30 / 40) / 2)
    assert not stats.calibrated and stats.failing == ["far<=0.2 (is 0.25)"]
    assert calibrate(judged, "precision>=0.8,far<=0.25").critics[0].calibrated


def test_auc_is_mann_whitney_with_ties_counting_half() -> None:
    assert auc([0.9, 0.8, 0.4], [0.5, 0.1]) == pytest.approx(5 / 6)
    assert auc([0.5], [0.5]) == 0.5 and auc([], [0.1]) is None


def test_cohens_kappa_equals_the_textbook_example() -> None:
    # Wikipedia's example: 50 items, a says yes 25 (20 with b), b says yes 30; p_o 0.7, p_e 0.5, kappa 0.4.
    a = [True] * 20 + [True] * 5 + [False] * 10 + [False] * 15
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    kappa, p_o, p_e = cohen_kappa(a, b)
    assert (kappa, p_o, p_e) == pytest.approx((0.4, 0.7, 0.5))
    assert cohen_kappa([True, True], [True, True])[0] is None


def test_agreement_self_consistency_labels_and_the_gating_list() -> None:
    tests = [
        Judged(critic="tests", item=f"r{i}#0", approved=i < 2, score=float(i < 2), truth=i < 2)
        for i in range(4)
    ]
    llm = [
        Judged(critic="llm", item=f"r{i}#0", approved=True, score=0.9, truth=i < 2, text_key="same")
        for i in range(4)
    ]
    report = calibrate(tests + llm, "precision>=0.9", labels={"r3": True})
    by = {c.critic: c for c in report.critics}
    assert by["tests"].fn == 1 and by["llm"].tp == 3  # the label made r3 right
    assert by["llm"].self_consistency == 1.0
    assert (by["tests"].precision, by["llm"].precision) == (1.0, 0.75)
    assert report.uncalibrated_gates == ["llm"]
    (pair,) = report.agreement
    assert (pair.a, pair.b, pair.n, pair.p_o) == ("llm", "tests", 4, 0.5)
    assert "gating without calibration: llm\n" in format_calibration(report)


def test_thresholds_parse_or_fail_in_one_line() -> None:
    assert parse_thresholds("precision>=0.9, far<=0.05") == [("precision", ">=", 0.9), ("far", "<=", 0.05)]
    with pytest.raises(UserError, match="'accuracy>0.5' is not METRIC OP NUMBER"):
        parse_thresholds("accuracy>0.5")


def test_flip_rate_counts_changed_outcomes_among_rejudged_verdicts() -> None:
    from jeeves.evals.calibration import flip_rate

    assert flip_rate([("approved", "approved"), ("approved", "refused"), ("refused", None)]) == (0.5, 2)
    assert flip_rate([]) == (None, 0)
