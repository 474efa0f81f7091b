"""Journaled runs next to the peers' durable runs: µs per model call at 25 and 200 turns (issue 33).

The work is bench/journal_turns.py's: a tool-using agent whose fake model answers at once (a
tool call every turn, the text "done" at the last; usage given, so nothing is estimated),
each tool returning 200 bytes. Every framework runs it plain and with what it offers to
survive a crash and resume a run:

- **jeeves**: no journal (bare), a memory journal, SQLite, PostgreSQL (bench/journal_turns.py,
  this checkout);
- **LangGraph**: its tool loop with no checkpointer, `InMemorySaver`, `AsyncSqliteSaver` at its
  default durability and with `durability="sync"` (bench/peers/journal_langgraph.py);
- **PydanticAI**: an `Agent`, plain and with its `DBOSDurability` capability on PostgreSQL
  (DBOS durable execution: each model request and tool call a DBOS step), and DBOS's steps
  alone, with no agent: the floor of that design (bench/peers/journal_pydantic_ai.py).

Side by side in one run: each framework in its own subprocess (the peers in their own venvs,
bench/venvs.py), the frameworks taking turns round by round, so a change in the machine's
load falls on all alike; each figure is the best of the rounds. PostgreSQL is one throwaway
cluster (`fsync=off`, as bench/durable.py's), a database per framework; its server's CPU is
not in any process's CPU time. Both wall and CPU time per model call are reported, and for
each row its ratio to the same framework's bare run and what durability adds per call.

    python bench/journal_peers.py --runs 3 --out bench/results/JOURNAL_PEERS
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

import journal_turns  # noqa: E402
import venvs  # noqa: E402

PEERS = {
    "langgraph": ("journal_langgraph.py", "requirements-langgraph.txt", False),
    "pydantic_ai_dbos": ("journal_pydantic_ai.py", "requirements-pydantic_ai_dbos.txt", True),
}
"""Peer -> its script and pinned requirements under bench/peers, and whether it takes a PostgreSQL URL."""
NAMES = {"jeeves": "jeeves", "langgraph": "LangGraph", "pydantic_ai_dbos": "PydanticAI"}
TURNS = [str(t) for t in journal_turns.TURNS]


def _jeeves(scratch: Path, pg_url: str | None, tag: str) -> dict[str, Any]:
    kinds = [k for k in journal_turns.JOURNALS if k != "postgres" or pg_url is not None]
    return dict(journal_turns._run_child(REPO, kinds, scratch, pg_url, tag, False))


def _peer(python: Path, name: str, pg_url: str | None) -> dict[str, Any]:
    script, _, takes_pg = PEERS[name]
    command = [str(python), str(BENCH / "peers" / script), "--turns", ",".join(TURNS), "--runs", "1"]
    if takes_pg and pg_url is not None:
        command += ["--pg-url", pg_url]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: the measurement failed: {done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _keep(best: dict[str, Any], framework: str, rows: dict[str, Any]) -> None:
    """Fold one round's rows into `best` (the lowest of each metric over the rounds)."""
    for row, by_turns in rows.items():
        for turns, metrics in by_turns.items():
            for metric, value in metrics.items():
                at = best.setdefault(metric, {}).setdefault(framework, {}).setdefault(row, {})
                at[turns] = min(value, at.get(turns, value))


def measure(runs: int, peers: list[str], postgres: bool) -> dict[str, Any]:
    with ThreadPoolExecutor() as pool:  # each peer's venv, built (or checked) at once
        built = {
            name: pool.submit(venvs.ensure_venv, name, BENCH / "peers" / PEERS[name][1]) for name in peers
        }
        pythons = {name: future.result() for name, future in built.items()}
    cluster = None
    if postgres:
        import pgcluster

        bin_dir = pgcluster.find_binaries()
        if bin_dir is None:
            raise SystemExit(f"No PostgreSQL here: {pgcluster.INSTALL}, or pass --no-postgres.")
        cluster = pgcluster.Cluster(bin_dir)
        cluster.start()
    best: dict[str, Any] = {}
    versions: dict[str, Any] = {}
    notes: dict[str, Any] = {}
    try:
        urls = {name: cluster.database() if cluster else None for name in ["jeeves", *peers]}
        with tempfile.TemporaryDirectory() as scratch:
            for round_ in range(runs):
                _keep(best, "jeeves", _jeeves(Path(scratch), urls["jeeves"], f"r{round_}"))
                for name in peers:
                    got = _peer(pythons[name], name, urls[name])
                    _keep(best, name, got["rows"])
                    versions[name], notes[name] = got.get("versions", {}), got.get("notes", {})
    finally:
        if cluster is not None:
            cluster.stop()
    return {"best": best, "versions": versions, "notes": notes}


