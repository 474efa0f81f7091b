"""Database faults, in process, on a real PostgreSQL that the tests stop and restart: the
journal, the event log, the run lock and the heartbeat wait a restart out (dead pooled
connections are discarded, never handed out again), and past the retry bound fail with a
`JournalError` naming the database, never an exception group."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import psycopg
import pytest

import jeeves
from jeeves import FunctionModel
from jeeves.durable.heartbeat import Heartbeat
from jeeves.durable.runlock import RunLocks, run_lock
from jeeves.errors import JournalError
from jeeves.journal import retry as _retry
from jeeves.journal.eventlog import open_event_log
from jeeves.journal.postgres import PostgresJournal
from jeeves.journal.records import StepRecord
from jeeves.messages import ModelRequest
from tests.postgres import Cluster
from tests.waiting import eventually, wait_until

pytestmark = [pytest.mark.postgres]

TAKEOVER_S = 1.5
"""The heartbeat tests' takeover time: a worker silent this long may be claimed."""
QUIET_S = 1.0
"""How long the heartbeat test watches for a false claim after the database is back: real time
(the property is that nothing happens within a takeover period), not a wait for something."""


@pytest.fixture
def db(own_postgres: Cluster) -> str:
    return own_postgres.database()


@pytest.fixture
def bound() -> Iterator[None]:
    """A short retry bound for the test, the default restored after."""
    _retry.configure(8.0)
    try:
        yield
    finally:
        _retry.configure(None)


