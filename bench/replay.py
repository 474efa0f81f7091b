"""Replay vs live: the same recorded run, run live with a scripted model and replayed offline.

The run is the one the replay tests check event for event (`tests/journal/archs.py`): a
Supervisor with two parallel workers, an ActorCritic coder (two rounds, an LLM critic
and a function critic) and a tool-using agent; 9 model calls, 7 sessions. "live" runs it with scripted models and records it;
"replay" serves every step from the journal. With an instant scripted model, live time
is jeeves' own cost, so the speed-up shows what serving a step costs next to running
it; `--latency` adds a sleep per model call, as a provider would, to show what a replay
saves in practice. Run: `python bench/replay.py [--runs N] [--latency SECONDS]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import jeeves  # noqa: E402
from jeeves.journal.jsonl import JSONLJournal  # noqa: E402
from jeeves.journal.memory import MemoryJournal  # noqa: E402
from jeeves.journal.sqlite import SQLiteJournal  # noqa: E402
from jeeves.journal.store import JournalStore  # noqa: E402
from jeeves.messages import ModelRequest, ModelResponse  # noqa: E402
from jeeves.models.base import DeltaSink, ModelClient  # noqa: E402
from tests.journal.archs import build_team, team_models  # noqa: E402

TASK = "add and count"


class Delayed:
    """A model client that waits `latency` seconds before answering, as a provider would."""

    def __init__(self, client: ModelClient, latency: float) -> None:
        self.client, self.latency = client, latency

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        if self.latency:
            await asyncio.sleep(self.latency)
        return await self.client.complete(request, on_delta=on_delta)


def models(latency: float) -> dict[str, ModelClient]:
    return {role: Delayed(client, latency) for role, client in team_models().items()}


async def live(journal: JournalStore, session_id: str, latency: float) -> float:
    t = time.perf_counter()
    await jeeves.run(build_team(), TASK, models=models(latency), journal=journal, session_id=session_id)
    return time.perf_counter() - t


async def replay(journal: JournalStore, session_id: str) -> float:
    t = time.perf_counter()
    await jeeves.replay(build_team(), journal, session_id)
    return time.perf_counter() - t


async def measure(
    make: Callable[[], JournalStore], runs: int, latency: float, replays_per_run: int = 5
) -> tuple[float, float]:
    """Median live run and median strict replay of the same recorded runs.

    The runs are recorded first and then replayed back to back (each `replays_per_run`
    times, a replay only reads), so each side is timed in its own steady state: a replay
    timed right after a live run's model waits starts with cold caches and an idle
    journal thread to wake, which moved a 50 ms-per-call replay by 1.5–3 ms here
    (bench/results/NOTES.md), more than the replay's own work changed.
    """
    journal = make()
    try:
        for i in range(5):  # warm up
            await live(journal, f"warm-{i}", latency)
            await replay(journal, f"warm-{i}")
        lives = [await live(journal, f"run-{i}", latency) for i in range(runs)]
        replays = [await replay(journal, f"run-{i}") for _ in range(replays_per_run) for i in range(runs)]
    finally:
        await journal.aclose()
    return statistics.median(lives), statistics.median(replays)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds of sleep per model call")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        stores: dict[str, Callable[[], JournalStore]] = {
            "memory": MemoryJournal,
            "jsonl": lambda: JSONLJournal(Path(scratch) / "runs.jsonl"),
            "sqlite": lambda: SQLiteJournal(Path(scratch) / "runs.db"),
        }
        print(
            f"supervisor + actor-critic team: 9 model calls, 7 sessions; {args.runs} runs, "
            f"{args.latency * 1000:.0f} ms per model call"
        )
        for name, make in stores.items():
            live_s, replay_s = asyncio.run(measure(make, args.runs, args.latency))
            print(
                f"  {name:<7} live (recording) {live_s * 1000:8.2f} ms   replay {replay_s * 1000:8.2f} ms   "
                f"speed-up {live_s / replay_s:6.1f}x"
            )


if __name__ == "__main__":
    main()
