"""2. Takeover latency after `kill -9` of a worker holding runs mid-flight."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from durable_db import Server, check_outcomes, connect, scalar, wait_until
from durable_workers import WorkerProcess, enqueue, workers
from pgcluster import Cluster


def takeover_once(
    cluster: Cluster | Server, rep: int, heartbeat: float, takeover_after: float, args: argparse.Namespace
) -> dict[str, Any]:
    """Two workers; a batch of runs; `kill -9` of a worker once it holds runs that have
    journaled a step; then, by the bench's clock: when the survivor marked it dead, when the
    first new step of its runs was written, when all of them completed."""
    database = cluster.database(f"to{rep}_{int(takeover_after)}")
    flags = [
        "--concurrency", str(args.takeover_runs), "--poll", "0.1",
        "--heartbeat", str(heartbeat), "--takeover-after", str(takeover_after),
    ]  # fmt: skip
    with connect(database) as conn, workers(database, 2, flags) as (first, second):
        by_id = {first.worker_id: first, second.worker_id: second}
        both_beating(conn, [first, second], takeover_after)
        ids, _ = enqueue(database, args.takeover_runs, f"take{rep}")
        held: list[tuple[str, str]] = []

        def holding() -> bool:
            if not scalar(conn, "SELECT to_regclass('jeeves_steps') IS NOT NULL"):
                return False  # no run has opened the journal yet
            held[:] = conn.execute(
                "SELECT w.workflow_uuid, w.executor_id FROM dbos.workflow_status w "
                "WHERE w.workflow_uuid = ANY(%s) AND w.status = 'PENDING' AND EXISTS "
                "(SELECT 1 FROM jeeves_steps s WHERE s.session_id LIKE w.workflow_uuid || '\\_\\_%%')",
                (ids,),
            ).fetchall()
            return bool(held)

        wait_until(holding, 120, "a worker holding a run mid-flight")
        victim_id = held[0][1]
        by_id[victim_id].kill()
        killed = time.monotonic()
        by_id[victim_id].process.wait(timeout=30)
        victims = [
            wid
            for (wid,) in conn.execute(
                "SELECT workflow_uuid FROM dbos.workflow_status WHERE workflow_uuid = ANY(%s) "
                "AND executor_id = %s AND status = 'PENDING'",
                (ids, victim_id),
            ).fetchall()
        ]
        patterns = [f"{wid}\\_\\_%" for wid in victims]
        count_sql = "SELECT count(*) FROM jeeves_steps WHERE session_id LIKE ANY(%s)"
        steps_at_kill = int(scalar(conn, count_sql, patterns))
        marks: dict[str, float] = {}

        def resumed() -> bool:
            now = time.monotonic() - killed
            if (
                "dead_s" not in marks
                and scalar(conn, "SELECT status FROM jeeves_workers WHERE worker_id = %s", victim_id)
                == "dead"
            ):
                marks["dead_s"] = now
            if "first_step_s" not in marks and int(scalar(conn, count_sql, patterns)) > steps_at_kill:
                marks["first_step_s"] = now
            done = scalar(
                conn,
                "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid = ANY(%s) AND status = 'SUCCESS'",
                victims,
            )
            if int(done) == len(victims):
                marks["completed_s"] = now
                return True
            return False

        try:
            wait_until(resumed, takeover_after * 4 + 120, "the taken-over runs to complete")
        except RuntimeError as exc:
            rows = conn.execute(
                "SELECT workflow_uuid, status, executor_id, recovery_attempts FROM dbos.workflow_status "
                "WHERE workflow_uuid = ANY(%s)",
                (ids,),
            ).fetchall()
            workers_rows = conn.execute(
                "SELECT worker_id, status, taken_over_by FROM jeeves_workers"
            ).fetchall()
            survivor = second if by_id[victim_id] is first else first
            raise RuntimeError(
                f"{exc}; marks {marks}; victims {victims}; runs {rows}; workers {workers_rows}; "
                f"survivor said:\n{''.join(survivor.output)[-3000:]}"
            ) from None
        check_outcomes(conn, ids)
    return {
        "heartbeat_s": heartbeat,
        "takeover_after_s": takeover_after,
        "runs_taken_over": len(victims),
        "steps_before_kill": steps_at_kill,
        **marks,
    }


class StartupTakeover(RuntimeError):
    """A worker was taken over while it started (its start-up outlasted the takeover time)."""


def both_beating(conn: Any, started: list[WorkerProcess], takeover_after: float) -> None:
    """Until every worker has beaten since the last one was ready, all still alive: a worker
    whose start-up (between registering and its first beat) outlasts `takeover_after` is
    taken over by a peer and stops itself (exit 75); that is a StartupTakeover."""
    since = scalar(conn, "SELECT now()")

    def beating() -> bool:
        for worker in started:
            if worker.process.poll() is not None:
                raise StartupTakeover(f"worker {worker.worker_id} exited: {''.join(worker.output)[-500:]}")
        rows = conn.execute(
            "SELECT status, heartbeat_at >= %s FROM jeeves_workers WHERE worker_id = ANY(%s)",
            (since, [w.worker_id for w in started]),
        ).fetchall()
        if any(status != "alive" for status, _ in rows):
            raise StartupTakeover(f"a worker was taken over while starting: {rows}")
        return len(rows) == len(started) and all(fresh for _, fresh in rows)

    wait_until(beating, takeover_after * 4 + 60, "both workers to beat")


def takeover(
    cluster: Cluster | Server, reps: int, heartbeat: float, takeover_after: float, args: argparse.Namespace
) -> dict[str, Any]:
    samples, startup_takeovers, attempt = [], [], 0
    while len(samples) < reps:
        attempt += 1
        try:
            samples.append(takeover_once(cluster, attempt, heartbeat, takeover_after, args))
        except StartupTakeover as exc:  # counted and reported, then the repetition starts again
            startup_takeovers.append(str(exc)[:300])
            if len(startup_takeovers) > reps:
                raise
    summary: dict[str, Any] = {
        "heartbeat_s": heartbeat,
        "takeover_after_s": takeover_after,
        "reps": reps,
        "startup_takeovers": startup_takeovers,
    }
    for key in ("dead_s", "first_step_s", "completed_s"):
        values = [s[key] for s in samples if key in s]
        summary[key] = (
            {"median": statistics.median(values), "max": max(values), "min": min(values)} if values else None
        )
    summary["samples"] = samples
    return summary


# -- main -------------------------------------------------------------------------------------
