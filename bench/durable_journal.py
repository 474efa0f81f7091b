"""The per-step cost of a journal store, through jeeves' journal store API, in one process.

For each store (memory, SQLite in a temp file, PostgreSQL on the bench's cluster):

- write: `put_step` of `steps` real records (the 4 model steps of a bench ActorCritic run,
  copied under new session ids), µs per record; each is committed before it returns;
- read cold: a new store object, then `get_step` of every record: the first read of a
  session loads its 4 steps in one query, the rest are served from that; µs per record;
- read warm: the same reads again on that object (served from its cache);
- loop: µs per `jeeves.run` of the bench ActorCritic with a zero-latency model, recording
  into the store (4 model steps and 5 sessions a run), next to no journal at all; the
  stores take turns run by run.

Medians of per-call wall times; the event loop is anyio on asyncio, as a worker's.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import durable_model

STEPS_PER_SESSION = durable_model.CALLS_PER_RUN


async def _templates() -> list[Any]:
    """The step records of one real run (zero-latency model, memory journal)."""
    import jeeves
    from jeeves.journal.memory import MemoryJournal

    store = MemoryJournal()
    await jeeves.run(durable_model.actor_critic(), "Write add(a, b)", journal=store, session_id="tpl-1")
    records = []
    for session in await store.sessions():
        for index in await store.step_indices(session.session_id):
            record = await store.get_step(session.session_id, index)
            assert record is not None
            records.append(record)
    if len(records) != STEPS_PER_SESSION:
        raise RuntimeError(f"expected {STEPS_PER_SESSION} steps in a run, found {len(records)}")
    return records


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": statistics.median(ordered) * 1e6,
        "p90_us": ordered[int(len(ordered) * 0.9) - 1 if len(ordered) >= 10 else -1] * 1e6,
        "mean_us": statistics.fmean(ordered) * 1e6,
        "n": len(ordered),
    }


async def _store_steps(open_store: Any, records: list[Any]) -> dict[str, Any]:
    store = open_store()
    writes = []
    for record in records:
        t = time.perf_counter()
        await store.put_step(record)
        writes.append(time.perf_counter() - t)
    await store.aclose()
    reader = open_store()
    cold, warm = [], []
    for samples in (cold, warm):
        for record in records:
            t = time.perf_counter()
            found = await reader.get_step(record.session_id, record.index)
            samples.append(time.perf_counter() - t)
            if found is None or found.fingerprint != record.fingerprint:
                raise RuntimeError(f"{reader!r} lost step {record.index} of {record.session_id}")
    await reader.aclose()
    return {"write": _stats(writes), "read_cold": _stats(cold), "read_warm": _stats(warm)}


async def _loops(openers: dict[str, Any], loops: int) -> dict[str, dict[str, float]]:
    """µs per ActorCritic run recording into each store (None: no journal). The stores take
    turns run by run, so a change in the machine's load falls on all of them alike."""
    import jeeves

    stores = {name: opener() if opener is not None else None for name, opener in openers.items()}
    samples: dict[str, list[float]] = {name: [] for name in stores}
    for i in range(loops + 3):
        for name, store in stores.items():
            t = time.perf_counter()
            result = await jeeves.run(
                durable_model.actor_critic(), "Write add(a, b)", journal=store, session_id=f"loop-{name}-{i}"
            )
            if i >= 3:  # three warm-up runs each
                samples[name].append(time.perf_counter() - t)
            if result.text != durable_model.TEXT:
                raise RuntimeError(f"the loop returned {result.text!r}")
    for store in stores.values():
        if store is not None:
            await store.aclose()
    return {name: _stats(values) for name, values in samples.items()}


async def _measure(postgres_url: str, sqlite_path: Path, steps: int, loops: int) -> dict[str, Any]:
    from jeeves.journal.memory import MemoryJournal
    from jeeves.journal.postgres import PostgresJournal
    from jeeves.journal.sqlite import SQLiteJournal

    templates = await _templates()
    sessions = max(1, steps // STEPS_PER_SESSION)
    records = [
        t.model_copy(update={"session_id": f"bench-{s}", "index": k})
        for s in range(sessions)
        for k, t in enumerate(templates)
    ]
    # A memory journal is one object: the reader must be the writer's object.
    memory = MemoryJournal()
    stores = {
        "memory": lambda: memory,
        "sqlite": lambda: SQLiteJournal(sqlite_path),
        "postgres": lambda: PostgresJournal(postgres_url),
    }
    out: dict[str, Any] = {
        "records": len(records),
        "record_bytes": statistics.fmean(len(r.model_dump_json()) for r in records),
        "loops": loops,
    }
    for name, opener in stores.items():
        out[name] = await _store_steps(opener, records)
    timed = await _loops({"none": None, **stores}, loops)
    out["none"] = {}
    for name, stats in timed.items():
        out[name]["loop"] = stats
    return out


def measure(postgres_url: str, sqlite_path: Path, *, steps: int, loops: int) -> dict[str, Any]:
    """Every store's figures (see the module's docstring); the model answers at once."""
    saved = os.environ.get(durable_model.DELAY_ENV)
    os.environ[durable_model.DELAY_ENV] = "0"
    try:
        return anyio.run(_measure, postgres_url, sqlite_path, steps, loops, backend="asyncio")
    finally:
        if saved is None:
            os.environ.pop(durable_model.DELAY_ENV, None)
        else:
            os.environ[durable_model.DELAY_ENV] = saved
