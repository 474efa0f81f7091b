"""1. Throughput: queued runs executed by 1, 2, 4 fresh workers on a fresh database."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from durable_db import (
    Counted,
    Server,
    check_outcomes,
    connect,
    diff_writes,
    other_connections,
    scalar,
    server_cpu_s,
    server_pid,
    table_writes,
    wait_until,
)
from durable_workers import REPO, create_dbos_tables, enqueue, workers
from pgcluster import Cluster


def throughput(
    cluster: Cluster | Server,
    runs: int,
    n_workers: int,
    args: argparse.Namespace,
    code: str = "current",
    repo: Path = REPO,
    concurrency: int | None = None,
) -> dict[str, Any]:
    """`runs` queued runs executed by `n_workers` fresh workers (running the jeeves in `repo`,
    named `code` in the report) on a fresh database."""
    concurrency = concurrency or args.concurrency
    database = cluster.database(f"tp{n_workers}_{runs}_c{concurrency}_{code.split()[0]}")
    create_dbos_tables(database)
    flags = ["--concurrency", str(concurrency), "--poll", str(args.poll)]
    with connect(database) as raw:
        conn = Counted(raw)
        writes_before = table_writes(conn)
        wal_before = scalar(conn, "SELECT pg_current_wal_lsn()")
        commits_before, sessions_before = conn.execute(
            "SELECT xact_commit, sessions FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        ids, enqueue_s = enqueue(database, runs, "run")
        rss: list[float | None] = []
        cpu: list[float | None] = []
        server_before = server_cpu_s(server_pid(cluster))
        with workers(database, n_workers, flags, repo=repo) as started:
            sessions_ready = scalar(
                conn, "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            )
            idle_connections = other_connections(conn)
            peak_connections = idle_connections

            def finished() -> bool:
                nonlocal peak_connections
                peak_connections = max(peak_connections, other_connections(conn))
                done = scalar(
                    conn,
                    "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid = ANY(%s) "
                    "AND status IN ('SUCCESS', 'ERROR', 'CANCELLED')",
                    ids,
                )
                return int(done) >= runs

            wait_until(finished, timeout_s=300 + runs * 2.0, what=f"{runs} runs on {n_workers} workers")
            rss = [worker.peak_rss_mb() for worker in started]
            cpu = [worker.cpu_s() for worker in started]
            cpu = [
                c - w.cpu_ready if c is not None and w.cpu_ready is not None else None
                for c, w in zip(cpu, started, strict=True)
            ]
            server_after = server_cpu_s(server_pid(cluster))
            sessions_done = scalar(
                conn, "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            )
        check_outcomes(conn, ids)
        times = conn.execute(
            "SELECT started_at_epoch_ms, updated_at FROM dbos.workflow_status WHERE workflow_uuid = ANY(%s)",
            (ids,),
        ).fetchall()
        per_executor = dict(
            conn.execute(
                "SELECT executor_id, count(*) FROM dbos.workflow_status WHERE workflow_uuid = ANY(%s) "
                "GROUP BY executor_id",
                (ids,),
            ).fetchall()
        )
        wal_bytes = int(scalar(conn, "SELECT pg_current_wal_lsn() - %s::pg_lsn", wal_before))
        commits_after = scalar(
            conn, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
        commits = int(commits_after) - int(commits_before) - conn.queries  # not the bench's own reads
        steps, step_bytes = conn.execute(
            "SELECT count(*), avg(octet_length(record)) FROM jeeves_steps"
        ).fetchone()
        sessions, session_bytes = conn.execute(
            "SELECT count(*), avg(octet_length(record)) FROM jeeves_sessions"
        ).fetchone()
        writes = diff_writes(table_writes(conn), writes_before)
    starts = sorted(t[0] for t in times)
    ends = sorted(t[1] for t in times)
    wall_s = (ends[-1] - starts[0]) / 1e3
    steady = None
    if runs >= 10:  # completions between the 10th and the 90th percentile, over their time
        first, last = runs // 10, (runs * 9) // 10
        if ends[last] > ends[first]:
            steady = (last - first) / ((ends[last] - ends[first]) / 1e3)
    rows_written = sum(w["inserted"] + w["updated"] + w["deleted"] for w in writes.values())
    return {
        "code": code,
        "workers": n_workers,
        "runs": runs,
        "concurrency": concurrency,
        "poll_s": args.poll,
        "enqueue_s": enqueue_s,
        "wall_s": wall_s,
        "runs_per_s": runs / wall_s,
        "steady_runs_per_s": steady,
        "runs_per_worker": {str(k): v for k, v in per_executor.items()},
        "connections_idle": idle_connections,
        "connections_peak": peak_connections,
        "worker_peak_rss_mb": rss,
        "worker_cpu_s": cpu,
        "worker_cpu_ms_per_run": sum(c or 0.0 for c in cpu) * 1e3 / runs
        if all(c is not None for c in cpu)
        else None,
        "server_cpu_ms_per_run": (
            (server_after - server_before) * 1e3 / runs
            if server_after is not None and server_before is not None
            else None
        ),
        "steps": steps,
        "step_bytes_avg": float(step_bytes or 0),
        "sessions": sessions,
        "session_bytes_avg": float(session_bytes or 0),
        "table_writes": writes,
        "rows_written": rows_written,
        "rows_per_run": rows_written / runs,
        "rows_per_s": rows_written / wall_s,
        "commits": commits,
        "commits_per_run": commits / runs,
        "connections_opened": int(sessions_done) - int(sessions_ready),
        "connections_opened_at_start": int(sessions_ready) - int(sessions_before),
        "wal_bytes": wal_bytes,
        "wal_bytes_per_run": wal_bytes / runs,
    }


# -- 2. takeover ----------------------------------------------------------------------------
