"""Draw LATEST.png from LATEST.json: four bar panels, log scale, targets dashed.

Run by bench/run.py with the matplotlib of bench/.venvs/chart:
`python bench/chart.py results/LATEST.json results/LATEST.png`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import NAMES, overhead_us

JEEVES, PEER, FLOOR = "#1f6feb", "#9aa4b2", "#2da44e"


def _color(key: str) -> str:
    return JEEVES if key == "jeeves" else FLOOR if key == "floor" else PEER


def _panel(
    ax: Any, title: str, unit: str, values: dict[str, float | None], target: float | None = None
) -> None:
    keys = [k for k, v in values.items() if v is not None and v > 0]
    heights = [float(values[k]) for k in keys]  # type: ignore[arg-type]
    bars = ax.barh([NAMES.get(k, k) for k in keys], heights, color=[_color(k) for k in keys])
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_xlabel(unit, fontsize=8)
    ax.tick_params(labelsize=8)
    for bar, h in zip(bars, heights, strict=True):
        label = f"{h:,.0f}" if h >= 10 else f"{h:,.1f}" if h >= 1 else f"{h:.2f}"
        ax.text(h * 1.08, bar.get_y() + bar.get_height() / 2, label, va="center", fontsize=8)
    if heights:
        ax.set_xlim(min(heights + [target or heights[0]]) / 2, max(heights) * 6)
    if target is not None:
        ax.axvline(target, color="#cf222e", linestyle="--", linewidth=1)
        ax.text(
            target,
            0.98,
            f" target {target:g}",
            color="#cf222e",
            fontsize=7,
            va="top",
            transform=ax.get_xaxis_transform(),
        )
    missing = [NAMES.get(k, k) for k, v in values.items() if v is None]
    if missing:
        ax.text(
            0.99,
            0.02,
            "not measured: " + ", ".join(missing),
            transform=ax.transAxes,
            ha="right",
            fontsize=7,
            color="#57606a",
        )


def main(source: Path, png: Path) -> None:
    data = json.loads(source.read_text())
    fw: dict[str, Any] = data["frameworks"]
    n = data["meta"]["settings"]["n"]
    peers = [k for k in fw if k != "floor"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    _panel(
        axes[0][0],
        "(a) ActorCritic: overhead per model call over the floor",
        "µs per call (log)",
        {k: overhead_us(fw, k, "a") for k in peers},
        50,
    )
    _panel(
        axes[0][1],
        "(b) Supervisor: overhead per model call over the floor",
        "µs per call (log)",
        {k: overhead_us(fw, k, "b") for k in peers},
    )
    _panel(
        axes[1][0],
        f"(c) {n:,} concurrent (a) runs: wall time",
        "ms (log)",
        {k: (fw[k].get("c") or {}).get("wall_ms") for k in fw},
        400 if n == 1000 else None,
    )
    _panel(
        axes[1][1],
        f"(c) {n:,} concurrent (a) runs: tracemalloc peak",
        "MB (log)",
        {k: (fw[k].get("c") or {}).get("traced_peak_mb") for k in fw},
        10 if n == 1000 else None,
    )
    meta = data["meta"]
    fig.suptitle(f"jeeves vs the asyncio floor and peers · {meta['date']} · {meta['machine']}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
