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
