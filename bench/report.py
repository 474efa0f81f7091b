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
    "run_overhead_us": 30.0,
    "peer_x": 5.0,
    "concurrent_ms": 400.0,
    "traced_mb": 10.0,
    "retained_bytes": 0.0,
    "import_ms": 100.0,
    "growth_x": 1.25,
    "sse_events_s": 50_000.0,
    "replay_x": 50.0,
}
RETAINED_SLACK_BYTES = 64
"""tracemalloc's own bookkeeping moves by a few bytes a run; under this counts as flat."""


def _f(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def overhead_us(frameworks: dict[str, Any], key: str, scenario: str) -> float | None:
    """(median µs per loop − the floor's) / model calls; None when either is missing."""
    mine = frameworks.get(key, {}).get(scenario)
    floor = frameworks.get("floor", {}).get(scenario.removesuffix("_words"))
    if not mine or not floor or key == "floor":
        return None
    return float(mine["median_us"] - floor["median_us"]) / CALLS[scenario.removesuffix("_words")]


def _loop_table(fw: dict[str, Any], suffix: str = "") -> list[str]:
    rows = [
        "| framework | (a) µs / loop | (a) overhead µs / call | (a) events | (b) µs / loop | (b) overhead µs / call | (b) events |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    for key, data in fw.items():
        cells = [NAMES.get(key, key)]
        for scenario in ("a" + suffix, "b" + suffix):
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
    return "MET" if met else "**MISSED**"


def marginal_growth(
    rows: list[dict[str, Any]], key: str, measure: str = "us_per_run"
) -> tuple[list[float], float | None]:
    """Marginal µs per added session along a curve, and how the cost per added session in
    the curve's second half compares with its first half (1 = constant; a cost quadratic
    in sessions reads ≈ 2 on 1 → 5 levels).

    Halves, not the last and first steps alone: each step is the difference of two medians,
    so one noisy point would swing a single step; a half spans several points. `measure` is
    the row's wall time (`us_per_run`) or its CPU time (`cpu_us_per_run`, the verdict's).
    """
    steps = []
    for before, after in zip(rows, rows[1:], strict=False):
        added = after["sessions"] - before["sessions"]
        steps.append((after[measure] - before[measure]) / added)
    if len(rows) < 3:
        return steps, None
    first, mid, last = rows[0], rows[len(rows) // 2], rows[-1]

    def slope(a: dict[str, Any], b: dict[str, Any]) -> float:
        return float(b[measure] - a[measure]) / (b["sessions"] - a["sessions"])

    early = slope(first, mid)
    if early <= 0:
        return steps, None
    return steps, slope(mid, last) / early


def _run_overhead(fw: dict[str, Any]) -> float | None:
    rows = (fw.get("jeeves", {}).get("i") or {}).get("rows", {})
    plain, floor = rows.get("jeeves.run (no stream)"), fw.get("floor", {}).get("a")
    if not plain or not floor:
        return None
    return float(plain["median_us"] - floor["median_us"]) / CALLS["a"]


def _targets(fw: dict[str, Any]) -> list[str]:
    j = fw.get("jeeves", {})
    over = overhead_us(fw, "jeeves", "a")
    c, d, f, g, h = j.get("c"), j.get("d"), j.get("f"), j.get("g"), j.get("h")
    peers = {k: overhead_us(fw, k, "a") for k in fw if k not in ("floor", "jeeves")}
    measured = {k: v for k, v in peers.items() if v is not None}
    best = min(measured, key=lambda k: measured[k]) if measured else None
    ratio = measured[best] / over if best and over and over > 0 else None
    run_over = _run_overhead(fw)
    retained = c.get("retained_bytes_per_run") if c else None
    depth = marginal_growth(h["depth"], "depth", _h_measure(h))[1] if h else None
    workers = marginal_growth(h["workers"], "workers", _h_measure(h))[1] if h else None
    rate = g["events_per_s"] if g else None
    rows = [
        "| target (issue 14) | target | measured | verdict |",
        "|---|--:|--:|---|",
        f"| (a) overhead per model call, events streamed (one delta per call) | ≤ 50 µs | {_f(over, 1)} µs | "
        f"{_verdict(over, 50)} |",
        f"| (a) overhead per model call with `jeeves.run` | ≤ 30 µs | {_f(run_over, 1)} µs | {_verdict(run_over, 30)} |",
        f"| (a) below the best peer ({NAMES.get(best or '', best or '–')}, {_f(measured.get(best or ''), 0)} µs) | "
        f"≥ 5× | {_f(ratio, 1)}× | {_verdict(ratio, 5, at_least=True)} |",
        f"| (c) 1,000 concurrent (a): wall | ≤ 400 ms | {_f(c['wall_ms'], 1) if c else '–'} ms | "
        f"{_verdict(c['wall_ms'] if c else None, 400)} |",
        f"| (c) 1,000 concurrent (a): traced peak | ≤ 10 MB | {_f(c['traced_peak_mb'], 2) if c else '–'} MB | "
        f"{_verdict(c['traced_peak_mb'] if c else None, 10)} |",
        f"| (c) retained per finished run (10 batches) | 0 B (flat) | {_f(retained, 1)} B | "
        f"{_verdict(retained, RETAINED_SLACK_BYTES)} |",
        f"| (d) `import jeeves`{_import_floor(d)} | ≤ 100 ms | {_f(d['median_ms'], 1) if d else '–'} ms | "
        f"{_verdict(d['median_ms'] if d else None, 100)} |",
        f"| (h) cost per session, 1 → 5 levels: µs per added session, second half / first half of the curve | ≤ 1.25 (constant) | "
        f"{_f(depth, 2)} | {_verdict(depth, 1.25)} |",
        f"| (h) cost per session, 1 → 50 workers: µs per added session, second half / first half of the curve | ≤ 1.25 (constant) | "
        f"{_f(workers, 2)} | {_verdict(workers, 1.25)} |",
        f"| (g) `jeeves serve` events/s to one SSE client (a finished run re-read: the SSE path; "
        f"live figures under (g) below) | ≥ 50,000 | {_f(rate, 0)} | {_verdict(rate, 50_000, at_least=True)} |",
    ]
    if g and "encodes_per_event" in g:
        enc = g["encodes_per_event"]
        rows.append(
            f"| (g) {g['followers']} followers of one run: JSON encodings per event | 1 | {_f(enc, 2)} | "
            f"{_verdict(enc, 1)} |"
        )
    rows.append(
        f"| (f) replay faster than live | ≥ 50× | {_f(f['speedup'], 0) if f else '–'}× | "
        f"{_verdict(f['speedup'] if f else None, 50, at_least=True)} |"
    )
    return rows


def _import_floor(d: dict[str, Any] | None) -> str:
    """(d)'s floor, measured in the same moment: what jeeves' own modules add to it."""
    if not d or "floor_ms" not in d:
        return ""
    return (
        f" (`{d['floor_statement']}` alone: {_f(d['floor_ms'], 1)} ms at the same moment; "
        f"jeeves' own modules: {_f(d['median_ms'] - d['floor_ms'], 1)} ms)"
    )


def _h_measure(h: dict[str, Any]) -> str:
    """CPU time where the bench recorded it (the verdict's measure), else wall time."""
    return "cpu_us_per_run" if all("cpu_us_per_run" in r for r in h["depth"] + h["workers"]) else "us_per_run"


def _scaling(h: dict[str, Any]) -> list[str]:
    cpu = _h_measure(h) == "cpu_us_per_run"
    lines = [
        "| curve | point | sessions | model calls | events | wall µs / run | CPU µs / run | "
        "CPU µs / session | marginal CPU µs / added session |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    if not cpu:
        lines = [line.replace("CPU µs", "µs") for line in lines]
    for key, label in (("depth", "levels"), ("workers", "workers")):
        steps, ratio = marginal_growth(h[key], key, _h_measure(h))
        for i, row in enumerate(h[key]):
            own = row.get("cpu_us_per_run", row["us_per_run"])
            lines.append(
                f"| {label} | {row[key]} | {row['sessions']} | {row['model_calls']} | {row['events']} | "
                f"{_f(row['us_per_run'], 0)} | {_f(own, 0)} | {_f(own / row['sessions'], 1)} | "
                f"{_f(steps[i - 1], 1) if i else '–'} |"
            )
        lines.append(f"| {label} | second half / first half | | | | | | | {_f(ratio, 2) if ratio else '–'} |")
    return lines


def _features(i: dict[str, Any], floor: dict[str, Any] | None) -> list[str]:
    lines = ["| (a), 6 model calls | µs / loop | overhead µs / call |", "|---|--:|--:|"]
    for name, row in i.get("rows", {}).items():
        over = (row["median_us"] - floor["median_us"]) / CALLS["a"] if floor else None
        lines.append(f"| {name} | {_f(row['median_us'], 1)} | {_f(over, 1)} |")
    return lines


def _concurrent_journals(cj: dict[str, Any]) -> list[str]:
    """(cj): 1,000 concurrent (a) runs with and without a journal (bench/concurrent_journals.py)."""
    lines = [
        f"| {cj['n']:,} × (a) at once, median of {cj['rounds']} rounds | wall ms | × bare | CPU ms | × bare "
        "| collector share | KiB per run in flight | KiB kept per run |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, row in cj["rows"].items():
        lines.append(
            f"| {name} | {_f(row['wall_ms'], 0)} | {_f(row['wall_x_bare'], 2)} | {_f(row['cpu_ms'], 0)} "
            f"| {_f(row['cpu_x_bare'], 2)} | {_f(row['gc_share'] * 100, 0)} % | {_f(row['kib_per_run_in_flight'], 1)} "
            f"| {_f(row['kept_by_journal_kib_per_run'], 1)} |"
        )
    sqlite = cj["rows"].get("sqlite journal", {})
    if "transactions_per_run" in sqlite:
        lines += [
            "",
            f"SQLite: {_f(sqlite['writes_per_run'], 1)} writes per run in {_f(sqlite['transactions_per_run'], 3)} "
            "transactions per run (group commit).",
        ]
    return lines


def _long_runs(lr: dict[str, Any]) -> list[str]:
    """(lr): memory of a long agent run in every store (bench/long_runs.py)."""
    turns = lr["turns"]
    lines = [
        "| store, figure | " + " | ".join(f"{t} turns" for t in turns) + " | growth per doubling ¹ |",
        "|---|" + "--:|" * (len(turns) + 1),
    ]
    for name, by_n in lr["rows"].items():
        for key in by_n[str(turns[0])] if str(turns[0]) in by_n else by_n[turns[0]]:
            cells = [by_n.get(str(t), by_n.get(t, {})).get(key) for t in turns]
            ratios = lr["growth"].get(f"{name}: {key}", [])
            lines.append(
                f"| {name}: {key} | "
                + " | ".join(_f(c, 0) for c in cells)
                + " | "
                + ", ".join(_f(r, 2) for r in ratios)
                + " |"
            )
    lines += [
        "",
        "¹ each figure's ratio between consecutive lengths over the ratio of the lengths: 1.0 is linear.",
    ]
    return lines


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


def render(data: dict[str, Any], notes_md: str = "") -> str:
    """LATEST.md; `notes_md` (bench/results/NOTES.md, hand-written) follows the targets table."""
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
        "Every framework makes the same model calls to a zero-latency fake model, built once, that "
        "yields to the event loop once per call, reports the same usage, and streams its text as "
        "one delta per call (the main tables) or word by word (the second table) (bench/common.py). "
        "(a) ActorCritic: the critic rejects two drafts and "
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
    if notes_md:
        out += [notes_md.strip(), ""]
    out += [
        "## Per loop, one delta per model call: (a) ActorCritic, (b) Supervisor",
        "",
        *_loop_table(fw),
        "",
    ]
    if any("a_words" in d for d in fw.values()):
        out += [
            "## Per loop, word-by-word streaming (same runs, one delta per word)",
            "",
            *_loop_table(fw, "_words"),
            "",
        ]
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
    c = fw.get("jeeves", {}).get("c") or {}
    if c.get("retained_kb"):
        out += [
            "Retention (jeeves): KB still traced after each of 10 batches of "
            f"{max(1, s['n'] // 10)} runs (after a collection): "
            + ", ".join(_f(v, 1) for v in c["retained_kb"])
            + ".",
            "",
        ]
    j = fw.get("jeeves", {})
    extra = _jeeves_only(j)
    if extra:
        out += ["## jeeves only", "", *extra, ""]
    if j.get("h"):
        out += [
            "## (h) Cost per session against nesting depth and parallel workers (jeeves)",
            "",
            "Depth d: d − 1 Supervisors, each delegating to the next, over one Agent (2 calls per "
            "supervisor, 1 for the agent). Workers n: one Supervisor delegating to n Agents in one reply "
            "(they run in parallel). Marginal µs per added session: the run's time difference between "
            "two points over the sessions added; constant means the cost grows with the work only.",
            "",
            *_scaling(j["h"]),
            "",
        ]
    if j.get("i"):
        out += [
            "## (i) What features cost (jeeves, (a) events streamed unless said)",
            "",
            *_features(j["i"], fw.get("floor", {}).get("a")),
            "",
        ]
    if j.get("cj"):
        out += [
            "## (cj) 1,000 concurrent (a) runs with journals (jeeves)",
            "",
            *_concurrent_journals(j["cj"]),
            "",
        ]
    if j.get("lr"):
        out += ["## (lr) A long run's memory in every store (jeeves)", "", *_long_runs(j["lr"]), ""]
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