def step(session: str, index: int) -> StepRecord:
    return StepRecord(
        session_id=session, index=index, kind="model", fingerprint=f"f{index}", result={"i": index}
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_journal_and_event_log_wait_out_a_restart_on_fresh_connections(
    own_postgres: Cluster, db: str, bound: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, log = PostgresJournal(db), open_event_log(db)
    await store.put_step(step("r", 0))
    await log.start("r", architecture="t", task="x")
    await store.aclose()  # its connection goes to the pool: after the restart it is dead
    store = PostgresJournal(db)

    waiting = threading.Event()  # set once a write below has met the outage and waits it out
    pause = _retry.Backoff.pause

    def waits(backoff: Any, exc: Exception) -> float:
        waiting.set()
        return pause(backoff, exc)

    monkeypatch.setattr(_retry.Backoff, "pause", waits)
    own_postgres.stop_server()  # back once the writes below wait for it
    restarting = threading.Thread(target=lambda: (waiting.wait(60), own_postgres.start_server()))
    restarting.start()
    await store.put_step(step("r", 1))
    await log.set_status("r", "completed")
    restarting.join()

    reader = PostgresJournal(db)
    assert sorted(await reader.step_indices("r")) == [0, 1]
    await reader.aclose()
    logged = await log.run("r")
    assert logged is not None and logged.status == "completed"
    await store.aclose()
    await log.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_past_the_bound_a_write_fails_with_a_journal_error_naming_the_database(
    own_postgres: Cluster, bound: None
) -> None:
    url = own_postgres.database().replace("jeeves@", "jeeves:s3cret@")
    store = PostgresJournal(url)
    await store.put_step(step("r", 0))
    _retry.configure(1.0)
    own_postgres.stop_server()
    try:
        started = time.monotonic()
        with pytest.raises(JournalError) as caught:
            await store.put_step(step("r", 1))
        assert 0.8 < time.monotonic() - started < 5
    finally:
        own_postgres.start_server()
    message = str(caught.value)
    assert "s3cret" not in message and "jeeves:***@127.0.0.1" in message
    assert "did not answer" in message and "jeeves resume" in message
    await store.put_step(step("r", 1))  # back: the same store goes on
    await store.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_database_never_reached_fails_at_once(bound: None) -> None:
    started = time.monotonic()
    with pytest.raises(JournalError, match="cannot connect"):
        await PostgresJournal("postgresql://nobody@127.0.0.1:1/x").put_step(step("r", 0))
    assert time.monotonic() - started < 3


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_run_restarted_mid_step_completes_with_no_step_repeated(
    own_postgres: Cluster, db: str, bound: None
) -> None:
    calls: list[int] = []

    def reply(request: ModelRequest) -> str:
        calls.append(len(calls))
        if len(calls) == 2:  # the first step is journaled; restart while the second is in flight
            own_postgres.restart(1.0)
        return "draft" if len(calls) < 4 else '{"score": 0.9, "issues": [], "summary": "ok"}'

    arch = jeeves.ActorCritic(
        actor=jeeves.Agent("Write.", model=FunctionModel(reply)),
        critic=jeeves.Agent("Judge.", model=FunctionModel(reply)),
        max_rounds=3,
    )
    result = await jeeves.run(arch, "Write add", journal=db, session_id="mid-1")
    assert result.status == "completed"
    made = len(calls)
    resumed = await jeeves.resume(arch, "mid-1", journal=db)  # everything is journaled: nothing runs again
    assert resumed.text == result.text and len(calls) == made


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_run_lock_is_taken_back_after_a_restart(
    own_postgres: Cluster, db: str, bound: None
) -> None:
    async def held_elsewhere() -> bool:  # PostgreSQL tells no one who takes an advisory lock
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            row = await (
                await conn.execute("SELECT pg_try_advisory_lock(27254, hashtext('r-lock'))")
            ).fetchone()
        return row is not None and not row[0]

    async with run_lock(db, "r-lock", poll_s=0.05):
        await anyio.to_thread.run_sync(own_postgres.restart, 1.0)
        await eventually(held_elsewhere, "the holder to take the run lock again", within_s=10)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_workers_run_locks_are_all_taken_back_after_a_restart_and_a_released_one_is_not(
    own_postgres: Cluster, db: str, bound: None
) -> None:
    """The locks of every run in flight share one connection: a restart ends its session,
    and the worker takes each lock still held back on a new one (and only those)."""

    async def held_elsewhere(session: str) -> bool:
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            row = await (
                await conn.execute("SELECT pg_try_advisory_lock(27254, hashtext(%s))", (session,))
            ).fetchone()
        return row is not None and not row[0]

    async def both_held() -> bool:
        return await held_elsewhere("r-a") and await held_elsewhere("r-b")

    async with RunLocks(db, poll_s=0.05).serving() as locks:
        async with locks.hold("r-a"), locks.hold("r-b"):
            async with locks.hold("r-done"):
                pass
            await anyio.to_thread.run_sync(own_postgres.restart, 1.0)
            await eventually(both_held, "the worker to take both run locks again", within_s=10)
            assert not await held_elsewhere("r-done")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_run_whose_lock_cannot_be_taken_back_within_the_bound_stops_with_the_databases_error(
    own_postgres: Cluster, db: str
) -> None:
    """An outage past the retry bound stops the runs holding locks, with the JournalError of
    a database that did not answer (it says to resume), not a lock another worker took."""
    _retry.configure(1.0)
    try:
        async with RunLocks(db, poll_s=0.05).serving() as locks:
            with pytest.raises(JournalError, match="did not answer") as raised:
                async with locks.hold("r-out"):
                    await anyio.to_thread.run_sync(own_postgres.restart, 4.0)
                    await anyio.sleep_forever()  # stopped by the lost lock
            assert "resume" in str(raised.value)
    finally:
        _retry.configure(None)


def test_after_an_outage_longer_than_the_takeover_time_no_live_worker_is_taken_over(
    own_postgres: Cluster, db: str, bound: None
) -> None:
    recovered: list[list[str]] = []
    fenced: list[str] = []
    beats = [
        Heartbeat(
            db,
            name,
            recover=recovered.append,
            fenced=fenced.append,
            heartbeat_s=0.2,
            takeover_after_s=TAKEOVER_S,
        )
        for name in ("a", "b", "c")
    ]
    for beat in beats:
        beat.register()
    dead = Heartbeat(
        db,
        "dead",
        recover=recovered.append,
        fenced=fenced.append,
        heartbeat_s=0.2,
        takeover_after_s=TAKEOVER_S,
    )
    dead.register()  # registered, never beats: really dead
    for beat in beats:
        beat.start()
    try:
        own_postgres.restart(2 * TAKEOVER_S)  # an outage of twice the takeover time
        time.sleep(QUIET_S)  # time, not sync: nothing may happen within a takeover period of reconnecting
        assert recovered == []
        wait_until(lambda: recovered, "the really dead worker to be claimed", within_s=10)
    finally:
        for beat in beats:
            beat.stop(hand_over=False)
    assert recovered == [["dead"]] and fenced == []
    with psycopg.connect(db, autocommit=True) as conn:
        rows = dict(conn.execute("SELECT worker_id, status FROM jeeves_workers").fetchall())
    assert rows == {"a": "alive", "b": "alive", "c": "alive", "dead": "dead"}
