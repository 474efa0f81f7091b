"""Listing a big journal's runs: `jeeves runs` (and the explorer's `GET /journal`) on a
SQLite journal of many runs, each with child sessions.

The journal: `--runs` root sessions (20,000 by default), each with `--children` child
sessions (4), written straight as session records (no steps: listing reads none). Each
jeeves tree named on the command line (`NAME=PATH`, e.g. the commit before a change
exported to a folder, and the worktree) lists it in fresh processes with that tree on
PYTHONPATH, taking turns round by round:

- `every run`: `list_runs(path)`, what `jeeves runs PATH` prints;
- `latest 50`: `list_runs(path, last=50)`, what `jeeves runs PATH --last 50` prints (a tree
  without `last` lists every run and keeps the latest 50, as a user would have to);
- `gates`: `jeeves gates PATH` (`gates_command`), the gates waiting for a decision in every
  run (here none: every run completed);
- `one run's sessions`: `sessions(root)` of the middle run, its root and children (what a
  resume, `jeeves approve` and `jeeves gates RUN` read).

Each figure is the best of `--rounds`: wall seconds, and the process's peak RSS above what
it held before the listing (MB). Prints a markdown table; `--out FILE` writes it with the
JSON of every sample.

    python bench/run_list.py before=/tmp/jeeves-before after=. --out bench/results/RUN_LIST.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CASES = ("every run", "latest 50", "gates", "one run's sessions")


def _build(path: Path, runs: int, children: int) -> None:
    """The journal, written by the tree on PYTHONPATH (the record format is the same in both)."""
    import sqlite3

    import anyio

    from jeeves.journal.records import SessionRecord
    from jeeves.journal.sqlite import SQLiteJournal
    from jeeves.journal.store import encode_record

    async def schema() -> None:
        store = SQLiteJournal(path)
        await store.put_session(SessionRecord(session_id="warm", role="agent", architecture="agent"))
        await store.aclose()

    anyio.run(schema)
    rows = []
    for i in range(runs):
        root = f"run-{i:06d}"
        usage = {"input_tokens": 120, "output_tokens": 40, "model_calls": 4, "cost_usd": 0.0012}
        rows.append(
            SessionRecord(
                session_id=root,
                role="actor_critic",
                architecture="actor_critic",
                task=f"Write function number {i} and test it.",
                status="completed",
                output="def f(): ...",
                usage=usage,
                rounds=2,
            )
        )
        for k in range(children):
            child = f"{root}__worker_{k}"
            rows.append(
                SessionRecord(
                    session_id=child,
                    parent_id=root,
                    role="worker",
                    architecture="agent",
                    task="x" * 200,
                    status="completed",
                    output="y" * 200,
                    usage=usage,
                )
            )
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM sessions")
        conn.executemany(
            "INSERT INTO sessions (session_id, parent_id, record) VALUES (?, ?, ?)",
            [(r.session_id, r.parent_id, encode_record(r)) for r in rows],
        )


def _child(path: str, case: str) -> None:
    import inspect
    import resource
    import sqlite3
    import time

    import anyio

    from jeeves.journal.open import list_runs

    def rss_mb() -> float:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    takes_last = "last" in inspect.signature(list_runs).parameters
    with sqlite3.connect(path) as conn:  # the middle run's id, found before the clock starts
        (roots,) = conn.execute("SELECT count(*) FROM sessions WHERE instr(session_id, '__') = 0").fetchone()
    middle = f"run-{roots // 2:06d}"
    before = rss_mb()
    start = time.perf_counter()
    if case == "one run's sessions":
        from jeeves.journal.sqlite import SQLiteJournal

        async def tree() -> list[Any]:
            async with SQLiteJournal(path, create=False) as store:
                return await store.sessions(middle)

        runs = anyio.run(tree)
    elif case == "gates":
        import io

        from jeeves.cli.gates import gates_command

        printed = io.StringIO()
        anyio.run(lambda: gates_command(path, out=printed))
        runs = [line for line in printed.getvalue().splitlines() if not line.startswith("no gate")]
    elif case == "every run":
        runs = anyio.run(list_runs, path)
    elif takes_last:
        runs = anyio.run(lambda: list_runs(path, last=50))
    else:
        runs = anyio.run(list_runs, path)[-50:]
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall_s": wall, "peak_mb": peak - before, "runs": len(runs)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="NAME=PATH of a jeeves tree to measure")
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--children", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the table and the samples here (markdown)")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "CASE"), help=argparse.SUPPRESS)
    parser.add_argument("--build", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(*args.child)
    if args.build:
        return _build(Path(args.build), args.runs, args.children)
    if not args.trees or not all("=" in pair for pair in args.trees):
        sys.exit("error: name the trees to measure as NAME=PATH, e.g. `after=.`.")
    if args.runs < 1 or args.rounds < 1:
        sys.exit("error: --runs and --rounds must be at least 1.")
    trees = dict(pair.split("=", 1) for pair in args.trees)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import trees_in_turns, write_table

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "runs.db"
        first = str(Path(next(iter(trees.values()))).resolve())
        me = str(Path(__file__).resolve())
        build = [sys.executable, me, "--build", str(path), "--runs", str(args.runs)]
        build += ["--children", str(args.children)]
        subprocess.run(build, env={**os.environ, "PYTHONPATH": first}, check=True)
        samples = trees_in_turns(
            trees, CASES, args.rounds, lambda name, case: [me, "--child", str(path), case], "list runs"
        )
    head = f"{args.runs:,} runs of {args.children + 1} sessions each, SQLite, best of {args.rounds} fresh processes"
    lines = [head, "", "| tree | case | lines listed | wall s | peak RSS MB |", "|---|---|--:|--:|--:|"]
    for name in trees:
        for case in CASES:
            got = samples[name][case]
            wall = min(s["wall_s"] for s in got)
            peak = min(s["peak_mb"] for s in got)
            lines.append(f"| {name} | {case} | {got[0]['runs']:,} | {wall:.3f} | {peak:.0f} |")
    write_table(args.out, lines, samples)


if __name__ == "__main__":
    main()
