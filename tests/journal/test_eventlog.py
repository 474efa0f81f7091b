"""The event log on SQLite and on a real PostgreSQL: batches in order, a re-sent batch is a
no-op, the run's status and last seq move with its events, and bad targets are refused."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from jeeves.errors import UserError
from jeeves.events import ModelDelta
from jeeves.journal.eventlog import EventLog, open_event_log

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        pytest.importorskip("psycopg")
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "runs.db")


def batch(*seqs: int) -> list[ModelDelta]:
    return [ModelDelta(session_id="job", text=f"part {n}", seq=n) for n in seqs]


async def test_batches_append_in_order_and_a_resent_batch_changes_nothing(target: str) -> None:
    log: EventLog = open_event_log(target)
    try:
        assert await log.start("job", architecture="codegen", task="Write add") == 0
        await log.append("job", batch(1, 2))
        await log.append("job", batch(3))
        await log.append("job", [ModelDelta(session_id="job", text="other", seq=2)])  # a re-sent seq
        assert [(e.seq, e.text) for e in await log.after("job", 0)] == [  # type: ignore[union-attr]
            (1, "part 1"),
            (2, "part 2"),
            (3, "part 3"),
        ]
        assert [e.seq for e in await log.after("job", 1, limit=1)] == [2]
        run = await log.run("job")
        assert run is not None and (run.status, run.last_seq, run.ended) == ("running", 3, False)
        await log.set_status("job", "completed")
        run = await log.run("job")
        assert run is not None and run.ended and run.summary()["architecture"] == "codegen"
        assert await log.start("job", architecture="codegen", task="Write add") == 3  # taken over: goes on
        assert [r.session_id for r in await log.runs()] == ["job"]
        assert await log.run("other") is None and await log.after("other", 0) == []
    finally:
        await log.aclose()


async def test_a_second_process_reads_what_the_first_wrote(target: str) -> None:
    writer, reader = open_event_log(target), open_event_log(target, create=False)
    try:
        await writer.start("job", architecture="codegen", task="t")
        await writer.append("job", batch(1))
        assert [e.seq for e in await reader.after("job", 0)] == [1]
        await writer.append("job", batch(2))
        assert [e.seq for e in await reader.after("job", 1)] == [2]
    finally:
        await writer.aclose()
        await reader.aclose()


async def test_targets_that_cannot_hold_a_log_are_refused_naming_them(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"database='run.jsonl' cannot hold an event log"):
        open_event_log("run.jsonl")
    missing = open_event_log(f"sqlite:///{tmp_path}/missing.db", create=False)
    with pytest.raises(UserError, match="There is no journal at"):
        await missing.runs()
    await missing.aclose()


@pytest.mark.postgres
async def test_appends_of_runs_at_once_are_one_statement_and_each_run_gets_its_own(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    from jeeves.journal import pgbatch

    merged: list[int] = []
    real = pgbatch._merged

    def counted(conn: object, calls: list[pgbatch.Call]) -> None:
        if calls:  # a kind runs at its first call; the others find it done
            merged.append(len(calls))
        real(conn, calls)

    monkeypatch.setattr(pgbatch, "_merged", counted)
    log = open_event_log(postgres_url)
    roots = [f"run{i}" for i in range(5)]
    try:
        for root in roots:
            await log.start(root, architecture="codegen", task="t")
        async with anyio.create_task_group() as group:
            for i, root in enumerate(roots):
                group.start_soon(
                    log.append,
                    root,
                    [ModelDelta(session_id=root, text=f"{root} {n}", seq=n) for n in range(1, i + 2)],
                )
        assert merged == [5]
        for i, root in enumerate(roots):
            assert [(e.seq, e.text) for e in await log.after(root, 0)] == [  # type: ignore[union-attr]
                (n, f"{root} {n}") for n in range(1, i + 2)
            ]
            run = await log.run(root)
            assert run is not None and run.last_seq == i + 1
    finally:
        await log.aclose()


@pytest.mark.postgres
async def test_a_batch_of_appends_finds_its_runs_by_key_not_by_reading_every_run(postgres_url: str) -> None:
    """The runs table grows with every run ever logged: an append reads only its runs' rows."""
    psycopg = pytest.importorskip("psycopg")
    from jeeves.journal.eventlog_sql import _APPEND

    log = open_event_log(postgres_url)
    try:
        await log.start("job", architecture="codegen", task="t")  # the tables
    finally:
        await log.aclose()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jeeves_event_runs SELECT 'old' || n, 'a', 't', 'completed', 3, 0 "
            "FROM generate_series(1, 5000) AS n"
        )
        conn.execute("ANALYZE jeeves_event_runs")
        doc = '[["job", 1, 1.0, [[1, "{}"]], null], ["old7", null, 1.0, [], "failed"]]'
        plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + _APPEND, (doc,)).fetchall())
    assert "Seq Scan on jeeves_event_runs" not in plan, plan


async def test_events_and_statuses_keep_their_exact_text(target: str) -> None:
    """Quotes, backslashes, newlines, non-ASCII and emoji come back as they went in, and a
    status-only append sets the status and keeps the last seq."""
    text = 'a "quoted" \\ back\nslash, déjà vu, 字, 🙂, \t\u2028'
    log = open_event_log(target)
    try:
        await log.start("job", architecture="codegen", task="t")
        await log.append("job", [ModelDelta(session_id="job", text=text, seq=1)])
        await log.append("job", [], status="failed")
        assert [e.text for e in await log.after("job", 0)] == [text]  # type: ignore[attr-defined]
        run = await log.run("job")
        assert run is not None and (run.status, run.last_seq) == ("failed", 1)
    finally:
        await log.aclose()
