"""Run every benchmark and write bench/results/LATEST.md, LATEST.json and LATEST.png.

    python bench/run.py                   # everything, peers included (under 15 minutes here)
    python bench/run.py --only floor,jeeves --quick --out /tmp/b --no-chart

Each framework runs in its own subprocess (peers in their own venvs under bench/.venvs,
built from bench/peers/requirements-NAME.txt on first use), so no framework's imports or
heap touch another's numbers. The concurrency scenario always gets a fresh process: its
peak RSS is the process's high-water mark. Nothing here is asserted: a framework that
fails to install or to run is recorded with its error and the run goes on.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

import report  # noqa: E402
import venvs  # noqa: E402


@dataclass(frozen=True)
class Framework:
    key: str
    script: Path
    import_name: str | None
    """What `import` statement (d) times; None for the floor."""
    requirements: Path | None = None
    """Pinned requirements of its own venv; None runs it with this interpreter."""


FRAMEWORKS = [
    Framework("floor", BENCH / "floor.py", None),
    Framework("jeeves", BENCH / "jeeves_scenarios.py", "jeeves"),
    *(
        Framework(
            key, BENCH / "peers" / f"peer_{key}.py", module, BENCH / "peers" / f"requirements-{key}.txt"
        )
        for key, module in (
            ("jeevesagent", "jeevesagent"),
            ("pydantic_ai", "pydantic_ai"),
            ("langgraph", "langgraph.graph"),
            ("openai_agents", "agents"),
        )
    ),
]


@dataclass(frozen=True)
class Settings:
    runs: int
    budget_s: float
    warmup: int
    n: int
    import_repeats: int
    timeout_s: float
    traced_budget_s: float = 30.0
    sse_words: int = 10_000
    """(g): deltas of the long run followed live and re-read."""
    sse_followers: int = 100
    """(g): clients following one run at once."""
    long_turns: str = "100,200,400,600"
    """(lr): the lengths of the long agent run."""


FULL = Settings(runs=500, budget_s=3.0, warmup=20, n=1000, import_repeats=7, timeout_s=300)
QUICK = Settings(
    runs=20,
    budget_s=0.2,
    warmup=2,
    n=20,
    import_repeats=2,
    timeout_s=120,
    sse_words=500,
    sse_followers=5,
    long_turns="5,10,20",
)


class ScenarioFailed(RuntimeError):
    pass


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)  # jeeves from this checkout; harmless for the peers
    env.pop("PYTHONSTARTUP", None)
    return env


def run_json(python: Path | str, args: list[str], timeout_s: float) -> dict[str, Any]:
    """Run a scenario script and parse the JSON object it prints last."""
    try:
        done = subprocess.run(
            [str(python), *args], capture_output=True, text=True, timeout=timeout_s, cwd=BENCH, env=_env()
        )
    except subprocess.TimeoutExpired:
        raise ScenarioFailed(f"timed out after {timeout_s:.0f} s") from None
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-12:])
        raise ScenarioFailed(f"exited {done.returncode}:\n{tail}")
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise ScenarioFailed(f"printed nothing; stderr: {done.stderr[-500:]}")
    return dict(json.loads(lines[-1]))


DEPENDENCY_FLOOR = "pydantic.main, pydantic.fields, anyio"
"""(d)'s floor for jeeves: what its kernel cannot be imported without."""


def import_ms(python: Path | str, module: str, repeats: int, floor: str | None = None) -> dict[str, Any]:
    """(d): median wall time of `import module` in fresh interpreters (startup excluded).

    As a user's installed package imports: bytecode caches written (one discarded import
    first, with PYTHONDONTWRITEBYTECODE unset), else every run would compile the sources.
    With `floor` (modules the package cannot do without), that import is timed too, in
    interpreters alternating with the package's, so both figures are of the same moment
    on a shared machine and the package's own share is their difference.
    """
    env = {k: v for k, v in _env().items() if k != "PYTHONDONTWRITEBYTECODE"}

    def once(statement: str) -> float:
        code = f"import time; t = time.perf_counter(); import {statement}; print(time.perf_counter() - t)"
        done = subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, timeout=120, cwd="/", env=env
        )
        if done.returncode != 0:
            raise ScenarioFailed(f"import {statement} failed:\n{done.stderr[-800:]}")
        return float(done.stdout.strip().splitlines()[-1]) * 1e3

    once(module)  # writes the bytecode caches
    times, floors = [], []
    for _ in range(repeats):
        times.append(once(module))
        if floor:
            floors.append(once(floor))
    out: dict[str, Any] = {
        "median_ms": statistics.median(times),
        "samples_ms": times,
        "statement": f"import {module}",
    }
    if floor:
        out.update(
            floor_ms=statistics.median(floors), floor_samples_ms=floors, floor_statement=f"import {floor}"
        )
    return out


