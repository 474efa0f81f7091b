"""DURABLE.svg from bench/durable.py's throughput rows: three bar panels (runs/s, transactions
per run, CPU per run), grouped by worker count, one bar per code measured (the baseline
commit and this checkout). Standard library only: the SVG is written by hand."""

from __future__ import annotations

from html import escape
from typing import Any

_COLORS = ("#9aa4b2", "#1f6feb", "#2da44e", "#d4a72c")
_W, _H, _TOP, _BOTTOM, _LEFT = 340, 300, 40, 50, 20


def _cpu(row: dict[str, Any]) -> float | None:
    worker, server = row.get("worker_cpu_ms_per_run"), row.get("server_cpu_ms_per_run")
    return None if worker is None else worker + (server or 0.0)


_PANELS = (
    ("runs/s (wall)", lambda r: r["runs_per_s"]),
    ("transactions / run", lambda r: r["commits_per_run"]),
    ("worker + PostgreSQL CPU ms / run", _cpu),
)


def _panel(x0: int, title: str, value: Any, rows: list[dict[str, Any]], codes: list[str]) -> list[str]:
    counts = list(dict.fromkeys((r["workers"], r["concurrency"]) for r in rows))
    usual = rows[0]["concurrency"] if rows else 0
    values = [v for r in rows if (v := value(r)) is not None]
    top = max(values, default=1.0) * 1.15 or 1.0
    plot_h = _H - _TOP - _BOTTOM
    group_w = (_W - _LEFT - 10) / max(1, len(counts))
    bar_w = group_w * 0.8 / max(1, len(codes))
    out = [
        f'<text x="{x0 + _W / 2:.0f}" y="22" text-anchor="middle" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{x0 + _LEFT}" y1="{_TOP + plot_h}" x2="{x0 + _W - 10}" y2="{_TOP + plot_h}" stroke="#444"/>',
    ]
    for g, (count, slots) in enumerate(counts):
        gx = x0 + _LEFT + g * group_w
        label = f"{count} worker" + ("s" if count > 1 else "") + (f" ×{slots}" if slots != usual else "")
        out.append(
            f'<text x="{gx + group_w / 2:.0f}" y="{_TOP + plot_h + 18}" text-anchor="middle">{label}</text>'
        )
        for c, code in enumerate(codes):
            row = next(
                (
                    r
                    for r in rows
                    if (r["workers"], r["concurrency"]) == (count, slots) and r.get("code", "current") == code
                ),
                None,
            )
            v = value(row) if row is not None else None
            if v is None:
                continue
            h = plot_h * v / top
            bx = gx + group_w * 0.1 + c * bar_w
            out.append(
                f'<rect x="{bx:.1f}" y="{_TOP + plot_h - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                f'fill="{_COLORS[c % len(_COLORS)]}"/>'
            )
            out.append(
                f'<text x="{bx + bar_w / 2:.1f}" y="{_TOP + plot_h - h - 4:.1f}" text-anchor="middle" '
                f'font-size="11">{v:.1f}</text>'
            )
    return out


def svg(rows: list[dict[str, Any]]) -> str:
    """The chart of `rows` (DURABLE.json's "throughput") as an SVG document."""
    codes = list(dict.fromkeys(r.get("code", "current") for r in rows))
    width = _W * len(_PANELS)
    body: list[str] = []
    for i, (title, value) in enumerate(_PANELS):
        body += _panel(i * _W, title, value, rows, codes)
    for c, code in enumerate(codes):
        x = 20 + c * 260
        body.append(
            f'<rect x="{x}" y="{_H - 18}" width="12" height="12" fill="{_COLORS[c % len(_COLORS)]}"/>'
        )
        body.append(f'<text x="{x + 18}" y="{_H - 8}">{escape(code)}</text>')
    runs = rows[0]["runs"] if rows else 0
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{_H}" '
        f'viewBox="0 0 {width} {_H}" font-family="sans-serif" font-size="12">'
    )
    title = f"<title>Durable workers: a {runs}-run queue on 1, 2 and 4 workers (bench/durable.py)</title>"
    return "\n".join([head, title, '<rect width="100%" height="100%" fill="white"/>', *body, "</svg>"]) + "\n"
