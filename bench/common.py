"""What every bench scenario shares: the fake work, and how loops are timed and measured.

Standard library only: the peer scripts import this file from their own venvs, where
jeeves is not installed.

The fake work. Every framework runs the same two loops against a zero-latency fake model:

- (a) ActorCritic: the actor writes `add(a, b)`, the critic rejects the first two drafts and
  approves the third. 6 model calls (actor, critic, actor, critic, actor, critic).
- (b) Supervisor: the supervisor delegates once to a `coder` worker, the worker answers,
  the supervisor sums up. 3 model calls.

The fake model is stateless: it picks its reply from the request's text (the actor writes
the draft after the newest one quoted in its prompt; the critic scores the newest draft
quoted in its prompt), so one model object, built once, serves any number of concurrent
runs and no framework pays to rebuild scripts per run. Each reply bumps `CALLS`, and the
harness checks that every framework made exactly the model calls the scenario names.

Every framework's fake does the same work per call, as a real provider adapter would:
- it yields to the event loop once (`await asyncio.sleep(0)`), as a network read does, so
  "1,000 concurrent runs" really interleave instead of each running to completion in one
  step;
- it streams the reply as `chunks(text)`: one delta per call (`--stream one`, the default)
  or word by word (`--stream words`), so the per-event cost of each framework shows apart
  from its per-call cost;
- it reports the same usage (`USAGE`: input and output tokens), so no framework estimates
  tokens from the text.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

TASK = "Write a Python function add(a, b) that returns the sum of a and b."
DRAFTS = (
    "def add(a, b):\n    return a - b",
    "def add(a, b):\n    return a * b",
    "def add(a, b):\n    return a + b",
)
VERDICTS = (
    {"score": 0.2, "issues": ["subtracts instead of adding"], "summary": "wrong operator"},
    {"score": 0.4, "issues": ["multiplies instead of adding"], "summary": "still wrong"},
    {"score": 1.0, "issues": [], "summary": "correct"},
)
APPROVE_AT = 0.9
WORKER = "coder"
INSTRUCTIONS = "Write add(a, b) in Python and return only the code."
SUMMARY = "The coder wrote add(a, b):\n" + DRAFTS[2]

CALLS_A = 6
CALLS_B = 3
CALLS = 0
"""Model calls answered so far in this process (every fake reply counts one)."""

INPUT_TOKENS = 40
OUTPUT_TOKENS = 12
"""The usage every fake reports for every call (no framework estimates it)."""

STREAMS = ("one", "words")
STREAM = "one"
"""How the fakes stream a reply: "one" delta per call, or "words" (set by `--stream`)."""

_WORDS = re.compile(r"\s*\S+\s*|\s+")


def words(text: str) -> list[str]:
    """One word at a time, whitespace kept."""
    return _WORDS.findall(text)


def chunks(text: str) -> list[str]:
    """The deltas a streaming fake sends for `text`, as `--stream` says."""
    if STREAM == "words":
        return words(text)
    return [text] if text else []


async def provider_wait() -> None:
    """The fake's one trip through the event loop per call (a network read's, at zero latency)."""
    await asyncio.sleep(0)


def _newest_draft(prompt: str) -> int:
    """Index of the newest draft quoted in `prompt`, -1 if none."""
    for i in range(len(DRAFTS) - 1, -1, -1):
        if DRAFTS[i] in prompt:
            return i
    return -1


def actor_reply(prompt: str) -> str:
    """The next draft: the first for a fresh task, the one after the draft under revision."""
    global CALLS
    CALLS += 1
    return DRAFTS[min(_newest_draft(prompt) + 1, len(DRAFTS) - 1)]


def critic_reply(prompt: str) -> str:
    """The verdict (JSON text) for the newest draft in the critique prompt."""
    global CALLS
    CALLS += 1
    index = _newest_draft(prompt)
    if index < 0:
        raise AssertionError(f"the critic was asked about no known draft: {prompt[:200]!r}")
    return json.dumps(VERDICTS[index])


def verdict_for(text: str) -> dict[str, Any]:
    """Parse the critic's reply the way a hand-written loop would."""
    data: dict[str, Any] = json.loads(text)
    return data


def worker_reply() -> str:
    global CALLS
    CALLS += 1
    return DRAFTS[2]


def supervisor_reply(has_result: bool) -> dict[str, str] | str:
    """First turn: a delegate call (its arguments); once the worker's result is in: the summary."""
    global CALLS
    CALLS += 1
    if has_result:
        return SUMMARY
    return {"worker": WORKER, "instructions": INSTRUCTIONS}


