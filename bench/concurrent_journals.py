"""(cj) 1,000 concurrent (a) runs, journaled: no journal, a memory journal and a SQLite
journal side by side in one process (issue 33, target 4).

Each round runs one batch of each variant, in turn (so a noisy moment on this shared machine
lands on every variant), and a variant's figure is the median over the rounds: wall time,
and CPU time of the whole process (the SQLite store's threads included), which other
processes do not inflate. All batches of a variant share one journal (a memory journal, a
SQLite file), as the runs of one server do. Then one traced batch per variant, on a new
journal: tracemalloc's peak above the baseline per run in flight, and what the journal still
holds once the batch ended (its records: the memory journal keeps them, by design).

A fourth variant, a memory journal whose every write yields to the event loop once (as a
write off the loop does, so concurrent runs interleave at each write), tells what any store
that writes off the event loop pays for the suspension alone (more runs' objects alive at
each collection) from what the SQLite store itself costs.

Also reported: the collector's share of the wall time (`gc.callbacks`), its collections per
batch and the objects it found unreachable per run (what only reference cycles held), and for SQLite how
many transactions the writes took (`jeeves.journal.sqlite`: committed on the event loop's
thread, so their CPU time is the batch's).

One process's ratios move with the process as much as with the code (the bare batch alone
read 1.85-2.64 s over a day's runs of one tree, stop 41): `--processes N` runs the whole
measurement in N fresh processes, one after the other, and prints each variant's CPU and
wall ratio to `bare` in each, with their median, lowest and highest.

Run: `python bench/concurrent_journals.py [--n 1000] [--rounds 3] [--processes 1]` (prints
JSON), or through `bench/jeeves_scenarios.py --mode concurrent-journals`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))

import common  # noqa: E402
import jeeves_scenarios as js  # noqa: E402

import jeeves  # noqa: E402
from jeeves.journal.memory import MemoryJournal  # noqa: E402
from jeeves.journal.records import SessionRecord, StepRecord  # noqa: E402
from jeeves.journal.sqlite import SQLiteJournal  # noqa: E402

VARIANTS = ("bare", "memory journal", "memory journal, yielding", "sqlite journal")


class YieldingMemory(MemoryJournal):
    """A memory journal whose writes each yield to the event loop once, as a store's that
    writes off the loop do."""

    async def put_step(self, record: StepRecord) -> None:
        await super().put_step(record)
        await asyncio.sleep(0)

    async def put_session(self, record: SessionRecord) -> None:
        await super().put_session(record)
        await asyncio.sleep(0)


class CountingSQLite(SQLiteJournal):
    """A SQLite journal that counts its transactions and the writes they held (committed on
    the event loop's thread: their CPU time is the batch's)."""

    transactions = 0
    writes = 0

    def _commit(self, writes: list[Any]) -> None:
        type(self).transactions += 1
        type(self).writes += len(writes)
        super()._commit(writes)


class GcClock:
    """Time spent in the cyclic collector while on, and what it found unreachable (objects
    only reference cycles held)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.collections = 0
        self.collected = 0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start
            self.collections += 1
            self.collected += info["collected"]


def _journal(variant: str, folder: str) -> Any:
    if variant == "memory journal":
        return MemoryJournal()
    if variant == "memory journal, yielding":
        return YieldingMemory()
    if variant == "sqlite journal":
        return CountingSQLite(f"{folder}/{time.monotonic_ns()}.db")
    return None


def _loop(journal: Any) -> Callable[[], Awaitable[int]]:
    arch = js.ARCHS["a"]

    async def once() -> int:
        count = 0
        async with jeeves.stream(arch, common.TASK, model=js.MODEL, journal=journal) as events:
            async for _ in events:
                count += 1
        return count

    return once


async def _batch(loop: Callable[[], Awaitable[int]], n: int) -> None:
    common.CALLS = 0
    await common.at_once(loop, n)
    if common.CALLS != common.CALLS_A * n:
        raise AssertionError(f"expected {common.CALLS_A * n} model calls, the fake saw {common.CALLS}")


