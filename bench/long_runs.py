"""(lr) Long runs stay linear in memory: a 600-turn agent through every place that keeps a
run (issue 33, target 5).

The agent: a `FunctionModel` that answers every turn with one tool call, whose tool returns
200 bytes, until the last turn answers in text. For each length (100, 200, 400, 600 turns)
one run is streamed, and each consumer gets its events in a fresh tracemalloc window:

- `events`: the run's events in a list (what every consumer below starts from);
- `request log`: the server's per-run `RequestLog` (`jeeves.server.requests`), filled by
  its `RecordingTracer` during the run; and the JSON of `GET /runs/{id}/requests/{session}`,
  what the explorer reads for the session's node (each call as what it adds);
- `server record`: a `RunRegistry` running the agent as `jeeves serve` does (events, their
  encoded SSE lines, the request log), retained after the run ended;
- `terminal tree`: `jeeves.cli.terminal.SessionTree` fed every event, then drawn once;
- `event log`: an `EventRecorder` writing into a `SQLiteEventLog` (what a durable worker
  keeps in memory while it streams a run to the database), plus the file's bytes;
- `recorded run`: `JournalBrowser` (the explorer's journal browsing) replaying the run from
  a SQLite journal (its cached events) and reading the session's requests (`requests_*`);
  `journal_kb` is the journal file, whose step records hold each request whole.

Each row reports tracemalloc's peak above the baseline while the consumer works and what it
still holds afterwards, and the ratio of each figure between consecutive lengths against
the ratio of lengths: linear keeps the per-turn figure flat. Prints JSON; `--turns` picks the
lengths. Run: `python bench/long_runs.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(1, str(BENCH.parent))

import jeeves  # noqa: E402
from jeeves import Agent, FunctionModel, tool  # noqa: E402
from jeeves.events import Event  # noqa: E402
from jeeves.messages import ModelRequest  # noqa: E402
from jeeves.testing import Reply, call  # noqa: E402

TURNS = (100, 200, 400, 600)
RESULT = "x" * 200
ROOT = "long"


@tool
def step(n: int) -> str:
    """Take one step."""
    return RESULT


def long_agent(turns: int) -> Agent:
    def act(request: ModelRequest) -> Reply:
        done = sum(m.role == "tool" for m in request.messages)
        if done < turns - 1:
            return Reply(tool_calls=[call("step", {"n": done})])
        return Reply(text="All steps done.")

    return Agent("Take the steps one by one.", tools=[step], model=FunctionModel(act), max_turns=turns)


async def traced(work: Callable[[], Awaitable[Any]]) -> tuple[dict[str, float], Any]:
    """`work`'s traced peak above the baseline, and what stays traced while its result is held."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = await work()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"peak_kb": (peak - base) / 1e3, "held_kb": (current - base) / 1e3}, kept


async def events_of(turns: int) -> list[Event]:
    async with jeeves.stream(long_agent(turns), "Go.", session_id=ROOT) as run:
        return [event async for event in run]


async def request_log(turns: int) -> tuple[dict[str, float], dict[str, float]]:
    from jeeves.server.requests import RecordingTracer, RequestLog

    async def fill() -> RequestLog:
        log = RequestLog()
        await jeeves.run(long_agent(turns), "Go.", session_id=ROOT, tracer=RecordingTracer(log))
        return log

    stored, log = await traced(fill)
    # the run's own peak (its conversation) is in `peak`; what the log keeps is `held`

    async def read() -> int:  # what `GET /runs/{id}/requests/{session}` sends
        return len(json.dumps({"session_id": ROOT, "calls": log.deltas(ROOT), "dropped": log.dropped}))

    response, size = await traced(read)
    response["bytes"] = size
    return stored, response


async def server_record(turns: int) -> dict[str, float]:
    from jeeves.server.runs import RunRegistry

    async def serve() -> Any:
        async with RunRegistry() as runs:
            record = runs.start(long_agent(turns), "Go.", name="long", session_id=ROOT)
            await record.wait()
            assert record.status == "completed", record.summary()
            seq = 0
            while seq < record.last_seq:  # a follower read the whole run: its SSE lines are encoded
                _, seq = record.wire.chunk_after(seq)
            return record

    stats, _ = await traced(serve)
    return stats


