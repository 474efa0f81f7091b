"""Turn bench/durable.py's results (DURABLE.json) into DURABLE.md. Standard library only."""

from __future__ import annotations

from typing import Any


def _f(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def _header(meta: dict[str, Any], postgres: str) -> list[str]:
    delay_ms = meta["model_delay_s"] * 1e3
    return [
        "# Durable runs: workers on PostgreSQL, takeover, the journal's per-step cost",
        "",
        f"{meta['date']} · commit `{meta['commit']}` · Python {meta['python']} · {meta['machine']} · "
        f"PostgreSQL {postgres} (throwaway cluster, `fsync=off`) · DBOS {meta['dbos']} · psycopg "
        f"{meta['psycopg']} · whole run {meta['seconds']:.0f} s · `{meta['command'].strip()}`",
        "",
        f"Load average (1, 5, 15 min) before the run {meta['load_before']}, after {meta['load_after']}. "
        "This machine has 2 cores shared with other engineers' test runs: the PostgreSQL server, "
        "every worker process and this bench share those 2 cores, so rates are lower bounds and "
        "times upper bounds, and adding workers cannot add CPU.",
        "",
        f"The work: an ActorCritic whose model (bench/durable_model.py) sleeps {delay_ms:.0f} ms per call "
        f"(an `anyio.sleep`, no CPU) and answers offline; the critic rejects the first draft and "
        f"approves the second, so {meta['calls_per_run']} model calls a run, each journaled as one step. "
        "Each worker is a `python -m jeeves worker durable_model:actor_critic` process.",
        "",
    ]


def _throughput(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    first = rows[0]
    ones = {
        r.get("code", "current"): r
        for r in rows
        if r["workers"] == 1 and r["concurrency"] == first["concurrency"]
    }
    out = [
        "## 1. Throughput: queued runs on 1, 2 and 4 workers",
        "",
        f"{first['runs']} runs queued first (one DBOS client), then the workers start together, each "
        f"with `--concurrency {first['concurrency']} --poll {first['poll_s']}`. Wall: from the first "
        "run's dequeue to the last run's completion (the database's timestamps). Steady: the runs "
        "completed between the 10th and the 90th percentile of completion, over that time "
        "(leaves out worker start-up and the tail). Every run is checked: status SUCCESS, text as an "
        "uninterrupted run's.",
        "",
        "| code | workers | concurrency | runs | wall s | runs/s | × 1 worker | steady runs/s | × 1 worker | runs per worker | "
        "connections idle / peak | worker peak RSS MB |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|---|",
    ]
    for r in rows:
        one = ones.get(r.get("code", "current")) if r["concurrency"] == first["concurrency"] else None
        ratio = r["runs_per_s"] / one["runs_per_s"] if one else None
        steady = r["steady_runs_per_s"]
        base_steady = one["steady_runs_per_s"] if one else None
        steady_ratio = steady / base_steady if steady and base_steady else None
        spread = " / ".join(str(v) for v in sorted(r["runs_per_worker"].values(), reverse=True))
        rss = " / ".join(_f(v, 0) for v in r["worker_peak_rss_mb"])
        out.append(
            f"| {r.get('code', 'current')} | {r['workers']} | {r['concurrency']} | {r['runs']} | "
            f"{_f(r['wall_s'], 1)} | {_f(r['runs_per_s'], 1)} | "
            f"{_f(ratio, 2)} | {_f(steady, 1)} | {_f(steady_ratio, 2)} | {spread} | "
            f"{r['connections_idle']} / {r['connections_peak']} | {rss} |"
        )
    ideal = first["concurrency"] / (0.05 * 4 + first["poll_s"] / 2)
    out += [
        "",
        f"A worker's latency bound: {first['concurrency']} slots, each run ≥ 4 × 50 ms of model time "
        f"plus on average half a poll before it is dequeued: about {ideal:,.0f} runs/s per worker "
        "if CPU were free. Below that, the workers are CPU-bound (jeeves, DBOS, psycopg, and "
        "PostgreSQL itself, all on the same 2 cores).",
        "",
    ]
    for r in rows:
        worker_ms, server_ms = r.get("worker_cpu_ms_per_run"), r.get("server_cpu_ms_per_run")
        if worker_ms is None or server_ms is None:
            continue
        busy = (worker_ms + server_ms) * r["runs_per_s"] / 1e3
        out.append(
            f"- {r.get('code', 'current')}, {r['workers']} worker(s) at --concurrency {r['concurrency']}: "
            f"{worker_ms:,.1f} ms of worker CPU and {server_ms:,.1f} ms of "
            f"PostgreSQL CPU per run; at {r['runs_per_s']:,.1f} runs/s that keeps {busy:.2f} of the 2 "
            "cores busy (the rest went to other processes on the machine)."
        )
    out += [
        "",
        "### What the database wrote",
        "",
        "| code | workers | concurrency | journal steps | bytes / step | sessions | bytes / session | rows written / run | "
        "rows / s | transactions / run | connections opened / run | WAL bytes / run | worker CPU ms / run | "
        "PostgreSQL CPU ms / run |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        opened = r.get("connections_opened")
        out.append(
            f"| {r.get('code', 'current')} | {r['workers']} | {r['concurrency']} | {r['steps']} | {_f(r['step_bytes_avg'])} | {r['sessions']} | "
            f"{_f(r['session_bytes_avg'])} | {_f(r['rows_per_run'], 1)} | {_f(r['rows_per_s'])} | "
            f"{_f(r['commits_per_run'], 1)} | {_f(None if opened is None else opened / r['runs'], 2)} | "
            f"{_f(r['wal_bytes_per_run'])} | "
            f"{_f(r.get('worker_cpu_ms_per_run'), 1)} | {_f(r.get('server_cpu_ms_per_run'), 1)} |"
        )
    out += [
        "",
        "Transactions: every committed transaction in the database (the workers' reads, DBOS's "
        "queue polls and heartbeats included; the bench's own excluded). Worker CPU: user + system "
        "time of the worker processes after they were ready, summed. PostgreSQL CPU: the server's "
        "processes over the same window (the workers' start-up included). Connections opened: new "
        "server sessions on the database while the runs ran (`pg_stat_database.sessions`, after every "
        "worker was ready), per run.",
    ]
    for one in ones.values():
        code = one.get("code", "current")
        out += ["", f"Rows written per table ({code}, 1 worker, all {one['runs']} runs):", ""]
        out += ["| table | inserted | updated | deleted |", "|---|--:|--:|--:|"]
        for name, w in one["table_writes"].items():
            out.append(f"| {name} | {w['inserted']} | {w['updated']} | {w['deleted']} |")
    return [*out, ""]


def _compare(rows: list[dict[str, Any]]) -> list[str]:
    """Before and after, worker count by worker count, when a baseline was measured."""
    codes = list(dict.fromkeys(r.get("code", "current") for r in rows))
    if len(codes) < 2:
        return []
    before, after = codes[0], codes[-1]
    out = [
        f"## Before and after: {before} → {after}",
        "",
        "![runs/s, transactions and CPU per run, by worker count](DURABLE.svg)",
        "",
        "Both measured in this run, worker count by worker count (the baseline's workers right "
        "before this checkout's), so both saw the same machine load.",
        "",
        "| workers | concurrency | runs/s before → after | × | runs/s per worker before → after | transactions / run "
        "before → after | ÷ | connections opened / run before → after | CPU ms / run (worker + PostgreSQL) "
        "before → after |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for count, slots in dict.fromkeys((r["workers"], r["concurrency"]) for r in rows):
        b = next(
            (
                r
                for r in rows
                if (r["workers"], r["concurrency"]) == (count, slots) and r.get("code") == before
            ),
            None,
        )
        a = next(
            (
                r
                for r in rows
                if (r["workers"], r["concurrency"]) == (count, slots) and r.get("code") == after
            ),
            None,
        )
        if a is None or b is None:
            continue

        def cpu(r: dict[str, Any]) -> float | None:
            w, s = r.get("worker_cpu_ms_per_run"), r.get("server_cpu_ms_per_run")
            return None if w is None or s is None else w + s

        def opened(r: dict[str, Any]) -> float | None:
            return None if r.get("connections_opened") is None else r["connections_opened"] / r["runs"]

        out.append(
            f"| {count} | {slots} | {_f(b['runs_per_s'], 1)} → {_f(a['runs_per_s'], 1)} | "
            f"{_f(a['runs_per_s'] / b['runs_per_s'], 2)} | {_f(b['runs_per_s'] / count, 1)} → "
            f"{_f(a['runs_per_s'] / count, 1)} | {_f(b['commits_per_run'], 1)} → {_f(a['commits_per_run'], 1)} | "
            f"{_f(b['commits_per_run'] / a['commits_per_run'], 2)} | {_f(opened(b), 2)} → {_f(opened(a), 2)} | "
            f"{_f(cpu(b), 1)} → {_f(cpu(a), 1)} |"
        )
    return [*out, ""]


def _takeover(plans: list[dict[str, Any]]) -> list[str]:
    if not plans:
        return []
    out = [
        "## 2. Takeover after `kill -9`",
        "",
        "Two workers; a batch of runs; once a worker holds a run that has journaled a step and is "
        "still pending, it gets SIGKILL. By the bench's clock from the kill: *dead* when the "
        "survivor marked it dead (`jeeves_workers`), *first step* when the first new journal step "
        "of the killed worker's runs was written (the call in flight made again, after the completed "
        "steps were served from the journal), *completed* when all of them had completed (each "
        "checked against an uninterrupted run's text).",
        "",
        "| heartbeat s | takeover-after s | reps | runs taken over | dead: median / max s | "
        "first step: median / max s | completed: median / max s | start-up takeovers |",
        "|--:|--:|--:|---|--:|--:|--:|--:|",
    ]
    for p in plans:

        def cell(key: str, p: dict[str, Any] = p) -> str:
            v = p.get(key)
            return f"{v['median']:.2f} / {v['max']:.2f}" if v else "–"

        taken = ", ".join(str(s["runs_taken_over"]) for s in p["samples"])
        out.append(
            f"| {p['heartbeat_s']:g} | {p['takeover_after_s']:g} | {p['reps']} | {taken} | {cell('dead_s')} | "
            f"{cell('first_step_s')} | {cell('completed_s')} | {len(p.get('startup_takeovers', []))} |"
        )
    out += [
        "",
        "Expected: the killed worker beat last up to one heartbeat before the kill, and the "
        "survivor checks once per heartbeat, so *dead* falls between takeover-after − heartbeat "
        "and takeover-after + heartbeat. After it, DBOS puts the runs back on their queue, the "
        "survivor's next poll (0.1 s) takes them, and each replays its completed steps from the "
        "journal before making the call that was in flight (50 ms).",
        "",
        "*Start-up takeovers*: repetitions started again because a worker was taken over while it "
        "started (its start-up outlasted the takeover time); they are not in the figures. Before this "
        "bench, a worker beat first only once DBOS had launched, and at `--takeover-after 1` or 4 "
        "under this load every start was taken over; a starting worker now beats from its "
        "registration on and takes nobody over until DBOS runs.",
        "",
    ]
    return out


def _journal(j: dict[str, Any] | None) -> list[str]:
    if not j:
        return []
    names = [n for n in ("memory", "sqlite", "postgres") if n in j]
    out = [
        "## 3. The journal's per-step cost: PostgreSQL next to SQLite and memory",
        "",
        f"Through the journal store API in one process (bench/durable_journal.py): {j['records']} real "
        f"model-step records (≈ {j['record_bytes']:,.0f} bytes of JSON each), 4 to a session. Write: "
        "`put_step`, committed before it returns (SQLite in WAL mode on a local file; PostgreSQL on "
        "127.0.0.1 with `fsync=off`, so a real server's commit adds its disk flush). Cold read: "
        "`get_step` on a new store object: a session's first read loads its 4 steps in one "
        "query. Warm: the same reads again. Loop: `jeeves.run` of the ActorCritic with a "
        f"zero-latency model ({j['loops']} runs each, median; the stores take turns run by run), "
        "recording into the store.",
        "",
        "| store | write µs / step (median, p90) | cold read µs / step | warm read µs / step | "
        "ActorCritic loop µs | journal's cost per loop µs |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    none = j["none"]["loop"]["median_us"]
    out.append(f"| no journal | – | – | – | {_f(none)} | 0 |")
    for n in names:
        s = j[n]
        out.append(
            f"| {n} | {_f(s['write']['median_us'], 1)} ({_f(s['write']['p90_us'], 1)}) | "
            f"{_f(s['read_cold']['median_us'], 1)} | {_f(s['read_warm']['median_us'], 1)} | "
            f"{_f(s['loop']['median_us'])} | {_f(s['loop']['median_us'] - none)} |"
        )
    return [*out, ""]


def render(results: dict[str, Any]) -> str:
    lines = _header(results["meta"], results.get("postgres", "?"))
    lines += _compare(results.get("throughput", []))
    lines += _throughput(results.get("throughput", []))
    lines += _takeover(results.get("takeover", []))
    lines += _journal(results.get("journal"))
    conn = results.get("connections")
    if conn:
        lines += [
            f"A new connection (connect, `SELECT 1`, close; {conn['count']} times on 127.0.0.1, trust "
            f"authentication): {_f(conn['wall_ms'], 2)} ms of wall time and "
            f"{_f(conn['server_cpu_ms'], 2)} ms of PostgreSQL CPU each: what a worker that opened a "
            "connection per run (its run lock, as before group commit) paid per run; the table above "
            "counts the connections the workers opened.",
            "",
        ]
    notes = results.get("notes")
    if notes:
        lines += ["## Notes", "", notes, ""]
    return "\n".join(lines).rstrip() + "\n"
