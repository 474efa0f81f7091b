"""Durable runs on a real PostgreSQL: throughput of `jeeves worker` processes, takeover
latency after `kill -9`, and the per-step cost of the PostgreSQL journal next to SQLite.

    python bench/durable.py                 # 1,000 runs on 1, 2, 4 workers; 5 + 2 takeovers
    python bench/durable.py --quick         # 100 runs, 2 takeovers: a couple of minutes
    python bench/durable.py --runs 4 --workers 1 --takeover-reps 1 --default-takeover-reps 0 \
        --steps 8 --loops 2 --out /tmp/d    # tiny, as tests/test_bench_durable.py runs it

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
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import durable_journal  # noqa: E402
import durable_model  # noqa: E402
import durable_report  # noqa: E402
from pgcluster import Cluster, find_binaries  # noqa: E402

TARGET = "durable_model:actor_critic"
SETUP_TARGET = "durable_model:setup"
POLL_S = 0.02
"""How often the bench looks at the database while it waits (its own clock, one connection)."""


def worker_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), str(BENCH), env.get("PYTHONPATH", "")) if p)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.pop("PYTHONSTARTUP", None)
    return env


class WorkerProcess:
    """`python -m jeeves worker TARGET` in a subprocess, ready once it prints its ready line."""

    def __init__(self, database: str, target: str, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jeeves", "worker", target, "--database", database, *args],
            cwd=REPO,
            env=worker_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.output: list[str] = []
        self.worker_id = ""
        self.cpu_ready: float | None = None
        """CPU seconds used by the time every worker was ready (its start-up)."""
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            found = re.match(r"jeeves worker (\S+) ready", line)
            if found:
                self.worker_id = found.group(1)
                self.ready.set()
        self.ready.set()  # exited: wait_ready says so

    def wait_ready(self, timeout_s: float = 180) -> None:
        if not self.ready.wait(timeout_s) or not self.worker_id:
            self.stop()
            raise RuntimeError(f"the worker did not start:\n{''.join(self.output)[-3000:]}")

    def cpu_s(self) -> float | None:
        """CPU seconds (user + system, all threads) the process has used, while it is alive."""
        return process_cpu_s(self.process.pid, children=False)

    def peak_rss_mb(self) -> float | None:
        """The process's high-water resident set (VmHWM), while it is alive."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        found = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(found.group(1)) / 1024 if found else None

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait(timeout=60)
        self._reader.join(timeout=10)


