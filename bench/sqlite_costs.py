"""Where a SQLite-journaled step's CPU goes (issue 33, target 2), split into its parts.

The tool-using Agent of `journal_turns.py` (a FunctionModel answering at once, a 200-byte
tool result every turn: a model step and a tool step per model call) at 200 turns, per
model call, with five journals side by side in one process, round by round (so a change in
the machine's load falls on all of them alike), best of `--rounds`:

- `bare`: no journal;
- `memory`: `MemoryJournal`, whose write never suspends the run;
- `memory, yielding`: the same, yielding to the event loop once per step written: what a
  store that writes off the event loop would pay for the suspension alone;
- `sqlite`: `SQLiteJournal`, which commits each write on the event loop's own thread
  (`jeeves.journal.sqlite`: never waiting there for a lock or a checkpoint);
- `sqlite, no SQL`: the same with its transaction skipped: what the store costs around
  the database;
- `memory, no keys`, `memory, no records`, `memory, neither`: the memory journal with a
  part of the step path taken out while that row runs (the kernel's own functions
  replaced, then put back): each step's request key (its fingerprint and stored form: a
  constant instead), its record (built, encoded and stored: nothing written), or both.
  What each row saves against `memory` is what that part costs in the run, with the
  caches as the rest of the run leaves them; `memory, neither` is the journaled path's
  bookkeeping alone. These rows journal nothing a replay could use: they explain a
  cost, they are not a journal.

Each row: CPU time per model call (the process's, the checkpoint thread included), its ratio
to `bare`, and the context switches per call (`getrusage`: voluntary, involuntary).

One process's ratios move with the process (the machine's speed at the time, and where the
process's objects and code landed): `--processes N` runs the whole measurement in N fresh
processes, one after the other, and reports each row's median ratio over them, with the
lowest and highest.

    python bench/sqlite_costs.py [--rounds 5] [--turns 200] [--processes 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))

import common  # noqa: E402
import journal_turns  # noqa: E402

from jeeves._run import steps  # noqa: E402
from jeeves.journal.delta import StepKey  # noqa: E402
from jeeves.journal.memory import MemoryJournal  # noqa: E402
from jeeves.journal.records import StepRecord  # noqa: E402
from jeeves.journal.sqlite import SQLiteJournal  # noqa: E402


class Yielding(MemoryJournal):
    """A memory journal whose step write yields to the event loop once, as a write off the loop does."""

    async def put_step(self, record: StepRecord) -> None:
        await super().put_step(record)
        await asyncio.sleep(0)


class NoSQL(SQLiteJournal):
    """The store without the database: each write is taken as committed, no statement runs."""

    def _transaction(self, conn: Any, writes: list[Any]) -> None:
        return None


_KEY = StepKey("0" * 64, None, lambda: None)
"""What `memory, no keys` gives every step for its key: no fingerprint, no stored request."""


async def _unwritten(put: Any, record: Any) -> None:
    return None


_SKIPPED: dict[str, dict[str, Any]] = {
    "keys": {"recordable": lambda session, index, request: _KEY},
    "records": {"live_record": lambda *args, **fields: None, "put_whole": _unwritten},
}


@contextmanager
def _without(*parts: str) -> Iterator[None]:
    """The journaled step path (`jeeves._run.steps`) with `parts` taken out, put back after."""
    replaced = {name: fn for part in parts for name, fn in _SKIPPED[part].items()}
    kept = {name: getattr(steps, name) for name in replaced}
    for name, fn in replaced.items():
        setattr(steps, name, fn)
    try:
        yield
    finally:
        for name, fn in kept.items():
            setattr(steps, name, fn)


KINDS = (
    "bare",
    "memory",
    "memory, yielding",
    "sqlite",
    "sqlite, no SQL",
    "memory, no keys",
    "memory, no records",
    "memory, neither",
)
_PARTS = {
    "memory, no keys": ("keys",),
    "memory, no records": ("records",),
    "memory, neither": ("keys", "records"),
}


def _journals(folder: Path) -> dict[str, Any]:
    journals: dict[str, Any] = {
        "bare": None,
        "memory": MemoryJournal(),
        "memory, yielding": Yielding(),
        "sqlite": SQLiteJournal(folder / "sqlite.db"),
        "sqlite, no SQL": NoSQL(folder / "nosql.db"),
    }
    return journals | {kind: MemoryJournal() for kind in _PARTS}


async def measure(rounds: int, turns: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as scratch:
        journals = _journals(Path(scratch))
        for n, kind in enumerate(KINDS):
            with _without(*_PARTS.get(kind, ())):
                await journal_turns._one(kind, journals[kind], 25, f"warm-{n}")  # imports, caches, tables
        best: dict[str, dict[str, float]] = {}
        for round_ in range(rounds):
            for n, kind in enumerate(KINDS):
                journal = journals[kind]
                with _without(*_PARTS.get(kind, ())):
                    before = resource.getrusage(resource.RUSAGE_SELF)
                    got = await journal_turns._one(kind, journal, turns, f"k{n}-{round_}")
                    after = resource.getrusage(resource.RUSAGE_SELF)
                row = {
                    "cpu": got["cpu"],
                    "voluntary": (after.ru_nvcsw - before.ru_nvcsw) / turns,
                    "involuntary": (after.ru_nivcsw - before.ru_nivcsw) / turns,
                }
                if kind not in best or row["cpu"] < best[kind]["cpu"]:
                    best[kind] = row
        for journal in journals.values():
            if journal is not None:
                await journal.aclose()
    return best


def _table(best: dict[str, dict[str, float]]) -> str:
    bare = best["bare"]["cpu"]
    lines = [
        "| journal | CPU µs/call | × bare | switches/call (vol, invol) |",
        "|---|--:|--:|--:|",
    ]
    for kind in KINDS:
        row = best[kind]
        lines.append(
            f"| {kind} | {row['cpu']:,.0f} | {row['cpu'] / bare:.2f} | "
            f"{row['voluntary']:.1f}, {row['involuntary']:.1f} |"
        )
    return "\n".join(lines)


def _spread(runs: list[dict[str, dict[str, float]]]) -> str:
    """Each row's ratio to `bare` over the processes: median, lowest, highest."""
    lines = ["| journal | × bare, median | lowest | highest |", "|---|--:|--:|--:|"]
    for kind in KINDS:
        ratios = [run[kind]["cpu"] / run["bare"]["cpu"] for run in runs]
        lines.append(f"| {kind} | {statistics.median(ratios):.2f} | {min(ratios):.2f} | {max(ratios):.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--processes", type=int, default=1, help="fresh processes to measure in, in turn")
    parser.add_argument("--json", action="store_true", help="print the best rows as JSON (one process)")
    args = parser.parse_args()
    if args.processes == 1:
        best = asyncio.run(measure(args.rounds, args.turns))
        if args.json:
            print(json.dumps(best))
            return
        print(f"CPU per model call at {args.turns} turns, best of {args.rounds} rounds:\n")
        print(_table(best))
        return
    measured = ["--rounds", str(args.rounds), "--turns", str(args.turns), "--json"]
    runs = common.in_fresh_processes(__file__, measured, args.processes)
    print(
        f"CPU per model call at {args.turns} turns, best of {args.rounds} rounds, in {args.processes} processes:\n"
    )
    print(_spread(runs))


if __name__ == "__main__":
    main()
