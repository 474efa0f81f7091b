"""Turn bench/run.py's results (LATEST.json) into LATEST.md. Standard library only."""

from __future__ import annotations

from typing import Any

NAMES = {
    "floor": "asyncio floor",
    "jeeves": "jeeves",
    "jeevesagent": "jeevesagent",
    "pydantic_ai": "pydantic-ai",
    "langgraph": "LangGraph",
    "openai_agents": "openai-agents",
}
CALLS = {"a": 6, "b": 3, "e": 10}
TARGETS = {
    "overhead_us": 50.0,
    "concurrent_ms": 400.0,
    "traced_mb": 10.0,
    "import_ms": 150.0,
    "replay_x": 50.0,
}


def _f(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def overhead_us(frameworks: dict[str, Any], key: str, scenario: str) -> float | None:
    """(median µs per loop − the floor's) / model calls; None when either is missing."""
    mine = frameworks.get(key, {}).get(scenario)
    floor = frameworks.get("floor", {}).get(scenario)
    if not mine or not floor or key == "floor":
        return None
    return float(mine["median_us"] - floor["median_us"]) / CALLS[scenario]


def _loop_table(fw: dict[str, Any]) -> list[str]:
    rows = [
        "| framework | (a) µs / loop | (a) overhead µs / call | (a) events | (b) µs / loop | (b) overhead µs / call | (b) events |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for key, data in fw.items():
        cells = [NAMES.get(key, key)]
        for scenario in ("a", "b"):
            loop = data.get(scenario)
            cells += [
                _f(loop["median_us"], 1) if loop else "–",
                _f(overhead_us(fw, key, scenario), 1) if loop and key != "floor" else ("0" if loop else "–"),
                str(loop["events"]) if loop else "–",
            ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _concurrency_table(fw: dict[str, Any], n: int) -> list[str]:
    rows = [
        f"| framework | {n:,} × (a) wall ms | peak RSS MB | RSS growth MB | tracemalloc peak MB | import ms |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for key, data in fw.items():
        c, d = data.get("c"), data.get("d")
        rows.append(
            f"| {NAMES.get(key, key)} | {_f(c['wall_ms'], 1) if c else '–'} | {_f(c['rss_peak_mb'], 1) if c else '–'} | "
            f"{_f(c['rss_growth_mb'], 1) if c else '–'} | {_f(c['traced_peak_mb'], 2) if c else '–'}"
            f"{' ¹' if c and c.get('traced_skipped') else ''} | "
            f"{_f(d['median_ms'], 1) if d else '–'} |"
        )
    return rows


def _verdict(value: float | None, target: float, *, at_least: bool = False) -> str:
    if value is None:
        return "not measured"
    met = value >= target if at_least else value <= target
    return "met" if met else "**missed**"


def _targets(fw: dict[str, Any]) -> list[str]:
    j = fw.get("jeeves", {})
    over = overhead_us(fw, "jeeves", "a")
    c, d, f = j.get("c"), j.get("d"), j.get("f")
    peers = [overhead_us(fw, k, "a") for k in fw if k not in ("floor", "jeeves")]
    best_peer = min((p for p in peers if p is not None), default=None)
    rows = [
        "| target (issue 9) | jeeves | verdict |",
        "|---|--:|---|",
        f"| overhead per model call, (a) with events streamed ≤ 50 µs | {_f(over, 1)} µs | {_verdict(over, 50)} |",
        f"| ≥ 5× below the best peer's overhead ({_f(best_peer, 0)} µs) | "
        f"{_f(best_peer / over if over and best_peer else None, 2)}× | "
        f"{_verdict(best_peer / over if over and best_peer else None, 5, at_least=True)} |",
        f"| 1,000 concurrent (a) ≤ 400 ms | {_f(c['wall_ms'], 1) if c else '–'} ms | "
        f"{_verdict(c['wall_ms'] if c else None, 400)} |",
        f"| 1,000 concurrent (a) ≤ 10 MB traced | {_f(c['traced_peak_mb'], 2) if c else '–'} MB | "
        f"{_verdict(c['traced_peak_mb'] if c else None, 10)} |",
        f"| `import jeeves` ≤ 150 ms | {_f(d['median_ms'], 1) if d else '–'} ms | "
        f"{_verdict(d['median_ms'] if d else None, 150)} |",
        f"| replay ≥ 50× faster than live | {_f(f['speedup'], 0) if f else '–'}× | "
        f"{_verdict(f['speedup'] if f else None, 50, at_least=True)} |",
    ]
    return rows


def _jeeves_only(j: dict[str, Any]) -> list[str]:
    lines = []
    e, f, g = j.get("e"), j.get("f"), j.get("g")
    if e:
        rate = e["events"] / (e["median_us"] / 1e6)
        lines.append(
            f"- **(e) nested run** (supervisor → supervisor → ActorCritic, {CALLS['e']} model calls): "
            f"{e['events']} events in {_f(e['median_us'], 0)} µs (median of {e['runs']}), "
            f"**{_f(rate, 0)} events/s** to the consumer."
        )
    if f:
        lines.append(f"- **(f) replay vs live**: {f['summary']}")
    if g:
        lines.append(f"- **(g) SSE**: {g['summary']}")
    return lines


def _errors(fw: dict[str, Any]) -> list[str]:
    lines = []
    for key, data in fw.items():
        for part, message in data.get("errors", {}).items():
            text = str(message).strip().replace("\n", "\n    ")
            lines.append(f"- {NAMES.get(key, key)}, {part}:\n    ```\n    {text}\n    ```")
    return lines


def _versions(fw: dict[str, Any]) -> str:
    parts = []
    for data in fw.values():
        for name, ver in data.get("versions", {}).items():
            if name != "python":
                parts.append(f"{name} {ver}")
    return ", ".join(parts)


def render(data: dict[str, Any]) -> str:
    meta, fw = data["meta"], data["frameworks"]
    s = meta["settings"]
    out = [
        "# Benchmarks: jeeves, the asyncio floor and the peers",
        "",
        f"{meta['date']} · commit `{meta['commit']}` · Python {meta['python']} · {meta['machine']} · "
        f"whole run {meta['duration_s']:.0f} s · `python bench/run.py`"
        + (" · **--quick: harness check, not a measurement**" if meta.get("quick") else ""),
        "",
        f"Versions: {_versions(fw)}.",
        "",
        f"Load average (1, 5, 15 min) before the run {meta.get('load_before')}, after {meta.get('load_after')}: "
        "this machine has 2 cores and is shared, so a load above 1 means other processes took CPU "
        "during the run: times are then upper bounds and rates lower bounds.",
        "",
        "Every framework makes the same model calls to a zero-latency fake model that streams its "
        "text word by word (bench/common.py). (a) ActorCritic: the critic rejects two drafts and "
        "approves the third, 6 model calls. (b) Supervisor: one delegation to one worker, 3 calls. "
        "Events are consumed through each framework's stream. Times are medians of "
        f"up to {s['runs']} sequential runs after {s['warmup']} warm-up runs; overhead per call is "
        "(framework − floor) / calls. See docs/benchmarks.md for the method.",
        "",
    ]
    if meta.get("chart"):
        out += [f"![benchmarks]({meta['chart']})", ""]
    elif meta.get("chart_error"):
        out += [f"Chart not drawn: {meta['chart_error']}", ""]
    out += ["## Targets", "", *_targets(fw), ""]
    out += ["## Per loop: (a) ActorCritic, (b) Supervisor", "", *_loop_table(fw), ""]
    out += [f"## (c) {s['n']:,} concurrent (a) runs, and (d) import", "", *_concurrency_table(fw, s["n"]), ""]
    out += [
        "Wall: median of up to 3 batches (1 when a batch takes over 2 s). Peak RSS: the fresh process's "
        "high-water mark (imports included); growth: peak minus RSS before the batch. tracemalloc: "
        "peak traced bytes during a separate batch, above the baseline before it. Import: median "
        f"of {s['import_repeats']} fresh interpreters, interpreter start-up excluded.",
        "",
    ]
    skipped = [
        f"{NAMES.get(k, k)}: {d['c']['traced_skipped']}"
        for k, d in fw.items()
        if (d.get("c") or {}).get("traced_skipped")
    ]
    if skipped:
        out += ["¹ tracemalloc batch skipped: " + "; ".join(skipped) + ".", ""]
    j = fw.get("jeeves", {})
    extra = _jeeves_only(j)
    if extra:
        out += ["## jeeves only", "", *extra, ""]
    notes = [
        f"- {NAMES.get(k, k)}: " + "; ".join(f"({s}) {n}" for s, n in d.get("notes", {}).items())
        for k, d in fw.items()
        if d.get("notes")
    ]
    if notes:
        out += ["## How each framework runs the scenarios", "", *notes, ""]
    errors = _errors(fw)
    if errors:
        out += ["## Failures and missing scenarios", "", *errors, ""]
    return "\n".join(out)
