"""Side by side: bench (a), (c), (d), (f) and (i) of several checkouts of jeeves, in one run.

    python bench/kernel_compare.py /tmp/before /path/to/after > /tmp/kernel.json

Each checkout's own bench/jeeves_scenarios.py runs with PYTHONPATH set to that checkout,
alternating between checkouts ((a) and (i) twice each), so a shared machine's load falls on
both alike. The numbers of issue 30's kernel rebuild are in bench/results/KERNEL.md.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

RUNS, BUDGET_S, WARMUP, N = 200, 1.5, 10, 300


def scenario(repo: str, args: list[str]) -> Any:
    """The JSON a checkout's scenario script prints last (or its error)."""
    env = dict(os.environ, PYTHONPATH=repo)
    env.pop("PYTHONSTARTUP", None)
    done = subprocess.run(
        [sys.executable, f"{repo}/bench/jeeves_scenarios.py", *args],
        capture_output=True,
        text=True,
        cwd=f"{repo}/bench",
        env=env,
        timeout=600,
    )
    if done.returncode:
        return {"error": done.stderr[-800:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def import_ms(repo: str, repeats: int = 7) -> dict[str, float]:
    """(d): median `import jeeves` and its dependency floor, alternating, bytecode cached."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = repo

    def once(module: str) -> float:
        code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", env=env)
        return float(out.stdout.split()[-1]) * 1e3

    once("jeeves")
    times, floors = [], []
    for _ in range(repeats):
        times.append(once("jeeves"))
        floors.append(once("pydantic.main, pydantic.fields, anyio"))
    return {"median_ms": statistics.median(times), "floor_ms": statistics.median(floors)}


def main(repos: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {repo: {"a": [], "i": []} for repo in repos}
    loops = ["--mode", "loops", "--runs", str(RUNS), "--budget-s", str(BUDGET_S), "--warmup", str(WARMUP)]
    for _ in range(2):
        for repo in repos:
            a = scenario(repo, [*loops, "--only", "a"])
            out[repo]["a"].append(a.get("a", a))
    for repo in repos:
        out[repo]["c"] = scenario(
            repo, ["--mode", "concurrent", "--n", str(N), "--traced-budget-s", "10"]
        ).get("c")
    for repo in repos:
        out[repo]["d"] = import_ms(repo)
    for repo in repos:
        out[repo]["f"] = scenario(repo, ["--mode", "replay", "--runs", "10"]).get("f")
    for _ in range(2):
        for repo in repos:
            out[repo]["i"].append(scenario(repo, ["--mode", "features", "--runs", str(RUNS)]).get("i"))
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
