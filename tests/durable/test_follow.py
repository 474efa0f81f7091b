"""`jeeves serve --database` follows, live, runs that worker processes execute on a real
PostgreSQL: the persisted events are the run's own, a client re-attaching with
`Last-Event-ID` gets exactly the missing ones, and a takeover after `kill -9` keeps the
followed sequence gap-free and without duplicates."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

import jeeves
from jeeves.durable import submit, wait
from jeeves.events import event_to_json
from tests.conftest import jeeves_cli, jeeves_serve, offline_env
from tests.durable import archs
from tests.durable.conftest import TARGET, CountingServer, WorkerProcess, environ
from tests.server.conftest import Sse, parse_sse

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

FAST = ("--heartbeat", "0.2", "--takeover-after", "4", "--poll", "0.1")
TAKEOVER = ("--heartbeat", "0.5", "--takeover-after", "5", "--poll", "0.1")
"""For the kill test: slow enough that a survivor stalled by a loaded machine is not fenced."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def follow(
    client: httpx.AsyncClient, sid: str, *, last: str | None = None, until: str | None = None
) -> list[Sse]:
    """The SSE messages of run `sid` (keep-alives dropped), to the end or to the first whose
    data mentions `until` (then the connection is dropped)."""
    headers = {"Last-Event-ID": last} if last is not None else {}
    got: list[Sse] = []
    async with client.stream("GET", f"/runs/{sid}/events", headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        for message in parse_sse([line async for line in _lines(response, until)]):
            if message is not None:
                got.append(message)
    return got


async def _lines(response: httpx.Response, until: str | None) -> AsyncIterator[str]:
    """The response's lines, stopping after the message whose data mentions `until`."""
    stop = False
    async for line in response.aiter_lines():
        yield line
        if until is not None and line.startswith("data:") and until in line:
            stop = True
        if stop and line == "":
            return


def comparable(data: str) -> dict[str, Any]:
    """An event's JSON but for when and how it was emitted (a resumed run serves steps)."""
    event = json.loads(data)
    del event["ts"], event["replayed"]
    return dict(event)


async def uninterrupted(counter: CountingServer, session_id: str) -> list[dict[str, Any]]:
    """The events of the same run, in this process, with nothing killed."""
    with environ(COUNTER_URL=counter.url):
        async with jeeves.stream(archs.actor_critic(), "Write add", session_id=session_id) as events:
            return [comparable(event_to_json(event)) async for event in events]


async def test_serve_follows_a_workers_run_live_and_last_event_id_resumes_exactly(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    workers(*FAST)
    counter.hold(lambda call: call["session_id"] == "job-f1__critic_1")  # the run stops half-way
    await submit(TARGET, "Write add", session_id="job-f1", database=postgres_url)
    assert counter.held.wait(120), "the run never reached the held call"
    with jeeves_serve("--database", postgres_url, env=offline_env()) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            listed = (await client.get("/runs")).json()["runs"]
            assert [(r["session_id"], r["status"], r["source"]) for r in listed] == [
                ("job-f1", "running", "database")
            ]
            # Live, mid-run: the events up to the held call are there; the follower leaves.
            before = await follow(client, "job-f1", until='"session_id":"job-f1__critic_1"')
            assert (await client.get("/runs/job-f1")).json()["status"] == "running"
            counter.release()
            outcome = await wait("job-f1", database=postgres_url, timeout_s=120)
            assert outcome["status"] == "completed"
            after = await follow(client, "job-f1", last=before[-1].id)  # re-attach where it left
            full = await follow(client, "job-f1")
            bad = await client.get("/runs/job-f1/events", headers={"Last-Event-ID": "x"})
            missing = await client.get("/runs/nope/events")

    assert after[-1].event == "end" and json.loads(after[-1].data)["status"] == "completed"
    assert [m.data for m in before + after] == [m.data for m in full]  # nothing missing, nothing twice
    seqs = [int(m.id or 0) for m in full[:-1]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert [comparable(m.data) for m in full[:-1]] == await uninterrupted(counter, "job-f1")
    assert bad.status_code == 400 and "'x'" in bad.json()["error"]
    assert missing.status_code == 404


async def test_a_follower_sees_one_gap_free_sequence_across_a_takeover_after_kill_9(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    first, second = workers(*TAKEOVER), workers(*TAKEOVER)
    counter.hold(lambda call: call["session_id"] == "job-f2__critic_1")
    await submit(TARGET, "Write add", session_id="job-f2", database=postgres_url)
    assert counter.held.wait(120), "the run never reached the held call"
    assert counter.held_call is not None
    victim = first if counter.held_call["pid"] == first.pid else second
    with (
        jeeves_serve("--database", postgres_url, env=offline_env()) as base,
        httpx.Client(base_url=base, timeout=120) as client,
    ):
        followed: list[Sse] = []
        mid_run = threading.Event()

        def reader() -> None:
            with client.stream("GET", "/runs/job-f2/events") as response:
                for message in parse_sse(response.iter_lines()):
                    if message is not None:
                        followed.append(message)
                        if '"session_id":"job-f2__critic_1"' in message.data:
                            mid_run.set()

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        assert mid_run.wait(60), f"the follower did not get the run's events: {followed!r}"
        victim.kill()  # mid-call, with a follower attached
        counter.release()
        outcome = await wait("job-f2", database=postgres_url, timeout_s=120)
        thread.join(120)
        assert not thread.is_alive(), "the stream did not end with the run"

    assert outcome["status"] == "completed"
    assert followed[-1].event == "end" and json.loads(followed[-1].data)["status"] == "completed"
    events = followed[:-1]
    seqs = [int(m.id or 0) for m in events]
    assert seqs == list(range(1, len(seqs) + 1))  # no gap, no duplicate
    # The held call emitted nothing before the kill, so the resumed run's served steps are
    # exactly what was persisted: the follower's sequence is the uninterrupted run's.
    assert [comparable(m.data) for m in events] == await uninterrupted(counter, "job-f2")
    assert any(json.loads(m.data)["replayed"] for m in events) is False  # nothing re-sent as a replay


def test_serve_with_an_unreachable_database_says_so_in_one_line_without_the_password() -> None:
    done = jeeves_cli("serve", "--port", "0", "--database", "postgresql://jeeves:s3cret@127.0.0.1:1/jeeves")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "postgresql://jeeves:***@127.0.0.1:1/jeeves" in lines[0] and "s3cret" not in done.stderr