def table(best: dict[str, Any], metric: str) -> list[str]:
    """One line per framework and row: µs per model call at each length, the growth from 25 to
    200 turns, the ratio to the framework's own bare run and what the row adds to it at 200."""
    lines = [
        "| framework | durability | µs/call @25 | µs/call @200 | 200/25 | × own bare @200 | added µs/call @200 |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for framework, rows in best[metric].items():
        bare = rows["bare"]["200"]
        for row, at in rows.items():
            first, last = at[TURNS[0]], at[TURNS[-1]]
            alone = row.endswith("(no agent)")  # no bare run to compare it with
            ratio = "–" if alone else f"{last / bare:.2f}"
            added = "–" if row == "bare" or alone else f"{last - bare:,.0f}"
            lines.append(
                f"| {NAMES[framework]} | {row} | {first:,.0f} | {last:,.0f} | {last / first:.2f} | "
                f"{ratio} | {added} |"
            )
    return lines


def render(result: dict[str, Any], meta: dict[str, Any]) -> str:
    versions = "; ".join(
        f"{NAMES[name]}: " + ", ".join(f"{k} {v}" for k, v in got.items())
        for name, got in result["versions"].items()
    )
    lines = [
        "# Journaled runs next to the peers' durable runs (issue 33)",
        "",
        f"{meta['date']} · commit `{meta['commit']}` · Python {meta['python']} · {meta['machine']} · "
        f"whole run {meta['seconds']:.0f} s · load average before {meta['load_before']}, after "
        f"{meta['load_after']} · `{meta['command']}`",
        "",
        "The work: a tool-using agent whose fake model answers at once (a tool call every turn, "
        'the text "done" at the last; usage given), each tool returning 200 bytes: a model step '
        "and a tool step per model call. µs per model call (the run's time over its model calls), "
        "best of the rounds, each framework in its own process, taking turns. jeeves: `bare` no "
        "journal, `memory` a `MemoryJournal`, `sqlite` a `SQLiteJournal` file, `postgres` a "
        "`PostgresJournal`. PostgreSQL (jeeves' `postgres`, DBOS) is one throwaway local cluster, "
        "`fsync=off`; its server's CPU is in no row's CPU time.",
        "",
        f"Peers: {versions}.",
    ]
    for name, notes in result["notes"].items():
        for row, note in notes.items():
            lines.append(f"- {NAMES[name]}, `{row}`: {note}")
    for metric in ("cpu", "wall"):
        title = "CPU time (the framework's process; PostgreSQL's server not counted)"
        lines += ["", f"## {title if metric == 'cpu' else 'Wall time'}, best of {meta['runs']} rounds", ""]
        lines += table(result["best"], metric)
    return "\n".join(lines) + "\n"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds; each figure is the best of them")
    parser.add_argument("--peers", default=",".join(PEERS), help=f"peers to measure (of {', '.join(PEERS)})")
    parser.add_argument("--no-postgres", action="store_true", help="leave out the rows on PostgreSQL")
    parser.add_argument("--out", help="write OUT.json and OUT.md")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: give at least 1")
    peers = [p for p in args.peers.split(",") if p]
    unknown = sorted(set(peers) - set(PEERS))
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    started, load_before = time.perf_counter(), os.getloadavg()
    try:
        result = measure(args.runs, peers, not args.no_postgres)
    except RuntimeError as exc:  # a peer's venv would not install, or its run failed: its output says why
        raise SystemExit(f"journal_peers: {exc}") from None
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "seconds": time.perf_counter() - started,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "command": "python bench/journal_peers.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "runs": args.runs,
    }
    text = render(result, meta)
    print(text)
    if args.out:
        out = Path(args.out)
        out.with_suffix(".json").write_text(json.dumps({"meta": meta, **result}, indent=1) + "\n")
        out.with_suffix(".md").write_text(text)


if __name__ == "__main__":
    main()
