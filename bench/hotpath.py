"""Instruction-stable measures of the (a) loop, for a shared machine (issue 14).

`python bench/hotpath.py --loops N [--mode stream|run]` runs N sequential (a) loops after
a warm-up; under `valgrind --tool=callgrind` the difference between two N gives the
instructions per loop, free of start-up and of other processes' load.
`--calls` prints the Python calls per loop (cProfile, the difference between 120 and 20
loops); `--time` prints the median µs per loop against the floor; `--concurrent` runs
1,000 loops at once (wall and tracemalloc peak, as bench (c)).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import inspect
import json
import pstats
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))

import common  # noqa: E402
import floor  # noqa: E402
import jeeves_scenarios as js  # noqa: E402

import jeeves  # noqa: E402


async def loop_run() -> int:
    await jeeves.run(js.ARCHS["a"], common.TASK, model=js.MODEL)
    return 0


def pick(mode: str) -> Any:
    js.build()
    return js.loop_a if mode == "stream" else loop_run


async def loops(loop: Any, n: int) -> None:
    for _ in range(n):
        await loop()


def calls_per_loop(loop: Any) -> float:
    asyncio.run(loops(loop, 20))  # warm-up
    counts = []
    for n in (20, 120):
        profile = cProfile.Profile()
        profile.enable()
        asyncio.run(loops(loop, n))
        profile.disable()
        counts.append(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]
    return (counts[1] - counts[0]) / 100


async def in_flight(loop: Any, n: int) -> dict[str, float]:
    """`n` loops at once: wall, traced peak per run, and the coroutines alive per run at the
    moment every run waits in its first model call (the fake's one yield)."""
    for _ in range(10):
        await loop()
    gc.collect()
    counted: list[int] = []

    async def count() -> None:
        await asyncio.sleep(0)  # every run has started and reached its first model call
        await asyncio.sleep(0)
        counted.append(sum(1 for o in gc.get_objects() if inspect.iscoroutine(o)))

    t = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(n)), count())  # noqa: TID251
    wall = time.perf_counter() - t
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    await asyncio.gather(*(loop() for _ in range(n)))  # noqa: TID251
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return {
        "wall_ms": wall * 1e3,
        "traced_peak_mb": peak / 1e6,
        "traced_kib_per_run": peak / n / 1024,
        "coroutines_per_run": counted[0] / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loops", type=int, default=20)
    parser.add_argument("--mode", choices=("stream", "run"), default="stream")
    parser.add_argument("--calls", action="store_true")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--concurrent", action="store_true")
    parser.add_argument("--n", type=int, default=1000, help="runs at once for --concurrent")
    args = parser.parse_args()
    loop = pick(args.mode)
    if args.calls:
        print(f"python calls per loop: {calls_per_loop(loop):.0f}")
    elif args.time:

        async def both() -> tuple[dict[str, Any], dict[str, Any]]:
            j = await common.time_loop(loop, common.CALLS_A, runs=2000, budget_s=4.0, warmup=50)
            f = await common.time_loop(floor.actor_critic, common.CALLS_A, runs=2000, budget_s=2.0, warmup=50)
            return j, f

        j, f = asyncio.run(both())
        per_call = (j["median_us"] - f["median_us"]) / common.CALLS_A
        cpu_call = (j["cpu_median_us"] - f["cpu_median_us"]) / common.CALLS_A
        print(
            f"µs per loop {j['median_us']:.1f}, floor {f['median_us']:.1f}, overhead per call {per_call:.1f}"
            f" (CPU time: loop {j['cpu_median_us']:.1f}, overhead per call {cpu_call:.1f})"
        )
    elif args.concurrent:
        print(json.dumps(asyncio.run(in_flight(loop, args.n))))
    else:
        asyncio.run(loops(loop, 5))
        asyncio.run(loops(loop, args.loops))


if __name__ == "__main__":
    main()
