"""The eval report: per configuration, what passed, with what confidence, at what cost.

The report is a pure function of the case results (`build_report`), so a replay that gives
the same results gives the same report, byte for byte, in every format.

Definitions:
- pass rate: runs whose answer passed the oracle / runs (an errored case counts as a
  failure), with a 95 % Wilson interval;
- pass@k: Chen et al.'s unbiased estimator, averaged over cases, for k up to the samples
  per case;
- pass rate after round r: the candidate of round r passed (a loop that stopped earlier
  carries its last candidate forward), for ActorCritic and SelfRefine; one round otherwise;
- tokens and USD per solved task: the configuration's whole spend divided by the runs it
  solved; USD is None ("unpriced") when a run used tokens but no price was known.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from jeeves.evals.calibration import CalibrationReport, Judged
from jeeves.evals.stats import mean, pass_at_k, percentile, wilson_interval

__all__ = ["CaseResult", "ConfigReport", "EvalReport", "build_report", "format_table"]


class CaseResult(BaseModel):
    """What one run of one case gave (the report is a function of these alone)."""

    config: str
    case: int
    case_id: str
    sample: int = 0
    session_id: str
    passed: bool | None = None
    error: str | None = None
    round_passed: list[bool] = []
    rounds: int = 0
    tokens: int = 0
    usd: float = 0.0
    model_calls: int = 0
    latency_s: float = 0.0
    stop_reason: str = ""
    judgements: list[Judged] = []
    right_candidate: bool | None = None
    """BestOfN: a candidate it judged was right (selection could succeed)."""


class ConfigReport(BaseModel):
    name: str
    runs: int
    passed: int
    errored: int
    pass_rate: float
    ci_low: float
    ci_high: float
    pass_at_k: dict[int, float]
    round_pass_rates: list[float]
    rounds_mean: float | None
    tokens: int
    usd: float | None
    """None when some run spent tokens at no known price."""
    tokens_per_solved: float | None
    usd_per_solved: float | None
    latency_mean_s: float | None
    latency_p95_s: float | None
    errors: list[str]
    """`case id: error`, one per errored run."""
    selection: tuple[int, int] | None = None
    """BestOfN: (runs whose selected answer passed, runs with a right candidate to select);
    None for other architectures."""


class EvalReport(BaseModel):
    eval_id: str
    dataset: str
    dataset_sha256: str
    samples: int
    configs: list[ConfigReport]
    calibration: CalibrationReport | None = None
    """The critics measured as classifiers, when the runs' critics judged anything."""


def _round_rates(runs: Sequence[CaseResult]) -> list[float]:
    depth = max((len(r.round_passed) for r in runs), default=0)
    rates = []
    for k in range(depth):
        ok = sum(1 for r in runs if r.round_passed and r.round_passed[min(k, len(r.round_passed) - 1)])
        rates.append(ok / len(runs))
    return rates


def _pass_at(runs: Sequence[CaseResult], samples: int) -> dict[int, float]:
    by_case: dict[int, list[CaseResult]] = {}
    for r in runs:
        by_case.setdefault(r.case, []).append(r)
    ks = sorted({1, samples} | {k for k in (5, 10) if k <= samples})
    out = {}
    for k in ks:
        values = [
            pass_at_k(len(rs), sum(1 for r in rs if r.passed), k) for rs in by_case.values() if len(rs) >= k
        ]
        out[k] = sum(values) / len(values) if values else 0.0
    return out


def _selection(runs: Sequence[CaseResult]) -> tuple[int, int] | None:
    if not any(r.right_candidate is not None for r in runs):
        return None
    selectable = [r for r in runs if r.right_candidate]
    return sum(1 for r in selectable if r.passed), len(selectable)


def _config(name: str, runs: Sequence[CaseResult], samples: int) -> ConfigReport:
    n, passed = len(runs), sum(1 for r in runs if r.passed)
    low, high = wilson_interval(passed, n)
    tokens = sum(r.tokens for r in runs)
    unpriced = any(r.tokens and not r.usd for r in runs)
    usd = None if unpriced else sum(r.usd for r in runs)
    answered = [r for r in runs if r.error is None]
    latencies = [r.latency_s for r in answered]
    return ConfigReport(
        name=name,
        runs=n,
        passed=passed,
        errored=n - len(answered),
        pass_rate=passed / n if n else 0.0,
        ci_low=low,
        ci_high=high,
        pass_at_k=_pass_at(runs, samples),
        round_pass_rates=_round_rates(runs),
        rounds_mean=mean([float(r.rounds) for r in answered]),
        tokens=tokens,
        usd=usd,
        tokens_per_solved=tokens / passed if passed else None,
        usd_per_solved=usd / passed if passed and usd is not None else None,
        latency_mean_s=mean(latencies),
        latency_p95_s=percentile(latencies, 95),
        selection=_selection(runs),
        errors=[
            r.error if r.error.startswith(r.case_id) else f"{r.case_id}: {r.error}" for r in runs if r.error
        ],
    )


def build_report(
    eval_id: str,
    dataset: str,
    sha256: str,
    configs: Sequence[str],
    results: Sequence[CaseResult],
    samples: int,
) -> EvalReport:
    return EvalReport(
        eval_id=eval_id,
        dataset=dataset,
        dataset_sha256=sha256,
        samples=samples,
        configs=[_config(c, [r for r in results if r.config == c], samples) for c in configs],
    )


def _num(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def _usd(report: ConfigReport, value: float | None) -> str:
    if report.usd is None:
        return "unpriced"
    return _num(value, ".4f")


def format_table(report: EvalReport) -> str:
    """The report as an aligned text table, one row per configuration."""
    head = [
        "config",
        "pass",
        "rate",
        "95% CI",
        "pass@k",
        "by round",
        "rounds",
        "tok/solved",
        "$/solved",
        "latency",
    ]
    rows = [head]
    for c in report.configs:
        rows.append(
            [
                c.name,
                f"{c.passed}/{c.runs}" + (f" ({c.errored} err)" if c.errored else ""),
                f"{c.pass_rate:.1%}",
                f"{c.ci_low:.1%}-{c.ci_high:.1%}",
                " ".join(f"@{k}={v:.2f}" for k, v in c.pass_at_k.items()),
                " ".join(f"{v:.0%}" for v in c.round_pass_rates) or "-",
                _num(c.rounds_mean, ".2f"),
                _num(c.tokens_per_solved, ".0f"),
                _usd(c, c.usd_per_solved),
                _num(c.latency_mean_s, ".2f") + ("s" if c.latency_mean_s is not None else ""),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    title = f"eval {report.eval_id} on {report.dataset} ({report.samples} sample(s) per case)"
    errors = [f"  {c.name}: {e}" for c in report.configs for e in c.errors]
    lines += [
        f"selection accuracy ({c.name}): {c.selection[0]}/{c.selection[1]} runs with a right candidate returned one"
        for c in report.configs
        if c.selection is not None
    ]
    return "\n".join([title, *lines, *(["errored cases:", *errors] if errors else [])]) + "\n"
