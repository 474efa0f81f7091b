"""Worker processes on a PostgreSQL the tests stop and restart: mid-step, while a gate
waits, for longer than the takeover time and longer than the retry bound. Each checks that
no approval is lost, no completed call is made again, the error (if any) is typed, and
every worker is still alive."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import anyio
import psycopg
import pytest

from jeeves.durable import submit, wait
from tests.conftest import jeeves_cli, offline_env
from tests.durable.conftest import TARGET, CountingServer, WorkerProcess
from tests.postgres import Cluster

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

GATED = "tests.durable.archs:refund_agent"
TAKEOVER_S = 3
"""The workers' --takeover-after: a worker silent this long may be claimed."""
FAST = ("--heartbeat", "0.2", "--takeover-after", str(TAKEOVER_S), "--poll", "0.1", "--db-retry-s", "20")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db(own_postgres: Cluster) -> str:
    return own_postgres.database()


@pytest.fixture
def fleet(db: str, counter: CountingServer) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(*args: str, target: str = TARGET) -> WorkerProcess:
        worker = WorkerProcess(db, counter.url, *args, target=target)
        started.append(worker)
        return worker

    try:
        yield start
    finally:
        for worker in started:
            worker.stop()


def alive(db: str, *workers: WorkerProcess) -> None:
    """Every worker process runs, and its heartbeat row says alive."""
    for worker in workers:
        assert worker.process.poll() is None, worker.text()
    with psycopg.connect(db, autocommit=True) as conn:
        rows = dict(conn.execute("SELECT worker_id, status FROM jeeves_workers").fetchall())
    assert all(rows[w.worker_id] == "alive" for w in workers), rows


def outage(cluster: Cluster, down_s: float) -> threading.Thread:
    """Stop the server now; start it again `down_s` seconds later, in the background."""

    def back_later() -> None:
        time.sleep(down_s)  # time, not sync: the outage's length is what these tests vary
        cluster.start_server()

    cluster.stop_server()
    thread = threading.Thread(target=back_later)
    thread.start()
    return thread


async def test_a_restart_mid_step_is_waited_out_and_no_call_is_repeated(
    own_postgres: Cluster, db: str, counter: CountingServer, fleet: Callable[..., WorkerProcess]
) -> None:
    first, second = fleet(*FAST), fleet(*FAST)
    counter.hold(lambda call: call["session_id"] == "mid-1__critic_1")
    await submit(TARGET, "Write add", session_id="mid-1", database=db)
    assert counter.held.wait(120)

    restarted = outage(own_postgres, 2.0)  # the call in flight ends while the database is down
    counter.release()
    restarted.join()
    outcome = await wait("mid-1", database=db, timeout_s=120)

    assert (outcome["status"], outcome.get("text")) == ("completed", "draft 2"), outcome
    assert sum(counter.counts().values()) == 6 and set(counter.counts().values()) == {1}
    alive(db, first, second)


async def test_an_outage_longer_than_the_takeover_time_takes_nobody_over(
    own_postgres: Cluster, db: str, counter: CountingServer, fleet: Callable[..., WorkerProcess]
) -> None:
    first, second = fleet(*FAST), fleet(*FAST)
    counter.hold(lambda call: call["session_id"] == "long-1__actor_1")
    await submit(TARGET, "Write add", session_id="long-1", database=db)
    assert counter.held.wait(120)

    outage(own_postgres, 2 * TAKEOVER_S).join()  # twice --takeover-after
    counter.release()
    outcome = await wait("long-1", database=db, timeout_s=120)

    assert (outcome["status"], outcome.get("text")) == ("completed", "draft 2"), outcome
    assert set(counter.counts().values()) == {1}  # every call once: the run was not taken over
    # A takeover period after the reconnection: a false claim would have happened within it.
    await anyio.sleep(TAKEOVER_S + 0.5)  # time, not sync: nothing may happen in this span
    alive(db, first, second)
    assert "taken over" not in first.text() + second.text()


async def test_an_approval_given_after_a_restart_reaches_the_run_and_the_tool_runs_once(
    own_postgres: Cluster, db: str, counter: CountingServer, fleet: Callable[..., WorkerProcess]
) -> None:
    worker = fleet(*FAST, "--ask", "destructive", target=GATED)
    await submit(GATED, "Refund order 881", session_id="gate-1", database=db)
    suspended = await wait("gate-1", database=db, timeout_s=120)
    assert suspended["status"] == "awaiting_approval", suspended

    own_postgres.stop_server()
    try:  # while the database is down an approval is refused in one line, never half-accepted
        refused = jeeves_cli("approve", db, "gate-1", "--by", "alice")
        assert refused.returncode != 0 and "resumes" not in refused.stdout
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    finally:
        own_postgres.start_server()
    approved = jeeves_cli("approve", db, "gate-1", "--by", "alice")
    assert approved.returncode == 0 and "resumes on a worker" in approved.stdout, approved.stderr

    outcome = await wait("gate-1", database=db, timeout_s=120, stop_at_gates=False)
    assert outcome["status"] == "completed", (outcome, worker.text())
    assert counter.counts()[("tool", "issue_refund:881")] == 1
    alive(db, worker)


async def test_an_approval_accepted_before_a_restart_reaches_the_run(
    own_postgres: Cluster, db: str, counter: CountingServer, fleet: Callable[..., WorkerProcess]
) -> None:
    worker = fleet(*FAST, "--ask", "destructive", target=GATED)
    await submit(GATED, "Refund order 881", session_id="gate-2", database=db)
    assert (await wait("gate-2", database=db, timeout_s=120))["status"] == "awaiting_approval"

    approved = jeeves_cli("approve", db, "gate-2", "--by", "alice")
    assert approved.returncode == 0, approved.stderr
    outage(own_postgres, 3.0).join()  # the run resumes into a database going down

    outcome = await wait("gate-2", database=db, timeout_s=120, stop_at_gates=False)
    assert outcome["status"] == "completed", (outcome, worker.text())
    assert counter.counts()[("tool", "issue_refund:881")] == 1
    alive(db, worker)


async def test_an_outage_past_the_retry_bound_fails_the_run_typed_and_it_resumes_after(
    own_postgres: Cluster, db: str, counter: CountingServer, fleet: Callable[..., WorkerProcess]
) -> None:
    worker = fleet("--heartbeat", "0.2", "--takeover-after", "3", "--poll", "0.1", "--db-retry-s", "2")
    counter.hold(lambda call: call["session_id"] == "over-1__actor_1")
    await submit(TARGET, "Write add", session_id="over-1", database=db)
    assert counter.held.wait(120)

    restarted = outage(own_postgres, 6.0)
    counter.release()  # the call ends; its step cannot be journaled within 2 s
    restarted.join()
    outcome = await wait("over-1", database=db, timeout_s=120)

    assert outcome["status"] == "failed", outcome
    error = outcome["error"]
    assert error.startswith("JournalError: ") and "did not answer" in error and "jeeves resume" in error
    assert "TaskGroup" not in error and "\n" not in error
    alive(db, worker)
    before = counter.counts()
    env = {**offline_env(), "COUNTER_URL": counter.url}
    resumed = jeeves_cli("resume", db, "over-1", env=env)  # as the error says, once the database is back
    assert resumed.returncode == 0 and "draft 2" in resumed.stdout, resumed.stdout + resumed.stderr
    after = counter.counts()
    in_flight = ("over-1__actor_1", counter.held_call["key"]) if counter.held_call else None
    assert all(after[key] == 1 for key in before if key != in_flight)  # journaled calls were not made again
