"""Time to recover after a PostgreSQL restart: how long after the database is back the
journal, the event log and the run lock are working again (`jeeves/journal/retry.py`).

    python bench/durable_recovery.py                  # 5 restarts each of 1 s and 5 s down
    python bench/durable_recovery.py --trials 1 --down 1 --out /tmp/r   # a quick look

A throwaway cluster (bench/pgcluster.py). While a journal store writes a step every 10 ms,
an event log appends an event every 10 ms and a run lock is held, the server is stopped
(fast shutdown: every connection dies), kept down, and started again. Measured from the
moment the server accepts connections again: the first step journaled, the first event
logged, and the run lock held again on a new connection. Nothing is lost: every write
made before the outage and every one after is in the database at the end (checked).
Results: printed as JSON, and written to bench/results/DURABLE_RECOVERY.md with --out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH.parent), str(BENCH)]

import anyio  # noqa: E402
import psycopg  # noqa: E402
from pgcluster import Cluster, find_binaries  # noqa: E402

from jeeves.durable.runlock import run_lock  # noqa: E402
from jeeves.events import ModelDelta  # noqa: E402
from jeeves.journal import retry as _retry  # noqa: E402
from jeeves.journal.eventlog import open_event_log  # noqa: E402
from jeeves.journal.postgres import PostgresJournal  # noqa: E402
from jeeves.journal.records import StepRecord  # noqa: E402

WRITE_EVERY_S = 0.01


class Writer:
    """Writes steps (or events) every WRITE_EVERY_S and records when each write returned."""

    def __init__(self) -> None:
        self.done: list[float] = []

    def first_after(self, moment: float) -> float | None:
        later = [t for t in self.done if t >= moment]
        return min(later) - moment if later else None


async def journal_writer(url: str, writer: Writer, stop: anyio.Event) -> int:
    store = PostgresJournal(url)
    index = 0
    while not stop.is_set():
        await store.put_step(
            StepRecord(session_id="bench", index=index, kind="model", fingerprint="f", result={"i": index})
        )
        writer.done.append(time.monotonic())
        index += 1
        await anyio.sleep(WRITE_EVERY_S)
    await store.aclose()
    return index


async def log_writer(url: str, writer: Writer, stop: anyio.Event) -> int:
    log = open_event_log(url)
    await log.start("bench", architecture="bench", task="recover")
    seq = 0
    while not stop.is_set():
        seq += 1
        await log.append("bench", [ModelDelta(session_id="bench", text="x", seq=seq)])
        writer.done.append(time.monotonic())
        await anyio.sleep(WRITE_EVERY_S)
    await log.aclose()
    return seq


def lock_back(url: str, after: float) -> float | None:
    """When the run lock was seen held again after `after` (polled from another session)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                row = conn.execute("SELECT pg_try_advisory_lock(27254, hashtext('bench'))").fetchone()
                if row is not None and row[0]:
                    conn.execute("SELECT pg_advisory_unlock(27254, hashtext('bench'))")
                else:
                    return time.monotonic() - after
        except psycopg.OperationalError:
            pass
        time.sleep(0.01)
    return None


async def trial(cluster: Cluster, down_s: float) -> dict[str, Any]:
    url = cluster.database()
    steps, events = Writer(), Writer()
    stop = anyio.Event()
    counts: dict[str, int] = {}
    back: list[float] = []

    async def run(name: str, fn: Any, writer: Writer) -> None:
        counts[name] = await fn(url, writer, stop)

    async with run_lock(url, "bench", poll_s=0.05), anyio.create_task_group() as tg:
        tg.start_soon(run, "steps", journal_writer, steps)
        tg.start_soon(run, "events", log_writer, events)
        await anyio.sleep(0.5)

        def outage() -> None:
            cluster.stop_server()
            time.sleep(down_s)
            cluster.start_server()
            back.append(time.monotonic())

        await anyio.to_thread.run_sync(outage)
        lock_s = await anyio.to_thread.run_sync(lock_back, url, back[0])
        await anyio.sleep(0.5)
        stop.set()
    with psycopg.connect(url, autocommit=True) as conn:
        stored_steps = conn.execute("SELECT count(*) FROM jeeves_steps WHERE session_id = 'bench'").fetchone()
        stored_events = conn.execute("SELECT count(*) FROM jeeves_events WHERE root = 'bench'").fetchone()
    assert stored_steps is not None and stored_steps[0] == counts["steps"], (stored_steps, counts)
    assert stored_events is not None and stored_events[0] == counts["events"], (stored_events, counts)
    return {
        "down_s": down_s,
        "step_s": steps.first_after(back[0]),
        "event_s": events.first_after(back[0]),
        "lock_s": lock_s,
        "steps": counts["steps"],
        "events": counts["events"],
    }


def summarise(trials: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for down in sorted({t["down_s"] for t in trials}):
        group = [t for t in trials if t["down_s"] == down]
        out[f"down {down:g} s"] = {
            key: {
                "median": round(statistics.median(t[key] for t in group), 3),
                "max": round(max(t[key] for t in group), 3),
            }
            for key in ("step_s", "event_s", "lock_s")
        }
    return out


def report(result: dict[str, Any]) -> str:
    lines = [
        "# Recovery after a PostgreSQL restart",
        "",
        f"`{result['command']}`, {result['trials']} trials per outage, on {result['when']}.",
        "Seconds from the server accepting connections again to: the first step journaled,",
        "the first event logged, the run lock held again. Every write before and after the",
        "outage was in the database at the end of each trial.",
        "",
        "| outage | first step (median / max) | first event | run lock |",
        "| --- | --- | --- | --- |",
    ]
    for down, row in result["summary"].items():
        cells = [f"{row[k]['median']:.3f} / {row[k]['max']:.3f}" for k in ("step_s", "event_s", "lock_s")]
        lines.append(f"| {down} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "A failed operation is retried after 0.05 s, doubling to 2 s (`jeeves/journal/retry.py`),",
        "so the wait after the database is back is at most about 2 s, whatever the outage's length.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--down", type=float, nargs="+", default=[1.0, 5.0])
    parser.add_argument("--out", type=Path, default=None, help="folder for DURABLE_RECOVERY.md")
    args = parser.parse_args(argv)
    bin_dir = find_binaries()
    if bin_dir is None:
        print("PostgreSQL is not installed; install Debian's postgresql package", file=sys.stderr)
        return 2
    _retry.configure(120.0)
    cluster = Cluster(bin_dir)
    cluster.start()
    try:
        trials = [
            anyio.run(trial, cluster, down, backend="asyncio")
            for down in args.down
            for _ in range(args.trials)
        ]
    finally:
        cluster.stop()
    result = {
        "command": "python bench/durable_recovery.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "trials": args.trials,
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "summary": summarise(trials),
        "raw": trials,
    }
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "DURABLE_RECOVERY.md").write_text(report(result))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