def critique_prompt(task: str, output: str) -> str:
    return f"Review this answer to the task.\nTask: {task}\nAnswer:\n{output}\nReply with JSON: score, issues, summary."


def refine_prompt(task: str, output: str, verdict: Mapping[str, Any]) -> str:
    issues = "\n".join(f"- {i}" for i in verdict.get("issues", []))
    return f"Task: {task}\nYour previous answer:\n{output}\nA reviewer found:\n{issues}\nRevise it."


Stream = Callable[[str], Awaitable[tuple[Any, int]]]
"""Run one agent on a prompt through the framework's stream: (its output, events read)."""


async def two_agent_loop(actor: Stream, critic: Stream) -> int:
    """(a) for frameworks without an ActorCritic: an actor agent and a critic agent in a loop.

    `critic` returns the verdict as a pydantic model (or a dict) with `score` and
    `issues`. Returns the events read over the whole loop.
    """
    prompt, events = TASK, 0
    best, best_score = "", -1.0
    for _ in range(3):
        draft, n = await actor(prompt)
        events += n
        reply, n = await critic(critique_prompt(TASK, draft))
        verdict: dict[str, Any] = reply.model_dump() if hasattr(reply, "model_dump") else reply
        events += n
        if verdict["score"] >= best_score:
            best, best_score = draft, verdict["score"]
        if verdict["score"] >= APPROVE_AT:
            break
        prompt = refine_prompt(TASK, draft, verdict)
    assert best == DRAFTS[2], best
    return events


# -- measuring ---------------------------------------------------------------------------

Loop = Callable[[], Awaitable[int]]
"""One full scenario run; returns how many events the consumer read (0 when none)."""


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux


async def time_loop(loop: Loop, calls: int, *, runs: int, budget_s: float, warmup: int) -> dict[str, Any]:
    """Median wall time of sequential runs, after a warm-up (lazy imports, schema builds)."""
    global CALLS
    for _ in range(warmup):
        await loop()
    CALLS = 0
    samples: list[float] = []
    cpu: list[float] = []
    events = 0
    deadline = time.perf_counter() + budget_s
    while len(samples) < runs and (len(samples) < 20 or time.perf_counter() < deadline):
        t, c = time.perf_counter(), time.thread_time()
        events = await loop()
        samples.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    made = CALLS / len(samples)
    if made != calls:
        raise AssertionError(f"expected {calls} model calls per run, the fake model saw {made}")
    quantiles = statistics.quantiles(samples, n=10)
    return {
        "median_us": statistics.median(samples) * 1e6,
        "p10_us": quantiles[0] * 1e6,
        "p90_us": quantiles[-1] * 1e6,
        "cpu_median_us": statistics.median(cpu) * 1e6,
        "runs": len(samples),
        "events": events,
        "model_calls": calls,
    }


async def at_once(loop: Loop, n: int) -> list[int]:
    """Start `n` runs together and wait for all. Plain asyncio, not anyio: this file is
    stdlib-only (it runs in every peer's venv) and the floor must not pay for a task group."""
    return await asyncio.gather(*(loop() for _ in range(n)))  # noqa: TID251


