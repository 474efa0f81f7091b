"""Critics measured as classifiers: does a critic's approval mean the answer is right?

Every verdict a critic gave during an eval (a loop's rounds, BestOfN's candidates) is a
prediction, "approve" or "reject"; the ground truth is the hidden oracle on the same text
(or a person's label, which wins). From those, per critic:

| metric | definition |
|---|---|
| precision | approved and right / approved (how far an approval can be trusted) |
| recall | approved and right / right (how much good work it lets through) |
| false-approve rate (far) | approved and wrong / wrong (how often it ships a wrong answer) |
| AUC | P(score of a right answer > score of a wrong one), ties half (Mann-Whitney U) |
| κ | Cohen's kappa with another critic on the same items: (p_o - p_e) / (1 - p_e), with p_e from both base rates |
| self-consistency | of the items it judged more than once, the share it judged the same way each time |
| flip rate | of its verdicts `jeeves rejudge` judged again, the share whose approval changed |

A critic is *calibrated* only when every threshold the user sets holds
(`precision>=0.9,far<=0.05`); a metric that cannot be computed (no wrong answers to
measure a false-approve rate on) fails its threshold. Every critic in an eval gates its
loop, so the report lists which gate without calibration.
"""

from __future__ import annotations

import operator
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel, Field

from jeeves.errors import UserError

__all__ = [
    "Agreement",
    "CalibrationReport",
    "CriticStats",
    "Judged",
    "auc",
    "calibrate",
    "cohen_kappa",
    "confusion",
    "flip_rate",
    "format_calibration",
    "load_labels",
    "parse_thresholds",
]

METRICS = ("precision", "recall", "far", "auc", "self_consistency", "flip_rate", "n")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_THRESHOLD = re.compile(r"\s*([a-z_]+)\s*(>=|<=|>|<)\s*([0-9.]+)\s*")


class Judged(BaseModel):
    """One verdict of one critic on one text, and whether that text was right."""

    critic: str
    item: str
    """What was judged: `{run session}#{round or candidate}`; equal items are the same text."""
    text_key: str = ""
    """A hash of the judged text and task (items judged twice share it)."""
    approved: bool
    score: float
    truth: bool | None = None
    """The oracle's (or a label's) answer: right or wrong; None when unknown."""


def confusion(judged: Iterable[Judged]) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) with "approve" as the positive prediction and "right" as the positive class."""
    tp = fp = fn = tn = 0
    for j in judged:
        if j.truth is None:
            continue
        if j.approved:
            tp, fp = tp + j.truth, fp + (not j.truth)
        else:
            fn, tn = fn + j.truth, tn + (not j.truth)
    return tp, fp, fn, tn


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def auc(right: Sequence[float], wrong: Sequence[float]) -> float | None:
    """The Mann-Whitney AUC: P(a right answer's score > a wrong one's), ties counting half."""
    if not right or not wrong:
        return None
    wins = sum(1.0 if r > w else 0.5 if r == w else 0.0 for r in right for w in wrong)
    return wins / (len(right) * len(wrong))


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> tuple[float | None, float, float]:
    """(κ, observed agreement p_o, chance agreement p_e) of two raters on the same items.
    κ is None when p_e is 1 (both always say the same one thing: agreement says nothing)."""
    if len(a) != len(b) or not a:
        raise UserError(
            f"Cohen's kappa needs two equally long, non-empty lists of ratings, got {len(a)} and {len(b)}."
        )
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    p_e = pa * pb + (1 - pa) * (1 - pb)
    return (None if p_e == 1 else (p_o - p_e) / (1 - p_e)), p_o, p_e


def parse_thresholds(text: str) -> list[tuple[str, str, float]]:
    """`"precision>=0.9,far<=0.05"` → [("precision", ">=", 0.9), ("far", "<=", 0.05)]."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = _THRESHOLD.fullmatch(part)
        if not match or match.group(1) not in METRICS:
            raise UserError(
                f"--calibrated-if part {part!r} is not METRIC OP NUMBER with METRIC one of {', '.join(METRICS)}; "
                f'e.g. --calibrated-if "precision>=0.9,far<=0.05".'
            )
        out.append((match.group(1), match.group(2), float(match.group(3))))
    return out


class CriticStats(BaseModel):
    critic: str
    n: int
    """Verdicts with a known truth."""
    tp: int
    fp: int
    fn: int
    tn: int
    base_rate: float | None
    """The share of judged texts that were right."""
    approve_rate: float | None
    precision: float | None
    recall: float | None
    far: float | None
    """False-approve rate: fp / (fp + tn)."""
    auc: float | None
    self_consistency: float | None
    flip_rate: float | None = None
    calibrated: bool = False
    failing: list[str] = Field(default_factory=list)
    """The thresholds it does not meet."""


class Agreement(BaseModel):
    a: str
    b: str
    n: int
    kappa: float | None
    p_o: float
    p_e: float


class CalibrationReport(BaseModel):
    thresholds: str
    critics: list[CriticStats]
    agreement: list[Agreement]
    uncalibrated_gates: list[str]
    """Critics that gate (approve what ships) without meeting the thresholds."""
    rejudge_flip_rate: float | None = None
    """With `--rejudge CRITIC.toml`: the share of re-judged verdicts whose approval flipped."""
    rejudged: int = 0


