"""A long run's footprint grows linearly with its turns in every place that keeps it.

Each test runs an agent that calls a tool every turn (a 200-byte result) for N and then 2N
turns and compares what a store holds, in bytes or objects, never in time: linear is
about 2x at twice the turns, and anything that keeps the conversation per turn (quadratic)
is about 4x. The bench with the figures at 100 to 600 turns is bench/long_runs.py.
"""

from __future__ import annotations

import gc
import io
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import jeeves
from jeeves import Agent, FunctionModel, tool
from jeeves.cli.terminal import SessionTree
from jeeves.events import Event, event_to_json
from jeeves.messages import ModelRequest
from jeeves.testing import Reply, call

pytestmark = pytest.mark.anyio

N = 60
LINEAR = 2.2
"""The most a store may grow from N to 2N turns."""


@tool
def step(n: int) -> str:
    """Take one step."""
    return "x" * 200


def long_agent(turns: int) -> Agent:
    def act(request: ModelRequest) -> Reply:
        done = sum(m.role == "tool" for m in request.messages)
        if done < turns - 1:
            return Reply(tool_calls=[call("step", {"n": done})])
        return Reply(text="All steps done.")

    return Agent("Take the steps one by one.", tools=[step], model=FunctionModel(act), max_turns=turns)


async def events_of(turns: int) -> list[Event]:
    async with jeeves.stream(long_agent(turns), "Go.", session_id="L") as run:
        return [event async for event in run]


def file_bytes(folder: Path, name: str) -> int:
    """Bytes of a SQLite file and its WAL, if any."""
    return sum(f.stat().st_size for f in folder.glob(name + "*"))


async def held(make: Any) -> int:
    """Bytes still allocated while what `make()` returns is held (tracemalloc), after a collection."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept = await make()
        gc.collect()
        size = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    del kept
    return size


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_each_event_is_its_own_size_not_the_conversations() -> None:
    sizes = {n: sum(len(event_to_json(e)) for e in await events_of(n)) for n in (N, 2 * N)}
    assert sizes[2 * N] <= LINEAR * sizes[N], sizes


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_terminal_tree_holds_a_bounded_node_per_session() -> None:
    async def fold(turns: int) -> SessionTree:
        tree = SessionTree()
        for event in await events_of(turns):
            tree.apply(event)
        Console(file=io.StringIO(), width=100).print(tree)
        return tree

    await fold(5)  # rich's first draw loads what it needs once
    sizes = {n: await held(lambda n=n: fold(n)) for n in (N, 2 * N)}
    assert sizes[2 * N] <= LINEAR * max(sizes[N], 1), sizes


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_server_runs_record_grows_with_its_events_only() -> None:
    from jeeves.server.runs import RunRegistry

    async def serve(turns: int) -> Any:
        async with RunRegistry() as runs:
            record = runs.start(long_agent(turns), "Go.", name="long", session_id="L")
            await record.wait()
            assert record.status == "completed"
            seq = 0
            while seq < record.last_seq:  # encoded for a follower, as the SSE route does
                _, seq = record.wire.chunk_after(seq)
            return record

    await serve(5)
    sizes = {n: await held(lambda n=n: serve(n)) for n in (N, 2 * N)}
    assert sizes[2 * N] <= LINEAR * sizes[N], sizes


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_event_log_stores_each_event_once_and_keeps_nothing_in_memory(tmp_path: Path) -> None:
    from jeeves.journal.eventlog_sql import SQLiteEventLog
    from jeeves.journal.recorder import EventRecorder

    async def record(turns: int) -> tuple[int, EventRecorder]:
        events = await events_of(turns)
        log = SQLiteEventLog(tmp_path / f"{turns}.db")
        recorder = EventRecorder(log, "L", architecture="long", task="Go.")
        await recorder.open()
        recorder.new_attempt()
        for event in events:
            recorder.add(event)
        await recorder.close("completed")
        stored = await log.after("L", 0, limit=10 * len(events))
        await log.aclose()
        assert len(stored) == len(events) and recorder.last_seq == len(events)
        return sum(len(event_to_json(e)) for e in stored), recorder

    sizes = {}
    for n in (N, 2 * N):
        sizes[n], recorder = await record(n)
        assert not recorder._queue  # flushed: the recorder holds no event once written
    assert sizes[2 * N] <= LINEAR * sizes[N], sizes
    files = {n: file_bytes(tmp_path, f"{n}.db") for n in (N, 2 * N)}
    assert files[2 * N] <= LINEAR * files[N], files