async def concurrent(
    loop: Loop, n: int, *, repeats: int = 3, traced_budget_s: float = 30.0
) -> dict[str, Any]:
    """`n` runs at once: wall time (median of `repeats` when quick), peak RSS, traced peak.

    The traced batch runs several times slower than the plain one; it is skipped (and
    the reason recorded) when the plain batch alone took over `traced_budget_s`.
    """
    global CALLS
    for _ in range(10):
        await loop()
    gc.collect()
    rss_before = _rss_mb()
    CALLS = 0
    walls: list[float] = []
    events: list[int] = []
    for _ in range(repeats):
        t = time.perf_counter()
        events = await at_once(loop, n)
        walls.append(time.perf_counter() - t)
        if len(walls) == 1:
            peak_rss = _peak_rss_mb()
        if walls[-1] > 2.0:
            break
    if CALLS != CALLS_A * n * len(walls):
        raise AssertionError(f"expected {CALLS_A * n * len(walls)} model calls, the fake model saw {CALLS}")
    traced_peak: float | None = None
    retained: list[float] = []
    skipped = ""
    if walls[0] <= traced_budget_s:
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        await at_once(loop, n)
        traced_peak = (tracemalloc.get_traced_memory()[1] - base) / 1e6
        # Retention: 10 batches of n/10 runs; what stays traced after each (after a
        # collection) should be a flat line: a finished run keeps nothing.
        for _ in range(10):
            await at_once(loop, max(1, n // 10))
            gc.collect()
            retained.append((tracemalloc.get_traced_memory()[0] - base) / 1e3)
        tracemalloc.stop()
    else:
        skipped = (
            f"the plain batch took {walls[0]:.0f} s (over {traced_budget_s:.0f} s); run bench/run.py --full"
        )
    return {
        "n": n,
        "wall_ms": statistics.median(walls) * 1e3,
        "walls_ms": [w * 1e3 for w in walls],
        "rss_peak_mb": peak_rss,
        "rss_growth_mb": peak_rss - rss_before,
        "traced_peak_mb": traced_peak,
        "traced_skipped": skipped,
        "retained_kb": retained,
        "retained_bytes_per_run": (
            (retained[-1] - retained[0]) * 1e3 / (9 * max(1, n // 10)) if len(retained) == 10 else None
        ),
        "events_per_run": events[0] if events else 0,
    }


def main(
    loops: Mapping[str, tuple[Loop, int]],
    versions: Mapping[str, str],
    *,
    notes: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
) -> None:
    """Command line of every scenario script; prints one JSON object on stdout.

    `loops` maps a scenario ("a", "b") to its loop and its number of model calls.
    `--mode loops` times each loop; `--mode concurrent` runs scenario (a) `--n` times at
    once (call it in a fresh process: peak RSS is the process's high-water mark).
    """
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["loops", "concurrent"], default="loops")
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--budget-s", type=float, default=4.0)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--traced-budget-s", type=float, default=30.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--stream", choices=STREAMS, default="one", help="deltas per reply")
    args = parser.parse_args()
    global STREAM
    STREAM = args.stream
    out: dict[str, Any] = {
        "versions": dict(versions),
        "python": sys.version.split()[0],
        "notes": dict(notes or {}),
        "errors": dict(errors or {}),
        "stream": STREAM,
    }
    if args.mode == "loops":

        async def go() -> None:
            for name, (loop, calls) in loops.items():
                if args.only and name not in args.only.split(","):
                    continue
                out[name] = await time_loop(
                    loop, calls, runs=args.runs, budget_s=args.budget_s, warmup=args.warmup
                )

        asyncio.run(go())
    else:
        out["c"] = asyncio.run(concurrent(loops["a"][0], args.n, traced_budget_s=args.traced_budget_s))
    print(json.dumps(out))


def fail_part(part: str, message: str, versions: Mapping[str, str]) -> None:
    """Print a result that says why scenario `part` could not run, and exit."""
    print(json.dumps({"versions": dict(versions), "errors": {part: message}}))
    sys.exit(0)


def in_fresh_processes(script: str, args: list[str], processes: int) -> list[Any]:
    """What each of `processes` fresh runs of `script` with `args` prints last, as JSON, one
    process after the other: for a ratio that moves with the process as much as with the code.
    A run that fails ends the bench, with the tail of its stderr."""
    printed = []
    for _ in range(processes):
        done = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{Path(script).stem}: a measuring process failed:\n{done.stderr[-3000:]}")
        printed.append(json.loads(done.stdout.splitlines()[-1]))
    return printed


def trees_in_turns(
    trees: Mapping[str, str],
    cases: Sequence[str],
    rounds: int,
    argv: Callable[[str, str], list[str]],
    doing: str,
) -> dict[str, dict[str, list[Any]]]:
    """Each case measured in a fresh process per jeeves tree (`trees`: name -> its path, put on
    PYTHONPATH), `argv(name, case)` the script and its arguments, the trees taking turns round
    by round, so a change in the machine's load falls on all of them alike: what each process
    prints last, as JSON, by tree and case. A process that fails ends the bench, saying which
    tree failed `doing` what, with the tail of its stderr."""
    samples: dict[str, dict[str, list[Any]]] = {name: {case: [] for case in cases} for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
            for case in cases:
                done = subprocess.run(
                    [sys.executable, *argv(name, case)], env=env, capture_output=True, text=True
                )
                if done.returncode != 0:
                    sys.exit(f"error: {name} ({tree}) failed to {doing}:\n{done.stderr[-2000:]}")
                samples[name][case].append(json.loads(done.stdout.splitlines()[-1]))
    return samples


def write_table(out: str | None, lines: list[str], samples: object) -> None:
    """Print a bench's markdown `lines`; with `out`, also write them there, followed by the
    JSON of every sample they were made from."""
    print("\n".join(lines))
    if out:
        Path(out).write_text("\n".join([*lines, "", "```json", json.dumps(samples, indent=1), "```", ""]))