def bench_framework(fw: Framework, python: Path | str, s: Settings, log: Any) -> dict[str, Any]:
    """Every scenario of one framework; each failure is recorded, the rest still run."""
    out: dict[str, Any] = {"status": "ok", "errors": {}}
    script = str(fw.script)
    loops = [
        "--mode",
        "loops",
        "--runs",
        str(s.runs),
        "--budget-s",
        str(s.budget_s),
        "--warmup",
        str(s.warmup),
    ]
    parts: list[tuple[str, list[str]]] = [
        ("loops", loops),
        ("loops_words", [*loops, "--stream", "words"]),
        ("c", ["--mode", "concurrent", "--n", str(s.n), "--traced-budget-s", str(s.traced_budget_s)]),
    ]
    if fw.key == "jeeves":
        few = str(max(2, s.runs // 10))
        parts += [
            ("f", ["--mode", "replay", "--runs", few]),
            (
                "g",
                [
                    *("--mode", "sse", "--runs", few),
                    *("--words", str(s.sse_words), "--followers", str(s.sse_followers)),
                ],
            ),
            ("h", ["--mode", "scaling", "--runs", str(max(3, s.runs // 10))]),
            ("i", ["--mode", "features", "--runs", str(s.runs)]),
            ("cj", ["--mode", "concurrent-journals", "--n", str(s.n), "--rounds", "3"]),
            ("lr", ["--mode", "long-runs", "--turns", s.long_turns]),
        ]
    for name, args in parts:
        log(f"  {fw.key}: {name}")
        try:
            slow = name in ("cj", "lr")  # several minutes each on the 2-core machine
            result = run_json(python, [script, *args], s.timeout_s * (6 if slow else 1))
        except ScenarioFailed as exc:
            out["errors"][name] = str(exc)
            continue
        out.setdefault("versions", result.get("versions", {}))
        out.setdefault("notes", {}).update(result.get("notes", {}))
        suffix = "_words" if name == "loops_words" else ""
        out["errors"].update({k + suffix: v for k, v in result.get("errors", {}).items()})
        for key in ("a", "b", "c", "e", "f", "g", "h", "i", "cj", "lr"):
            if key in result:
                out[key + (suffix if key in "abe" else "")] = result[key]
    if fw.import_name:
        log(f"  {fw.key}: d (import)")
        try:
            floor = DEPENDENCY_FLOOR if fw.key == "jeeves" else None
            out["d"] = import_ms(python, fw.import_name, s.import_repeats, floor)
        except ScenarioFailed as exc:
            out["errors"]["d"] = str(exc)
    if out["errors"] and not any(k in out for k in ("a", "b", "c")):
        out["status"] = "failed"
    return out


def prepare_venvs(frameworks: list[Framework], log: Any) -> dict[str, Path | str]:
    """Install the peers' venvs in parallel; a failure maps to its message."""
    pythons: dict[str, Path | str] = {}
    peers = [fw for fw in frameworks if fw.requirements is not None]
    for fw in frameworks:
        if fw.requirements is None:
            pythons[fw.key] = sys.executable
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            fw.key: pool.submit(venvs.ensure_venv, fw.key, fw.requirements) for fw in peers if fw.requirements
        }
        for key, future in futures.items():
            try:
                pythons[key] = future.result()
                log(f"venv {key}: ready")
            except venvs.InstallFailed as exc:
                pythons[key] = f"install failed: {exc}"
                log(f"venv {key}: {exc}")
    return pythons


def draw_chart(results_json: Path, png: Path, log: Any) -> str | None:
    """Draw the PNG with matplotlib from its own venv; returns an error message or None."""
    try:
        python = venvs.ensure_venv("chart", BENCH / "requirements-chart.txt")
        done = subprocess.run(
            [str(python), str(BENCH / "chart.py"), str(results_json), str(png)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (venvs.InstallFailed, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr[-800:]
    log(f"wrote {png}")
    return None


def _git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", default="", help="comma-separated frameworks (floor,jeeves,jeevesagent,...)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny N: checks the harness, measures nothing")
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    parser.add_argument("--no-chart", action="store_true")
    parser.add_argument("--n", type=int, default=None, help="concurrent runs in (c) (default 1000)")
    parser.add_argument(
        "--full",
        action="store_true",
        help="trace (c)'s memory however long the plain batch took (slow peers: many minutes)",
    )
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    if args.n:
        settings = Settings(**{**settings.__dict__, "n": args.n})
    if args.full:
        settings = Settings(**{**settings.__dict__, "traced_budget_s": 1e9, "timeout_s": 3600})
    chosen = [fw for fw in FRAMEWORKS if not args.only or fw.key in args.only.split(",")]
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    load_before = [round(x, 2) for x in os.getloadavg()]
    pythons = prepare_venvs(chosen, log)
    results: dict[str, Any] = {}
    for fw in chosen:
        python = pythons[fw.key]
        if isinstance(python, str) and python.startswith("install failed"):
            results[fw.key] = {"status": "failed", "errors": {"install": python}}
            continue
        log(f"{fw.key}")
        results[fw.key] = bench_framework(fw, python, settings, log)
    data = {
        "meta": {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": _git_commit(),
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
            "quick": args.quick,
            "settings": settings.__dict__,
            "duration_s": 0.0,
            "load_before": load_before,
            "load_after": [round(x, 2) for x in os.getloadavg()],
        },
        "frameworks": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path, png_path = (args.out / f"LATEST.{ext}" for ext in ("json", "md", "png"))
    data["meta"]["duration_s"] = time.perf_counter() - started
    json_path.write_text(json.dumps(data, indent=1))
    chart_error = None if args.no_chart else draw_chart(json_path, png_path, log)
    data["meta"]["chart"] = None if args.no_chart or chart_error else png_path.name
    data["meta"]["chart_error"] = chart_error
    data["meta"]["duration_s"] = time.perf_counter() - started
    json_path.write_text(json.dumps(data, indent=1))
    notes = BENCH / "results" / "NOTES.md"
    md_path.write_text(report.render(data, notes.read_text() if notes.exists() and not args.quick else ""))
    log(f"wrote {md_path} in {data['meta']['duration_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
