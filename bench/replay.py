"""Replay vs live: the same recorded run, run live with a scripted model and replayed offline.

The run is a Supervisor with two parallel workers, an ActorCritic coder (two rounds, an
LLM critic and a function critic) and a tool-using agent: 9 model calls, 5 tool calls
and a function step, 11 sessions. "live" runs it with scripted models and records it;
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
from jeeves import ActorCritic, Agent, FunctionModel, Supervisor, tool  # noqa: E402
from jeeves.critics import LLMCritic  # noqa: E402
from jeeves.messages import ModelRequest  # noqa: E402
from jeeves.replay import JournalStore, JSONLJournal, MemoryJournal, SQLiteJournal  # noqa: E402
from jeeves.testing import Reply, call  # noqa: E402

TASK = "Write add(a, b) and add up some numbers."


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _last_user(request: ModelRequest) -> str:
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


def _coordinate(request: ModelRequest) -> Reply:
    if not any(m.role == "assistant" for m in request.messages):
        return Reply(
            text="Splitting the work.",
            tool_calls=[
                call("delegate", {"worker": "coder", "instructions": "Write add(a, b)."}),
                call("delegate", {"worker": "helper", "instructions": "Add 1+2, 3+4, 5+6."}),
            ],
        )
    return Reply(text="done: " + " | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def _code(request: ModelRequest) -> str:
    return (
        "def add(a, b): return a + b" if "subtracts" in _last_user(request) else "def add(a, b): return a - b"
    )


def _review(request: ModelRequest) -> str:
    if "a - b" in _last_user(request):
        return '{"score": 0.2, "issues": ["it subtracts"], "summary": "wrong sign"}'
    return '{"score": 1.0, "issues": [], "summary": "correct"}'


def _help(request: ModelRequest) -> Reply:
    turn = sum(1 for m in request.messages if m.role == "assistant")
    if turn == 0:
        return Reply(tool_calls=[call("add", {"a": a, "b": a + 1}) for a in (1, 3, 5)])
    if turn == 1:
        return Reply(tool_calls=[call("add", {"a": 3, "b": 7}), call("add", {"a": 10, "b": 11})])
    return Reply(text="The sums are 3, 7 and 11; in all 21.")


def team() -> Supervisor:
    coder = ActorCritic(Agent("You write code."), [LLMCritic(), _passes], max_rounds=2)
    return Supervisor({"coder": coder, "helper": Agent("You add numbers.", tools=[add])})


def _passes(task: str, output: str) -> bool:
    return "a + b" in output


def models(latency: float) -> dict[str, FunctionModel]:
    def slow(fn: Callable[[ModelRequest], str | Reply]) -> Callable[[ModelRequest], object]:
        async def answer(request: ModelRequest) -> str | Reply:
            if latency:
                await asyncio.sleep(latency)
            return fn(request)

        return answer

    return {
        role: FunctionModel(slow(fn))  # type: ignore[arg-type]
        for role, fn in (
            ("supervisor", _coordinate),
            ("actor", _code),
            ("critic", _review),
            ("helper", _help),
        )
    }


async def live(journal: JournalStore, session_id: str, latency: float) -> float:
    t = time.perf_counter()
    await jeeves.run(team(), TASK, models=models(latency), journal=journal, session_id=session_id)
    return time.perf_counter() - t


async def replay(journal: JournalStore, session_id: str) -> float:
    t = time.perf_counter()
    await jeeves.replay(team(), journal, session_id)
    return time.perf_counter() - t


async def measure(make: Callable[[], JournalStore], runs: int, latency: float) -> tuple[float, float]:
    journal = make()
    try:
        for i in range(5):  # warm up
            await live(journal, f"warm-{i}", latency)
            await replay(journal, f"warm-{i}")
        lives, replays = [], []
        for i in range(runs):
            lives.append(await live(journal, f"run-{i}", latency))
            replays.append(await replay(journal, f"run-{i}"))
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
            f"supervisor + actor-critic team: 9 model calls, 11 sessions; {args.runs} runs, "
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
