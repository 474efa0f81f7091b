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
  the database.

Each row: CPU time per model call (the process's, the checkpoint thread included), its ratio
to `bare`, and the context switches per call (`getrusage`: voluntary, involuntary).

    python bench/sqlite_costs.py [--rounds 5] [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))

import journal_turns  # noqa: E402

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


KINDS = ("bare", "memory", "memory, yielding", "sqlite", "sqlite, no SQL")


def _journals(folder: Path) -> dict[str, Any]:
    return {
        "bare": None,
        "memory": MemoryJournal(),
        "memory, yielding": Yielding(),
        "sqlite": SQLiteJournal(folder / "sqlite.db"),
        "sqlite, no SQL": NoSQL(folder / "nosql.db"),
    }


async def measure(rounds: int, turns: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as scratch:
        journals = _journals(Path(scratch))
        for n, kind in enumerate(KINDS):
            await journal_turns._one(kind, journals[kind], 25, f"warm-{n}")  # imports, caches, tables
        best: dict[str, dict[str, float]] = {}
        for round_ in range(rounds):
            for n, kind in enumerate(KINDS):
                journal = journals[kind]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    best = asyncio.run(measure(args.rounds, args.turns))
    print(f"CPU per model call at {args.turns} turns, best of {args.rounds} rounds:\n")
    print(_table(best))


if __name__ == "__main__":
    main()
