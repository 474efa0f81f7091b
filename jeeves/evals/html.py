"""The report as one self-contained HTML page: a table and an inline SVG chart, no assets.

`chart_data` is what the chart draws (tests compare it exactly): per configuration its
pass rate with the Wilson interval, and its pass rate after each round.
"""

from __future__ import annotations

import html
import json
from typing import Any

from jeeves.evals.calibration import format_calibration
from jeeves.evals.report import EvalReport, format_table

__all__ = ["chart_data", "render_html"]

_W, _H, _PAD = 640, 260, 40
_COLOURS = ("#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6")


def chart_data(report: EvalReport) -> dict[str, Any]:
    return {
        "configs": [c.name for c in report.configs],
        "pass_rate": [round(c.pass_rate, 4) for c in report.configs],
        "ci": [[round(c.ci_low, 4), round(c.ci_high, 4)] for c in report.configs],
        "rounds": {c.name: [round(v, 4) for v in c.round_pass_rates] for c in report.configs},
    }


def _y(rate: float) -> float:
    return round(_H - _PAD - rate * (_H - 2 * _PAD), 1)


def _bars(data: dict[str, Any]) -> list[str]:
    n = max(len(data["configs"]), 1)
    slot = (_W / 2 - _PAD) / n
    parts = []
    for i, (name, rate, (low, high)) in enumerate(
        zip(data["configs"], data["pass_rate"], data["ci"], strict=True)
    ):
        x = round(_PAD + i * slot + slot * 0.15, 1)
        width, colour = round(slot * 0.7, 1), _COLOURS[i % len(_COLOURS)]
        mid = round(x + width / 2, 1)
        parts += [
            f'<rect x="{x}" y="{_y(rate)}" width="{width}" height="{round(_y(0) - _y(rate), 1)}" fill="{colour}">'
            f"<title>{html.escape(name)}: {rate:.1%} (95% CI {low:.1%}-{high:.1%})</title></rect>",
            f'<line x1="{mid}" x2="{mid}" y1="{_y(low)}" y2="{_y(high)}" stroke="#000"/>',
            f'<text x="{mid}" y="{_H - _PAD + 14}" text-anchor="middle" font-size="11">{html.escape(name)}</text>',
        ]
    return parts


def _lines(data: dict[str, Any]) -> list[str]:
    left, width = _W / 2 + _PAD / 2, _W / 2 - 1.5 * _PAD
    depth = max((len(v) for v in data["rounds"].values()), default=1)
    step = width / max(depth - 1, 1)
    parts = [f'<text x="{left}" y="{_PAD - 10}" font-size="11">pass rate after each round</text>']
    for i, (name, rates) in enumerate(data["rounds"].items()):
        points = " ".join(f"{round(left + r * step, 1)},{_y(v)}" for r, v in enumerate(rates))
        colour = _COLOURS[i % len(_COLOURS)]
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"><title>{html.escape(name)}</title></polyline>'
        )
    return parts


def render_svg(report: EvalReport) -> str:
    data = chart_data(report)
    axis = [
        f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{_y(0)}" y2="{_y(0)}" stroke="#999"/>',
        f'<text x="4" y="{_y(1) + 4}" font-size="10">100%</text>',
        f'<text x="4" y="{_y(0) + 4}" font-size="10">0%</text>',
        f'<text x="{_PAD}" y="{_PAD - 10}" font-size="11">pass rate (95% Wilson CI)</text>',
    ]
    body = "".join([*axis, *_bars(data), *_lines(data)])
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}">{body}</svg>'


def render_html(report: EvalReport) -> str:
    """The whole page: title, chart, table, and the report's JSON (for tools)."""
    title = html.escape(f"jeeves eval {report.eval_id}")
    data = html.escape(json.dumps(report.model_dump(mode="json"), indent=1))
    critics = report.calibration
    extra = f"<pre>{html.escape(format_calibration(critics))}</pre>\n" if critics is not None else ""
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        "<style>body{font-family:sans-serif;margin:2em}pre{background:#f6f6f6;padding:1em}</style></head>"
        f"<body><h1>{title}</h1>\n{render_svg(report)}\n<pre>{html.escape(format_table(report))}</pre>\n{extra}"
        f'<details><summary>report JSON</summary><pre id="report">{data}</pre></details></body></html>\n'
    )
