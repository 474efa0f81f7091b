"""bench/durable.py runs end to end in a tiny mode on the tests' PostgreSQL server and
writes its report: 4 runs on 1 worker, one takeover, a few journal records.

A harness check, not a measurement: nothing here looks at a time. It counts what the
benchmark counted (runs, journal rows, runs taken over) against what the work must make.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, subprocess_env
from tests.postgres import Cluster

pytest.importorskip("dbos", reason="the durable bench needs DBOS: pip install -e '.[dev,dbos]'")

pytestmark = pytest.mark.postgres

TINY = (
    "--runs 4 --workers 1 --takeover-reps 1 --heartbeat 0.2 --takeover-after 2 --takeover-runs 3 "
    "--default-takeover-reps 0 --steps 8 --loops 2"
)


def test_durable_bench_measures_throughput_takeover_and_journal_cost(
    postgres_cluster: Cluster, tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "bench/durable.py",
            "--server",
            postgres_cluster.url("postgres"),
            *TINY.split(),
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "DURABLE.json").read_text())
    (run,) = data["throughput"]
    assert (run["workers"], run["runs"]) == (1, 4)
    assert sum(run["runs_per_worker"].values()) == 4
    # Each run: 4 model steps; 5 sessions (the root, actor and critic twice), each written
    # when it starts and when it ends.
    assert (run["steps"], run["sessions"]) == (16, 20)
    assert run["table_writes"]["public.jeeves_steps"]["inserted"] == 16
    assert run["table_writes"]["dbos.workflow_status"]["inserted"] == 4
    assert "dbos.dbos_migrations" not in run["table_writes"]  # set-up is not counted against the runs
    assert run["connections_peak"] > run["connections_idle"] > 0
    assert run["worker_cpu_ms_per_run"] is not None  # read from /proc for the worker process
    (plan,) = data["takeover"]
    (sample,) = plan["samples"]
    assert sample["runs_taken_over"] >= 1 and sample["steps_before_kill"] >= 1
    assert {"dead_s", "first_step_s", "completed_s"} <= set(sample)
    journal = data["journal"]
    assert journal["records"] == 8
    for store in ("memory", "sqlite", "postgres"):
        assert journal[store]["write"]["n"] == journal[store]["read_cold"]["n"] == 8
        assert journal[store]["loop"]["n"] == 2
    report = (tmp_path / "DURABLE.md").read_text()
    for heading in (
        "## 1. Throughput",
        "## 2. Takeover after `kill -9`",
        "## 3. The journal's per-step cost",
    ):
        assert heading in report
    assert (
        "| current | 1 | 20 | 4 |" in report and "| postgres |" in report and "load average" in report.lower()
    )
    assert run["code"] == "current" and run["connections_opened"] >= 0
    assert (tmp_path / "DURABLE.svg").read_text().startswith("<svg")