def process_cpu_s(pid: int, *, children: bool) -> float | None:
    """CPU seconds of process `pid` (user + system), with its exited children's if asked."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = sum(int(f) for f in fields[11 : 15 if children else 13])  # utime stime [cutime cstime]
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu_s(pid: int | None) -> float | None:
    """CPU seconds of a PostgreSQL server: the postmaster, its exited backends (reaped into
    its children's times) and the processes running under it now. None without its pid."""
    if pid is None:
        return None
    total = process_cpu_s(pid, children=True)
    if total is None:
        return None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # ppid
            total += process_cpu_s(int(entry.name), children=True) or 0.0
    return total


@contextmanager
def workers(database: str, n: int, args: list[str], target: str = TARGET) -> Iterator[list[WorkerProcess]]:
    """`n` workers started together; all ready on entry, all stopped on exit."""
    started = [WorkerProcess(database, target, args) for _ in range(n)]
    try:
        for worker in started:
            worker.wait_ready()
        for worker in started:
            worker.cpu_ready = worker.cpu_s()
        yield started
    finally:
        for worker in started:
            worker.stop()


def create_dbos_tables(database: str) -> None:
    """DBOS creates its tables when a worker launches (a client cannot): launch one on
    another queue and stop it, so the benchmark's runs wait queued before any worker runs."""
    with workers(database, 1, ["--poll", "1"], target=SETUP_TARGET):
        pass


def enqueue(database: str, count: int, prefix: str) -> tuple[list[str], float]:
    """Queue `count` runs through one DBOS client (as `jeeves.durable.submit` does, without
    a client per run); returns their ids and the seconds taken."""
    from jeeves.durable import engine
    from jeeves.durable.targets import queue_name

    client = engine.dbos().DBOSClient(system_database_url=database, serializer=engine.serializer())
    ids = [f"{prefix}-{i}" for i in range(count)]
    started = time.perf_counter()
    try:
        for session_id in ids:
            options = {
                "queue_name": queue_name(TARGET),
                "workflow_name": engine.WORKFLOW_NAME,
                "workflow_id": session_id,
                "app_version": engine.APP_VERSION,
            }
            client.enqueue(options, TARGET, "Write add(a, b)")
    finally:
        client.destroy()
    return ids, time.perf_counter() - started


def connect(database: str) -> Any:
    import psycopg

    return psycopg.connect(database, autocommit=True)


def scalar(conn: Any, sql: str, *args: object) -> Any:
    row = conn.execute(sql, args).fetchone()
    return row[0] if row else None


def other_connections(conn: Any) -> int:
    """Client connections to this database, the bench's own excepted."""
    return int(
        scalar(
            conn,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
        )
    )


def wait_until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(POLL_S)


class Counted:
    """A connection that counts its statements (each one its own transaction, autocommit),
    so the database's commit count can leave out the bench's own."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.queries = conn, 0

    def execute(self, sql: str, args: Any = None) -> Any:
        self.queries += 1
        return self.conn.execute(sql, args)


def diff_writes(
    after: dict[str, dict[str, int]], before: dict[str, dict[str, int]]
) -> dict[str, dict[str, int]]:
    zero = {"inserted": 0, "updated": 0, "deleted": 0}
    out = {}
    for name, counts in after.items():
        delta = {k: v - before.get(name, zero)[k] for k, v in counts.items()}
        if any(delta.values()):
            out[name] = delta
    return out


def table_writes(conn: Any) -> dict[str, dict[str, int]]:
    rows = conn.execute(
        "SELECT schemaname || '.' || relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables "
        "WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY 1"
    ).fetchall()
    return {name: {"inserted": ins, "updated": upd, "deleted": dele} for name, ins, upd, dele in rows}


def check_outcomes(conn: Any, ids: list[str]) -> None:
    """Every run succeeded with the text an uninterrupted run returns."""
    rows = conn.execute(
        "SELECT w.workflow_uuid, w.status, COALESCE(o.output, w.output) FROM dbos.workflow_status w "
        "LEFT JOIN dbos.workflow_output o USING (workflow_uuid) WHERE w.workflow_uuid = ANY(%s)",
        (ids,),
    ).fetchall()
    bad = [(wid, status, (output or "")[:200]) for wid, status, output in rows if status != "SUCCESS"]
    bad += [
        (wid, status, output[:200])
        for wid, status, output in rows
        if status == "SUCCESS" and json.loads(output or "{}").get("text") != durable_model.TEXT
    ]
    if bad or len(rows) != len(ids):
        raise RuntimeError(f"{len(rows)} of {len(ids)} runs found; not as expected: {bad[:5]}")


# -- 1. throughput ---------------------------------------------------------------------------


def throughput(
    cluster: Cluster | Server, runs: int, n_workers: int, args: argparse.Namespace
) -> dict[str, Any]:
    """`runs` queued runs executed by `n_workers` fresh workers on a fresh database."""
    database = cluster.database(f"tp{n_workers}_{runs}")
    create_dbos_tables(database)
    flags = ["--concurrency", str(args.concurrency), "--poll", str(args.poll)]
    with connect(database) as raw:
        conn = Counted(raw)
        writes_before = table_writes(conn)
        wal_before = scalar(conn, "SELECT pg_current_wal_lsn()")
        commits_before = scalar(
            conn, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
        ids, enqueue_s = enqueue(database, runs, "run")
        rss: list[float | None] = []
        cpu: list[float | None] = []
        server_before = server_cpu_s(server_pid(cluster))
        with workers(database, n_workers, flags) as started:
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
        "workers": n_workers,
        "runs": runs,
        "concurrency": args.concurrency,
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
        "wal_bytes": wal_bytes,
        "wal_bytes_per_run": wal_bytes / runs,
    }


# -- 2. takeover ----------------------------------------------------------------------------


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


def connection_cost(cluster: Cluster | Server, count: int) -> dict[str, Any]:
    """What opening a connection costs: `count` times connect, `SELECT 1`, close (as a worker
    opens a journal and a run-lock connection for each run): wall and server CPU per connection."""
    database = cluster.database("connections")
    before = server_cpu_s(server_pid(cluster))
    started = time.perf_counter()
    for _ in range(count):
        with connect(database) as conn:
            conn.execute("SELECT 1")
    wall = time.perf_counter() - started
    after = server_cpu_s(server_pid(cluster))
    server_ms = (after - before) * 1e3 / count if after is not None and before is not None else None
    return {"count": count, "wall_ms": wall * 1e3 / count, "server_cpu_ms": server_ms}


def server_pid(cluster: Cluster | Server) -> int | None:
    """The postmaster's pid when this bench started the server (setpriv execs it)."""
    process = getattr(cluster, "process", None)
    return process.pid if process is not None else None


class Server:
    """A PostgreSQL server already running (`--server URL`): databases are made in it with
    names of this process's own, and left there."""

    def __init__(self, url: str) -> None:
        self.admin = url
        self.prefix = f"bench{os.getpid()}_"

    def database(self, name: str) -> str:
        full = self.prefix + name
        with connect(self.admin) as conn:
            conn.execute(f'CREATE DATABASE "{full}"')
        scheme, rest = self.admin.split("://", 1)
        base = rest.split("?", 1)[0].rsplit("/", 1)[0]
        return f"{scheme}://{base}/{full}"


def _git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO)
    return done.stdout.strip() or "unknown"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--runs", type=int, default=None, help="queued runs per worker count (1,000; --quick 100)"
    )
    parser.add_argument("--quick", action="store_true", help="100 runs, 2 + 0 takeovers, fewer journal steps")
    parser.add_argument("--workers", default="1,2,4", help="worker counts to measure (default 1,2,4)")
    parser.add_argument("--concurrency", type=int, default=20, help="runs at once per worker (default 20)")
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
        cluster = Cluster(bin_dir, max_connections=max(200, peak_workers * args.concurrency * 3 + 50))
        cluster.start()
        server, admin = cluster, cluster.url("postgres")
    results: dict[str, Any] = {}
    try:
        with connect(admin) as conn:
            results["postgres"] = scalar(conn, "SHOW server_version")
        results["throughput"] = []
        for n in args.worker_counts:
            print(f"throughput: {args.runs} runs on {n} worker(s)", file=sys.stderr, flush=True)
            results["throughput"].append(throughput(server, args.runs, n, args))
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
    print(f"wrote {args.out / 'DURABLE.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
