"""Reading one run, or the latest runs, of a big PostgreSQL journal: what a strict replay
(`read_run`), `jeeves approve` (`sessions(root)`) and `jeeves runs --last N` (`runs(last)`)
cost when the journal holds many other runs.

The journal: `--runs` runs (20,000 by default) of a root and `--children` child sessions (4),
each session with `--steps` step records (10) of about 1.2 KB: with the defaults 100,000
sessions and a million steps, about 1.3 GB. A throwaway cluster (bench/pgcluster.py,
`fsync=off`) holds one database per jeeves tree named on the command line (`NAME=PATH`, e.g.
the commit before a change exported to a folder, and the worktree), filled by the same SQL
with the same rows, then `VACUUM ANALYZE`d. Each tree opens its own database once as a
recorder (which is when a tree adds any index it wants; not timed), then reads the middle
run in fresh processes with that tree on PYTHONPATH, taking turns round by round:

- `one run's sessions`: `sessions(root)` of the middle run, its root and children;
- `one run whole`: `read_run(root)`, every session and step of it (a strict replay's read);
- `the latest 50 runs`: `runs(last=50)`, what `jeeves runs URL --last 50` lists (the explorer
  asks for the latest 501).

Each figure is the best of `--rounds` (the first read of a process, so the plan is the
database's own), in milliseconds. Prints a markdown table; `--out FILE` writes it with the
JSON of every sample.

    python bench/pg_run_read.py before=/tmp/jeeves-before after=. --out bench/results/PG_RUN_READ.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
CASES = ("one run's sessions", "one run whole", "the latest 50 runs")


def _open(url: str) -> None:
    """The tree's first open of its database, as a recorder: it makes the tables (and any index
    it keeps) before the rows go in."""
    import anyio

    from jeeves.journal.postgres import PostgresJournal
    from jeeves.journal.records import SessionRecord

    async def main() -> None:
        async with PostgresJournal(url) as store:
            await store.put_session(SessionRecord(session_id="warm", role="agent", architecture="agent"))

    anyio.run(main)


def _fill(url: str, runs: int, children: int, steps: int) -> dict[str, Any]:
    import psycopg

    from jeeves.journal.records import SessionRecord, StepRecord
    from jeeves.journal.store import encode_record

    message = {"role": "user", "content": "x" * 600}
    step = encode_record(
        StepRecord(
            session_id="s",
            index=0,
            kind="model",
            fingerprint="f" * 64,
            request={"base": 0, "messages": [message]},
            result={"text": "y" * 400},
        )
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM jeeves_sessions WHERE session_id = 'warm'")  # `_open`'s: not a run here
        with conn.cursor().copy("COPY jeeves_sessions (session_id, parent_id, record) FROM STDIN") as copy:
            for r in range(runs):
                root = f"run-{r:06d}"
                for k in range(children + 1):
                    sid, parent = (root, None) if k == 0 else (f"{root}__worker_{k - 1}", root)
                    record = SessionRecord(
                        session_id=sid, parent_id=parent, role="worker", architecture="agent", task="x" * 200
                    )
                    copy.write_row((sid, parent, encode_record(record)))
        conn.execute(  # the steps' text is the same for all: reading one run does not decode them
            "INSERT INTO jeeves_steps (session_id, idx, record) "
            "SELECT session_id, i, %s FROM jeeves_sessions, generate_series(0, %s) i",
            (step, steps - 1),
        )
        conn.execute("VACUUM ANALYZE")
        row = conn.execute(
            "SELECT count(*), pg_total_relation_size('jeeves_steps') + pg_total_relation_size('jeeves_sessions') "
            "FROM jeeves_steps"
        ).fetchone()
    assert row is not None
    return {"steps": int(row[0]), "mb": int(row[1]) / 1e6}


def _child(url: str, case: str, root: str) -> None:
    import time

    import anyio

    from jeeves.journal.postgres import PostgresJournal

    async def main() -> tuple[float, int]:
        async with PostgresJournal(url, create=False) as store:
            await store.get_session("run-000000")  # untimed: the connection, the version check, a decode
            start = time.perf_counter()
            if case == "one run's sessions":
                found = len(await store.sessions(root))
            elif case == "the latest 50 runs":
                found = len(await store.runs(last=50))
            else:
                run = await store.read_run(root)
                found = sum(1 + len(run.step_indices(r.session_id)) for r in run.sessions())
            return time.perf_counter() - start, found

    wall, found = anyio.run(main)
    print(json.dumps({"ms": wall * 1000, "records": found}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="NAME=PATH of a jeeves tree to measure")
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--children", type=int, default=4)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the table and the samples here (markdown)")
    parser.add_argument("--child", nargs=3, metavar=("URL", "CASE", "ROOT"), help=argparse.SUPPRESS)
    parser.add_argument("--open", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(*args.child)
    if args.open:
        return _open(args.open)
    if not args.trees or not all("=" in pair for pair in args.trees):
        sys.exit("error: name the trees to measure as NAME=PATH, e.g. `after=.`.")
    if min(args.runs, args.steps, args.rounds) < 1 or args.children < 0:
        sys.exit("error: --runs, --steps and --rounds must be at least 1, --children at least 0.")
    sys.path.insert(0, str(BENCH))
    from common import trees_in_turns, write_table
    from pgcluster import INSTALL, Cluster, find_binaries

    bin_dir = find_binaries()
    if bin_dir is None:
        sys.exit(f"error: PostgreSQL is not installed; {INSTALL}.")
    trees = {name: str(Path(tree).resolve()) for name, tree in (pair.split("=", 1) for pair in args.trees)}
    me, root = str(Path(__file__).resolve()), f"run-{args.runs // 2:06d}"
    cluster = Cluster(bin_dir)
    cluster.start()
    try:
        urls, size = {}, {}
        for name, tree in trees.items():
            urls[name] = cluster.database()
            env = {**os.environ, "PYTHONPATH": tree}
            subprocess.run([sys.executable, me, "--open", urls[name]], env=env, check=True)
            size = _fill(urls[name], args.runs, args.children, args.steps)
        samples = trees_in_turns(
            trees,
            CASES,
            args.rounds,
            lambda name, case: [me, "--child", urls[name], case, root],
            "read the run",
        )
    finally:
        cluster.stop()
    head = (
        f"{args.runs:,} runs of {args.children + 1} sessions of {args.steps} steps each "
        f"({size['steps']:,} steps, {size['mb']:,.0f} MB), PostgreSQL, best of {args.rounds} fresh processes"
    )
    lines = [head, "", "| tree | case | records read | ms |", "|---|---|--:|--:|"]
    for name in trees:
        for case in CASES:
            got = samples[name][case]
            lines.append(f"| {name} | {case} | {got[0]['records']:,} | {min(s['ms'] for s in got):.1f} |")
    write_table(args.out, lines, samples)


if __name__ == "__main__":
    main()
