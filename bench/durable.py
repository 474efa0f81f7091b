"""Durable runs on a real PostgreSQL: throughput of `jeeves worker` processes, takeover
latency after `kill -9`, and the per-step cost of the PostgreSQL journal next to SQLite.

    python bench/durable.py                 # 1,000 runs on 1, 2, 4 workers; 5 + 2 takeovers
    python bench/durable.py --quick         # 100 runs, 2 takeovers: a couple of minutes
    python bench/durable.py --runs 4 --workers 1 --takeover-reps 1 --default-takeover-reps 0 \
        --steps 8 --loops 2 --out /tmp/d    # tiny, as tests/test_bench_durable.py runs it
    python bench/durable.py --baseline cfc7d86   # the throughput of that commit's workers too,
                                                 # worker count by worker count, in one run

Writes DURABLE.md and DURABLE.json (bench/results/ by default), with the hand-written
bench/results/DURABLE_NOTES.md under the figures. It starts a throwaway PostgreSQL cluster
(bench/pgcluster.py, Debian's `postgresql` package) and stops it at the end, or uses a
running server given by `--server URL` (then the server's CPU is not measured). Runs are
queued through one DBOS client, as `jeeves.durable.submit` queues them (one client for all,
not one per run). Every worker is `python -m jeeves worker durable_model:actor_critic` in its own
process (bench/durable_model.py: an ActorCritic on a model that sleeps 50 ms a call, 4
calls a run). Nothing here is asserted about time: the figures are measurements.
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
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import durable_chart  # noqa: E402
import durable_journal  # noqa: E402
import durable_model  # noqa: E402
import durable_report  # noqa: E402
from durable_db import Server, connect, connection_cost, scalar  # noqa: E402
from durable_takeover import takeover  # noqa: E402
from durable_throughput import throughput  # noqa: E402
from pgcluster import Cluster, find_binaries  # noqa: E402


def _git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return done.stdout.strip() or "unknown"


def _extract(ref: str, into: Path) -> None:
    """The tree of commit `ref` into `into` (`git archive`: no worktree, no checkout)."""
    archive = subprocess.run(["git", "archive", ref], capture_output=True, cwd=REPO, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--runs", type=int, default=None, help="queued runs per worker count (1,000; --quick 100)"
    )
    parser.add_argument("--quick", action="store_true", help="100 runs, 2 + 0 takeovers, fewer journal steps")
    parser.add_argument("--workers", default="1,2,4", help="worker counts to measure (default 1,2,4)")
    parser.add_argument("--concurrency", type=int, default=20, help="runs at once per worker (default 20)")
    parser.add_argument(
        "--high-concurrency",
        type=int,
        default=0,
        metavar="N",
        help="also run the queue on 1 worker at --concurrency N, where CPU, not the 20 slots, "
        "bounds a worker (0: not)",
    )
    parser.add_argument("--poll", type=float, default=0.1, help="the workers' queue poll, seconds (0.1)")
    parser.add_argument(
        "--takeover-reps", type=int, default=None, help="takeovers at --heartbeat/--takeover-after (5)"
    )
    parser.add_argument("--heartbeat", type=float, default=1.0, help="heartbeat for the takeover runs (1 s)")
    parser.add_argument("--takeover-after", type=float, default=5.0, help="takeover time for them (5 s)")
    parser.add_argument(
        "--default-takeover-reps", type=int, default=None, help="takeovers at the defaults 5/30 s (2)"
    )
    parser.add_argument("--takeover-runs", type=int, default=8, help="runs submitted per takeover (8)")
    parser.add_argument(
        "--steps", type=int, default=None, help="journal records written and read per store (2,000)"
    )
    parser.add_argument("--loops", type=int, default=None, help="ActorCritic loops per journal (200)")
    parser.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="use this running server (a superuser URL) instead of starting one",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="REF",
        help="also measure the throughput of the workers of this git commit (extracted with git "
        "archive), each worker count right before this checkout's, so both see the same load",
    )
    parser.add_argument("--out", type=Path, default=BENCH / "results", help="where DURABLE.md/json go")
    args = parser.parse_args(argv)
    quick = args.quick
    args.runs = args.runs if args.runs is not None else (100 if quick else 1000)
    args.takeover_reps = args.takeover_reps if args.takeover_reps is not None else (2 if quick else 5)
    if args.default_takeover_reps is None:
        args.default_takeover_reps = 0 if quick else 2
    args.steps = args.steps if args.steps is not None else (400 if quick else 2000)
    args.loops = args.loops if args.loops is not None else (40 if quick else 200)
    args.worker_counts = [int(n) for n in args.workers.split(",") if n.strip()]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bin_dir = find_binaries()
    if bin_dir is None and not args.server:
        sys.stderr.write("PostgreSQL is not installed: install Debian's `postgresql` package (.ci/apt).\n")
        return 2
    load_before = [round(x, 2) for x in os.getloadavg()]
    began = time.perf_counter()
    peak_workers = max(args.worker_counts or [1])
    cluster: Cluster | None = None
    if args.server:
        server: Cluster | Server = Server(args.server)
        admin = args.server
    else:
        assert bin_dir is not None
        cluster = Cluster(
            bin_dir,
            max_connections=max(200, peak_workers * max(args.concurrency, args.high_concurrency) * 3 + 50),
        )
        cluster.start()
        server, admin = cluster, cluster.url("postgres")
    results: dict[str, Any] = {}
    try:
        with connect(admin) as conn:
            results["postgres"] = scalar(conn, "SHOW server_version")
        results["throughput"] = []
        with tempfile.TemporaryDirectory(prefix="jeeves-baseline-") as baseline:
            codes = [("current", REPO)]
            if args.baseline:
                _extract(args.baseline, Path(baseline))
                codes.insert(0, (f"baseline {args.baseline}", Path(baseline)))
            queues = [(n, args.concurrency) for n in args.worker_counts]
            if args.high_concurrency:
                queues.append((1, args.high_concurrency))
            for n, slots in queues:
                for code, repo in codes:
                    print(
                        f"throughput: {args.runs} runs on {n} worker(s) at --concurrency {slots}, {code}",
                        file=sys.stderr,
                        flush=True,
                    )
                    row = throughput(server, args.runs, n, args, code=code, repo=repo, concurrency=slots)
                    results["throughput"].append(row)
        results["takeover"] = []
        plans = [
            (args.takeover_reps, args.heartbeat, args.takeover_after),
            (args.default_takeover_reps, 5.0, 30.0),
        ]
        for reps, heartbeat, after in plans:
            if reps > 0:
                print(
                    f"takeover: {reps} x (heartbeat {heartbeat} s, after {after} s)",
                    file=sys.stderr,
                    flush=True,
                )
                results["takeover"].append(takeover(server, reps, heartbeat, after, args))
        results["connections"] = connection_cost(server, 50 if args.quick else 200)
        print("journal: per-step cost", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="jeeves-bench-") as tmp:
            results["journal"] = durable_journal.measure(
                server.database("journal"), Path(tmp) / "runs.db", steps=args.steps, loops=args.loops
            )
    finally:
        if cluster is not None:
            cluster.stop()
    from importlib.metadata import version

    results["meta"] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git_commit(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "dbos": version("dbos"),
        "psycopg": version("psycopg"),
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "seconds": time.perf_counter() - began,
        "command": "python bench/durable.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "model_delay_s": float(os.environ.get(durable_model.DELAY_ENV, "0.05")),
        "calls_per_run": durable_model.CALLS_PER_RUN,
    }
    notes = BENCH / "results" / "DURABLE_NOTES.md"
    if notes.exists():  # hand-written analysis, kept across runs
        results["notes"] = notes.read_text().split("\n", 2)[2].strip()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "DURABLE.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "DURABLE.md").write_text(durable_report.render(results))
    if results["throughput"]:
        (args.out / "DURABLE.svg").write_text(durable_chart.svg(results["throughput"]))
    print(f"wrote {args.out / 'DURABLE.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