async def _traced(variant: str, folder: str, n: int) -> dict[str, float]:
    journal = _journal(variant, folder)
    loop = _loop(journal)
    for _ in range(5):  # warm-up: the file, the tables, lazy imports
        await loop()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    await _batch(loop, n)
    peak = tracemalloc.get_traced_memory()[1] - base
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    if journal is not None:
        await journal.aclose()
    return {
        "traced_peak_mb": peak / 1e6,
        "kib_per_run_in_flight": peak / n / 1024,
        "kept_by_journal_kib_per_run": kept / n / 1024,
    }


async def measure(n: int, rounds: int) -> dict[str, Any]:
    folder = tempfile.mkdtemp()
    journals = {v: _journal(v, folder) for v in VARIANTS}
    loops = {v: _loop(journals[v]) for v in VARIANTS}
    for loop in loops.values():
        for _ in range(10):
            await loop()
    walls: dict[str, list[float]] = {v: [] for v in VARIANTS}
    cpus: dict[str, list[float]] = {v: [] for v in VARIANTS}
    gcs: dict[str, list[float]] = {v: [] for v in VARIANTS}
    found: dict[str, list[tuple[int, int]]] = {v: [] for v in VARIANTS}
    CountingSQLite.transactions = CountingSQLite.writes = 0
    for _ in range(rounds):
        for variant, loop in loops.items():
            gc.collect()
            clock = GcClock()
            gc.callbacks.append(clock)
            t, c = time.perf_counter(), time.process_time()
            await _batch(loop, n)
            walls[variant].append(time.perf_counter() - t)
            cpus[variant].append(time.process_time() - c)
            gc.callbacks.remove(clock)
            gcs[variant].append(clock.total)
            found[variant].append((clock.collections, clock.collected))
    for journal in journals.values():
        if journal is not None:
            await journal.aclose()
    bare_wall, bare_cpu = statistics.median(walls["bare"]), statistics.median(cpus["bare"])
    rows: dict[str, Any] = {}
    for variant in VARIANTS:
        wall, cpu = statistics.median(walls[variant]), statistics.median(cpus[variant])
        rows[variant] = {
            "wall_ms": wall * 1e3,
            "walls_ms": [w * 1e3 for w in walls[variant]],
            "cpu_ms": cpu * 1e3,
            "wall_x_bare": wall / bare_wall,
            "cpu_x_bare": cpu / bare_cpu,
            "gc_share": statistics.median(g / w for g, w in zip(gcs[variant], walls[variant], strict=True)),
            "gc_collections": statistics.median(c for c, _ in found[variant]),
            "gc_collected_per_run": statistics.median(k for _, k in found[variant]) / n,
        }
    runs = n * rounds
    rows["sqlite journal"]["writes_per_run"] = CountingSQLite.writes / runs
    rows["sqlite journal"]["transactions_per_run"] = CountingSQLite.transactions / runs
    for variant in VARIANTS:
        rows[variant].update(await _traced(variant, folder, n))
    return {"n": n, "rounds": rounds, "rows": rows}


def spread(n: int, rounds: int, processes: int) -> dict[str, Any]:
    """Each variant's ratios to `bare` (CPU, wall) in each of `processes` fresh processes,
    with their median, lowest and highest."""
    printed = common.in_fresh_processes(__file__, ["--n", str(n), "--rounds", str(rounds)], processes)
    runs = [each["cj"]["rows"] for each in printed]
    out: dict[str, Any] = {"n": n, "rounds": rounds, "processes": processes}
    for ratio in ("cpu_x_bare", "wall_x_bare"):
        out[ratio] = {}
        for variant in VARIANTS:
            each = [run[variant][ratio] for run in runs]
            out[ratio][variant] = {
                "median": statistics.median(each),
                "lowest": min(each),
                "highest": max(each),
                "each": each,
            }
    return out


def main(versions: dict[str, str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="concurrent-journals")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=1, help="fresh processes to measure in, in turn")
    args, _ = parser.parse_known_args()
    if args.processes > 1:
        print(json.dumps({"versions": versions or {}, "spread": spread(args.n, args.rounds, args.processes)}))
        return
    js.build()
    out = asyncio.run(measure(args.n, args.rounds))
    print(json.dumps({"versions": versions or {}, "cj": out}))


if __name__ == "__main__":
    main()
