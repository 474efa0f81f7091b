"""A run's parallel children spread over workers (`jeeves.durable.spread`), on a real PostgreSQL.

The fan-out's two workers are queued as branches; with one branch slot per worker, the two
run on two workers at once (the counting server holds one branch's call open until the
other branch, on the other worker, is done). The run's output, its calls (each made once)
and its offline replay are those of a run that executed every child itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import psycopg
import pytest

import jeeves
from jeeves.durable import submit, wait
from jeeves.durable.engine import BRANCH_WORKFLOW
from jeeves.journal.eventlog import open_event_log
from tests.conftest import jeeves_cli
from tests.durable import archs
from tests.durable.conftest import CountingServer, WorkerProcess
from tests.durable.test_worker import FAN_OUT, FAST, journaled

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

ONE_SLOT = ("--concurrency", "1")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def branches(url: str, root: str) -> dict[str, tuple[str, str]]:
    """The run's branch workflows: id -> (status, executor)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        rows = await (
            await conn.execute(
                "SELECT workflow_uuid, status, executor_id FROM dbos.workflow_status WHERE name = %s "
                "AND workflow_uuid LIKE %s",
                (BRANCH_WORKFLOW, root + "\\_\\_%"),
            )
        ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


async def test_parallel_workers_run_on_two_workers_and_the_run_equals_one_run_in_one_process(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    first = workers(*FAST, *ONE_SLOT, target=FAN_OUT)
    second = workers(*FAST, *ONE_SLOT, target=FAN_OUT)
    # Hold the left branch's call: the right branch can only run on the other worker's slot,
    # and must complete there while the left one is still in flight.
    counter.hold(lambda call: "__left_" in call["session_id"])
    await submit(FAN_OUT, "Do both parts", session_id="spread-1", database=postgres_url)
    assert counter.held.wait(120), "the left branch never made its call"
    await journaled(postgres_url, "__right_")
    counter.release()

    outcome = await wait("spread-1", database=postgres_url, timeout_s=120)

    assert outcome["status"] == "completed", (outcome, first.text(), second.text())
    placed = await branches(postgres_url, "spread-1")
    assert sorted(placed) == ["spread-1__left_0", "spread-1__right_0"]
    assert {status for status, _ in placed.values()} == {"SUCCESS"}
    assert {executor for _, executor in placed.values()} == {first.worker_id, second.worker_id}
    pids = {call["session_id"]: call["pid"] for call in counter.calls}
    assert pids["spread-1__left_0"] != pids["spread-1__right_0"]  # made by two processes
    counts = counter.counts()
    assert sum(counts.values()) == 4 and set(counts.values()) == {1}  # supervisor twice, each branch once
    assert outcome["text"] == "Combined: draft spread-1__left_0 | draft spread-1__right_0"

    # The run's persisted stream holds the branches' events, adopted (not marked replayed).
    log = open_event_log(postgres_url)
    try:
        events = await log.after("spread-1", 0, limit=1000)
    finally:
        await log.aclose()
    by_session = Counter(e.session_id for e in events if e.type == "session.completed")
    assert by_session == {"spread-1": 1, "spread-1__left_0": 1, "spread-1__right_0": 1}
    assert not any(e.replayed for e in events)

    replayed = jeeves_cli("replay", postgres_url, "spread-1")  # offline, strict, from the database
    assert replayed.returncode == 0, replayed.stderr
    result = await jeeves.replay(archs.fan_out(), postgres_url, "spread-1")
    assert result.text == outcome["text"]
    assert sum(counter.counts().values()) == 4


async def test_a_worker_killed_while_running_a_branch_hands_it_over_and_no_completed_call_repeats(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    first = workers(*FAST, *ONE_SLOT, target=FAN_OUT)
    second = workers(*FAST, *ONE_SLOT, target=FAN_OUT)
    counter.hold(lambda call: "__right_" in call["session_id"])
    await submit(FAN_OUT, "Do both parts", session_id="spread-2", database=postgres_url)
    assert counter.held.wait(120), "the right branch never made its call"
    assert counter.held_call is not None
    await journaled(postgres_url, "__left_")
    victim, survivor = (first, second) if counter.held_call["pid"] == first.pid else (second, first)
    before = counter.counts()
    victim.kill()
    counter.release()

    outcome = await wait("spread-2", database=postgres_url, timeout_s=120)

    assert outcome["status"] == "completed", (outcome, survivor.text())
    assert outcome["text"] == "Combined: draft spread-2__left_0 | draft spread-2__right_0"
    after = counter.counts()
    in_flight = (counter.held_call["session_id"], counter.held_call["key"])
    assert after[in_flight] == 2  # the call in flight ran again, with the same request
    assert all(after[key] == 1 for key in before if key != in_flight)
    placed = await branches(postgres_url, "spread-2")
    assert placed["spread-2__right_0"] == ("SUCCESS", survivor.worker_id)
    replayed = jeeves_cli("replay", postgres_url, "spread-2")
    assert replayed.returncode == 0, replayed.stderr


async def test_a_worker_that_does_not_spread_runs_the_fan_out_itself(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    workers(*FAST, "--no-spread", target=FAN_OUT)
    await submit(FAN_OUT, "Do both parts", session_id="spread-3", database=postgres_url)
    outcome = await wait("spread-3", database=postgres_url, timeout_s=120)
    assert outcome["text"] == "Combined: draft spread-3__left_0 | draft spread-3__right_0"
    assert await branches(postgres_url, "spread-3") == {}


async def test_a_run_taken_over_by_a_worker_that_does_not_spread_adopts_its_branches_instead_of_rerunning_them(
    postgres_url: str, counter: CountingServer, workers: Callable[..., WorkerProcess]
) -> None:
    spreading = workers(*FAST, *ONE_SLOT, target=FAN_OUT)
    counter.hold(lambda call: "__" in call["session_id"])  # the first branch's call, on the one worker
    await submit(FAN_OUT, "Do both parts", session_id="spread-4", database=postgres_url)
    assert counter.held.wait(120), "no branch made its call"
    assert counter.held_call is not None and counter.held_call["pid"] == spreading.pid
    survivor = workers(*FAST, "--no-spread", target=FAN_OUT)
    spreading.kill()
    counter.release()

    outcome = await wait("spread-4", database=postgres_url, timeout_s=120)

    assert outcome["status"] == "completed", (outcome, survivor.text())
    assert outcome["text"] == "Combined: draft spread-4__left_0 | draft spread-4__right_0"
    after = counter.counts()
    in_flight = (counter.held_call["session_id"], counter.held_call["key"])
    assert after[in_flight] == 2  # the held call ran again once, in its branch on the survivor
    assert all(n == 1 for key, n in after.items() if key != in_flight)  # nothing else twice
    placed = await branches(postgres_url, "spread-4")
    assert {executor for _, executor in placed.values()} == {survivor.worker_id}
