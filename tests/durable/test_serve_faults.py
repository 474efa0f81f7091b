"""`jeeves serve --database` through a PostgreSQL restart: reads answer 503 with Retry-After
during the outage (never 500), a follower gets every event and `event: end` after it, and a
run whose log still says `running` shows how its journal says it ended."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest

from jeeves.events import ModelDelta, SessionCompleted
from jeeves.journal import retry as _retry
from jeeves.journal.eventlog import open_event_log
from jeeves.journal.postgres import PostgresJournal
from jeeves.journal.records import SessionRecord
from jeeves.server import create_app
from tests.postgres import Cluster
from tests.server.conftest import Sse, asgi_client, live_server, parse_sse

pytestmark = [pytest.mark.postgres]


@pytest.fixture
def db(own_postgres: Cluster) -> str:
    return own_postgres.database()


async def write(url: str, root: str, seqs: range, status: str | None = None) -> None:
    """What a worker persists: `root`'s events `seqs` (registered first), then `status`."""
    log = open_event_log(url)
    try:
        if seqs.start == 1:
            await log.start(root, architecture="codegen", task="Write add")
        events = [ModelDelta(session_id=root, text=f"part {n}", seq=n) for n in seqs]
        if status is not None:
            events.append(
                SessionCompleted(session_id=root, seq=seqs.stop, output="done", stop_reason="approved")
            )
        await log.append(root, events)
        if status is not None:
            await log.set_status(root, status)
    finally:
        await log.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_reads_during_an_outage_answer_503_with_retry_after(own_postgres: Cluster, db: str) -> None:
    await write(db, "job", range(1, 3))
    app = create_app({}, database=db)
    async with asgi_client(app) as client:
        assert (await client.get("/runs")).status_code == 200
        own_postgres.stop_server()
        try:
            started = time.monotonic()
            listed, one = await client.get("/runs"), await client.get("/runs/job")
            assert time.monotonic() - started < 15
        finally:
            own_postgres.start_server()
        for response in (listed, one):
            assert response.status_code == 503, response.text
            assert response.headers["Retry-After"] == "5"
            assert "does not answer" in response.json()["error"]
        back = await client.get("/runs/job")
        assert back.status_code == 200 and back.json()["status"] == "running"


def test_a_follower_through_a_restart_gets_every_event_and_the_end(own_postgres: Cluster, db: str) -> None:
    _retry.configure(20.0)
    try:
        anyio.run(write, db, "job", range(1, 3))
        app = create_app({}, database=db, keepalive_s=0.2)
        got: list[Sse] = []
        seen_two = threading.Event()
        with live_server(app) as server, httpx.Client(base_url=server.url, timeout=60) as client:

            def follow() -> None:
                with client.stream("GET", "/runs/job/events", headers={"Last-Event-ID": "1"}) as response:
                    for message in parse_sse(response.iter_lines()):
                        if message is not None:
                            got.append(message)
                            if message.id == "2":
                                seen_two.set()

            reader = threading.Thread(target=follow, daemon=True)
            reader.start()
            assert seen_two.wait(30), got
            own_postgres.restart(2.0)  # the follower polls into an outage
            anyio.run(write, db, "job", range(3, 6), "completed")  # the worker goes on and ends
            reader.join(30)
            assert not reader.is_alive(), "the stream did not end with the run"
    finally:
        _retry.configure(None)
    assert [m.id for m in got] == ["2", "3", "4", "5", "6", None]
    assert got[-1].event == "end" and json.loads(got[-1].data)["status"] == "completed"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_run_whose_last_status_write_was_lost_shows_how_its_journal_says_it_ended(
    db: str, tmp_path: Path
) -> None:
    await write(db, "lost", range(1, 3))  # the log says running: the worker's final write never came
    journal = PostgresJournal(db)
    await journal.put_session(
        SessionRecord(
            session_id="lost", role="run", architecture="codegen", task="Write add", status="failed"
        )
    )
    await journal.aclose()
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("UPDATE jeeves_event_runs SET updated = updated - 60 WHERE root = 'lost'")

    app = create_app({}, database=db)
    async with asgi_client(app) as client:
        one = (await client.get("/runs/lost")).json()
        body = (await client.get("/runs/lost/events", headers={"Last-Event-ID": "2"})).text
    assert one["status"] == "failed"
    assert "event: end" in body and '"status": "failed"' in body
    log = open_event_log(db)
    logged = await log.run("lost")
    await log.aclose()
    assert logged is not None and logged.status == "failed"  # written back for every reader