async def terminal_tree(events: list[Event]) -> dict[str, float]:
    import io

    from rich.console import Console

    from jeeves.cli.terminal import SessionTree

    async def fold() -> SessionTree:
        tree = SessionTree()
        for event in events:
            tree.apply(event)
        Console(file=io.StringIO(), width=120).print(tree)
        return tree

    stats, _ = await traced(fold)
    return stats


async def event_log(events: list[Event], folder: str, turns: int) -> dict[str, float]:
    from jeeves.journal.eventlog_sql import SQLiteEventLog
    from jeeves.journal.recorder import EventRecorder

    path = Path(folder) / f"events-{turns}.db"

    async def record() -> None:
        log = SQLiteEventLog(path)
        recorder = EventRecorder(log, ROOT, architecture="long", task="Go.")
        await recorder.open()
        recorder.new_attempt()
        for event in events:
            recorder.add(event)
            if event.type not in ("model.delta", "progress"):
                await recorder.flush()
        await recorder.close("completed")
        await log.aclose()

    stats, _ = await traced(record)
    stats["file_kb"] = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e3
    return stats


async def recorded_run(folder: str, turns: int) -> dict[str, float]:
    from jeeves.journal.sqlite import SQLiteJournal
    from jeeves.server.recorded import JournalBrowser

    path = Path(folder) / f"journal-{turns}.db"
    async with SQLiteJournal(path) as journal:
        ref = {"kind": "served", "name": "long"}  # as `jeeves serve` records its runs
        await jeeves.run(long_agent(turns), "Go.", session_id=ROOT, journal=journal, architecture_ref=ref)
    agent = long_agent(turns)

    async def browse() -> JournalBrowser:
        browser = JournalBrowser(path, rebuild=lambda source: agent)
        replayed = await browser.events(ROOT)
        assert replayed["error"] is None, replayed["error"]
        return browser

    stats, browser = await traced(browse)

    async def read() -> int:
        return len(json.dumps({"calls": await browser.requests(ROOT)}))

    response, size = await traced(read)
    stats["requests_peak_kb"] = response["peak_kb"]
    stats["requests_bytes"] = size
    stats["journal_kb"] = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e3
    return stats


async def measure(turns: tuple[int, ...], *, warm: bool = True) -> dict[str, Any]:
    if warm:  # lazy imports, schema builds, rich's first draw: not part of any length's figure
        await measure((5, 10), warm=False)
    folder = tempfile.mkdtemp()
    rows: dict[str, dict[int, dict[str, float]]] = {}

    def put(name: str, n: int, stats: dict[str, float]) -> None:
        rows.setdefault(name, {})[n] = stats

    for n in turns:
        held, events = await traced(lambda n=n: events_of(n))
        put("events", n, {**held, "count": len(events)})
        stored, response = await request_log(n)
        put("request log", n, stored)
        put("request log: GET requests", n, response)
        put("server record", n, await server_record(n))
        put("terminal tree", n, await terminal_tree(events))
        put("event log", n, await event_log(events, folder, n))
        put("recorded run", n, await recorded_run(folder, n))
    return {"turns": list(turns), "rows": rows, "growth": growth(rows, turns)}


def growth(rows: dict[str, dict[int, dict[str, float]]], turns: tuple[int, ...]) -> dict[str, Any]:
    """Per row and figure: the figure's ratio from each length to the next, over the ratio of
    lengths (1.0: linear; 2.0 at a doubling: quadratic)."""
    out: dict[str, Any] = {}
    for name, by_n in rows.items():
        for key in by_n[turns[0]]:
            ratios = []
            for a, b in zip(turns, turns[1:], strict=False):
                x, y = by_n[a][key], by_n[b][key]
                ratios.append(round((y / x) / (b / a), 2) if x > 0 else None)
            out[f"{name}: {key}"] = ratios
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", default=",".join(map(str, TURNS)))
    args, _ = parser.parse_known_args()
    turns = tuple(int(t) for t in args.turns.split(","))
    print(json.dumps({"lr": asyncio.run(measure(turns))}))


if __name__ == "__main__":
    main()
