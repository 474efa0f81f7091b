"""The bench's side of the database: its one connection, waiting on a condition, counting
rows and transactions, the server's CPU from /proc, and a server it did not start."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import durable_model
from pgcluster import Cluster

POLL_S = 0.02
"""How often the bench looks at the database while it waits (its own clock, one connection)."""


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
    """The postmaster's pid when this bench started the server (`pg_ctl` writes it first in
    the data folder's postmaster.pid); None for a server given by URL."""
    data = getattr(cluster, "data", None)
    if data is None:
        return None
    try:
        return int((Path(data) / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


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
