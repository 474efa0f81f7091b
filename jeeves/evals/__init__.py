"""Evaluations: run architectures over datasets (`jeeves eval`), and measure critics.

See docs/evals.md. Each case is a journaled run with a deterministic root id
(`{eval}__case_{i}`), so a replay rebuilds the report exactly and offline.
"""

from jeeves.evals.case import CaseOutput, EvalCase
from jeeves.evals.dataset import Case, Dataset, load_dataset, load_humaneval
from jeeves.evals.html import chart_data, render_html
from jeeves.evals.report import CaseResult, ConfigReport, EvalReport, build_report, format_table
from jeeves.evals.runner import EvalConfig, EvalOutput, EvalRun, Manifest, replay_eval, run_eval
from jeeves.evals.stats import pass_at_k, wilson_interval

__all__ = [
    "Case",
    "CaseOutput",
    "CaseResult",
    "ConfigReport",
    "Dataset",
    "EvalCase",
    "EvalConfig",
    "EvalOutput",
    "EvalReport",
    "EvalRun",
    "Manifest",
    "build_report",
    "chart_data",
    "format_table",
    "load_dataset",
    "load_humaneval",
    "pass_at_k",
    "render_html",
    "replay_eval",
    "run_eval",
    "wilson_interval",
]