def _consistency(judged: Sequence[Judged]) -> float | None:
    groups: dict[str, set[bool]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for j in judged:
        if j.text_key:
            groups[j.text_key].add(j.approved)
            counts[j.text_key] += 1
    repeated = [key for key, count in counts.items() if count > 1]
    return _ratio(sum(len(groups[k]) == 1 for k in repeated), len(repeated))


def _stats(
    critic: str, judged: Sequence[Judged], flips: float | None, rules: list[tuple[str, str, float]]
) -> CriticStats:
    tp, fp, fn, tn = confusion(judged)
    known = [j for j in judged if j.truth is not None]
    stats = CriticStats(
        critic=critic,
        n=len(known),
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        base_rate=_ratio(tp + fn, len(known)),
        approve_rate=_ratio(tp + fp, len(known)),
        precision=_ratio(tp, tp + fp),
        recall=_ratio(tp, tp + fn),
        far=_ratio(fp, fp + tn),
        auc=auc([j.score for j in known if j.truth], [j.score for j in known if not j.truth]),
        self_consistency=_consistency(judged),
        flip_rate=flips,
    )
    failing = []
    for metric, op, value in rules:
        got = getattr(stats, metric)
        if got is None or not _OPS[op](got, value):
            failing.append(f"{metric}{op}{value:g} (is {'n/a' if got is None else format(got, '.3g')})")
    return stats.model_copy(update={"failing": failing, "calibrated": bool(rules) and not failing})


def _agreements(by_critic: Mapping[str, Sequence[Judged]]) -> list[Agreement]:
    out = []
    names = sorted(by_critic)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ours = {j.item: j.approved for j in by_critic[a]}
            shared = [(ours[j.item], j.approved) for j in by_critic[b] if j.item in ours]
            if shared:
                kappa, p_o, p_e = cohen_kappa([x for x, _ in shared], [y for _, y in shared])
                out.append(Agreement(a=a, b=b, n=len(shared), kappa=kappa, p_o=p_o, p_e=p_e))
    return out


def calibrate(
    judged: Sequence[Judged],
    thresholds: str = "",
    *,
    labels: Mapping[str, bool] | None = None,
    flip_rates: Mapping[str, float] | None = None,
) -> CalibrationReport:
    """Per-critic classifier metrics; `labels` (item or item prefix → right) override the oracle."""
    rules = parse_thresholds(thresholds)
    if labels:
        judged = [j.model_copy(update={"truth": _label(j.item, labels, j.truth)}) for j in judged]
    by_critic: dict[str, list[Judged]] = defaultdict(list)
    for j in judged:
        by_critic[j.critic].append(j)
    critics = [_stats(c, js, (flip_rates or {}).get(c), rules) for c, js in sorted(by_critic.items())]
    return CalibrationReport(
        thresholds=thresholds,
        critics=critics,
        agreement=_agreements(by_critic),
        uncalibrated_gates=[c.critic for c in critics if not c.calibrated],
    )


def load_labels(path: str) -> dict[str, bool]:
    """A labels file: JSONL of `{"item": "RUN#round_0", "label": true}` or `{"run": RUN, "label": false}`."""
    import json
    from pathlib import Path

    labels: dict[str, bool] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"Cannot read labels {path!r} ({exc.strerror}).") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, label = row.get("item") or row["run"], row["label"]
        except (ValueError, KeyError, TypeError, AttributeError):
            row, key, label = None, None, None
        if not isinstance(key, str) or not isinstance(label, bool):
            raise UserError(
                f'{path} line {n}: expected {{"item" or "run": "...", "label": true|false}}, got {line[:80]!r}.'
            )
        labels[key] = label
    return labels


def flip_rate(before_after: Iterable[tuple[str, str | None]]) -> tuple[float | None, int]:
    """The share of re-judged verdicts whose outcome changed ((before, after) pairs; None after: skipped)."""
    pairs = [(b, a) for b, a in before_after if a is not None]
    return _ratio(sum(b != a for b, a in pairs), len(pairs)), len(pairs)


def _label(item: str, labels: Mapping[str, bool], default: bool | None) -> bool | None:
    if item in labels:
        return labels[item]
    run = item.split("#", 1)[0]
    return labels.get(run, default)


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_calibration(report: CalibrationReport) -> str:
    head = [
        "critic",
        "n",
        "tp/fp/fn/tn",
        "precision",
        "recall",
        "far",
        "auc",
        "consistent",
        "flips",
        "calibrated",
    ]
    rows = [head]
    for c in report.critics:
        rows.append(
            [
                c.critic,
                str(c.n),
                f"{c.tp}/{c.fp}/{c.fn}/{c.tn}",
                _f(c.precision),
                _f(c.recall),
                _f(c.far),
                _f(c.auc),
                _f(c.self_consistency),
                _f(c.flip_rate),
                "yes"
                if c.calibrated
                else ("no: " + "; ".join(c.failing) if c.failing else "no thresholds set"),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += [
        f"agreement {g.a} vs {g.b}: kappa {_f(g.kappa)} (p_o {g.p_o:.2f}, p_e {g.p_e:.2f}, n {g.n})"
        for g in report.agreement
    ]
    if report.rejudged:
        lines.append(f"rejudge: {_f(report.rejudge_flip_rate)} of {report.rejudged} verdicts flip")
    if report.uncalibrated_gates:
        lines.append("gating without calibration: " + ", ".join(report.uncalibrated_gates))
    return "critics as classifiers (truth: the hidden oracle, or your labels)\n" + "\n".join(lines) + "\n"
