"""`create_app(database=...)`: runs a worker persisted in a SQLite journal's event log are
listed beside the server's own and followed over SSE, live, with `Last-Event-ID`."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
import httpx
import pytest

from jeeves.errors import UserError
from jeeves.events import ModelDelta, SessionCompleted
from jeeves.journal.eventlog import open_event_log
from jeeves.server import create_app
from tests.server.conftest import Sse, asgi_client, live_server, messages, parse_sse


async def write(path: Path, root: str, seqs: range, status: str | None = None) -> None:
    """What a worker persists: `root`'s events `seqs` (registered first), then `status`."""
    log = open_event_log(path)
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
async def test_database_runs_are_listed_and_last_event_id_resumes_after_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await write(path, "done", range(1, 5), status="completed")
    await write(path, "going", range(1, 3))
    app = create_app({}, database=str(path))
    async with asgi_client(app) as client:
        listed = {r["session_id"]: r for r in (await client.get("/runs")).json()["runs"]}
        resumed = messages((await client.get("/runs/done/events", headers={"Last-Event-ID": "2"})).text)
        by_query = messages((await client.get("/runs/done/events?last_event_id=4")).text)
        one = (await client.get("/runs/done")).json()
        missing = await client.get("/runs/nope/events")
    assert {k: (r["status"], r["last_seq"], r["source"]) for k, r in listed.items()} == {
        "done": ("completed", 5, "database"),
        "going": ("running", 2, "database"),
    }
    assert [m.id for m in resumed] == ["3", "4", "5", None]  # exactly the events after 2, then end
    assert resumed[-1].event == "end" and json.loads(resumed[-1].data) == {
        "session_id": "done",
        "status": "completed",
        "last_seq": 5,
    }
    assert [m.id for m in by_query] == ["5", None]
    assert one["status"] == "completed" and one["task"] == "Write add"
    assert missing.status_code == 404


def test_a_follower_gets_events_as_they_are_persisted_until_the_run_ends(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    anyio.run(write, path, "job", range(1, 3))
    app = create_app({}, database=str(path), keepalive_s=0.2)
    got: list[Sse] = []
    seen_two = threading.Event()
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:

        def follow() -> None:
            with client.stream("GET", "/runs/job/events") as response:
                for message in parse_sse(response.iter_lines()):
                    if message is not None:
                        got.append(message)
                        if message.id == "2":
                            seen_two.set()

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        assert seen_two.wait(30), got
        anyio.run(write, path, "job", range(3, 6), "completed")  # the worker goes on and ends
        reader.join(30)
        assert not reader.is_alive(), "the stream did not end with the run"
    assert [m.id for m in got] == ["1", "2", "3", "4", "5", "6", None]
    assert got[-1].event == "end" and json.loads(got[-1].data)["status"] == "completed"
    assert json.loads(got[0].data)["type"] == "model.delta"


@pytest.mark.anyio
async def test_a_database_that_holds_no_journal_stops_the_app_at_start(tmp_path: Path) -> None:
    app = create_app({}, database=str(tmp_path / "missing.db"))
    with pytest.raises(UserError, match="There is no journal at"):
        async with asgi_client(app):
            pass
