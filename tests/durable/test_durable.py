"""jeeves.durable without worker processes: argument checks, asyncio only, heartbeats and the
atomic takeover claim on a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import anyio
import psycopg
import pytest

from jeeves.durable import Worker, queue_name, submit, target_name
from jeeves.durable.heartbeat import Heartbeat
from jeeves.durable.runlock import _NAMESPACE, RunLocks, run_lock
from jeeves.errors import UserError
from tests.durable.conftest import TARGET, environ
from tests.waiting import eventually, wait_until

pytestmark = pytest.mark.anyio


def sqlite_worker(tmp_path: Path, **kwargs: object) -> Worker:
    return Worker(
        [TARGET], database=f"sqlite:///{tmp_path}/dbos.sqlite", journal=str(tmp_path / "runs.db"), **kwargs
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_worker_refuses_trio_with_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="runs on asyncio only"):
        await sqlite_worker(tmp_path).run()


def test_bad_worker_arguments_are_user_errors_that_say_what_to_do(tmp_path: Path) -> None:
    with environ(JEEVES_DATABASE=""), pytest.raises(UserError, match="set JEEVES_DATABASE"):
        Worker([TARGET])
    with pytest.raises(UserError, match="database='mysql://x' is not a database URL DBOS can use"):
        Worker([TARGET], database="mysql://x")
    with pytest.raises(UserError, match="is SQLite: give the runs a journal of their own"):
        Worker([TARGET], database=f"sqlite:///{tmp_path}/d.sqlite")
    with pytest.raises(UserError, match=r"takeover_after_s=1 must exceed heartbeat_s=5"):
        sqlite_worker(tmp_path, takeover_after_s=1)
    with pytest.raises(UserError, match="concurrency must be an int >= 1, got 0"):
        sqlite_worker(tmp_path, concurrency=0)
    with pytest.raises(UserError, match="neither a spec file .* nor a 'module:attr' reference"):
        Worker(["codegen"], database=f"sqlite:///{tmp_path}/d.sqlite", journal="r.db")


def test_targets_are_named_by_spec_stem_or_reference() -> None:
    assert target_name("architectures/codegen.toml") == "codegen"
    assert queue_name("architectures/codegen.toml") == "jeeves:codegen"
    assert queue_name(TARGET) == f"jeeves:{TARGET}"


async def test_submit_checks_its_arguments_before_touching_a_database() -> None:
    with pytest.raises(UserError, match="task='  ' is empty"):
        await submit(TARGET, "  ", database="postgresql://nobody@127.0.0.1:1/x")
    with pytest.raises(UserError, match="session"):
        await submit(TARGET, "t", session_id="a__b", database="postgresql://nobody@127.0.0.1:1/x")


@pytest.mark.postgres
def test_one_live_worker_claims_a_silent_one_once_and_the_silent_one_is_fenced(postgres_url: str) -> None:
    recovered: list[list[str]] = []
    fenced: list[str] = []

    def beat(worker_id: str) -> Heartbeat:
        return Heartbeat(
            postgres_url,
            worker_id,
            recover=recovered.append,
            fenced=fenced.append,
            heartbeat_s=0.1,
            takeover_after_s=5,
        )

    silent, a, b = beat("silent"), beat("a"), beat("b")
    for worker in (silent, a, b):
        worker.register()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE jeeves_workers SET heartbeat_at = now() - interval '1 minute' WHERE worker_id = 'silent'"
        )
        assert a.beat(conn) == ["silent"] and b.beat(conn) == []  # claimed exactly once
        assert recovered == [["silent"]]
        assert silent.beat(conn) == [] and fenced == ["a"]  # the silent one learns who took over
        silent.register()  # restarted: alive again, and beating
        assert silent.beat(conn) == [] and fenced == ["a"]


@pytest.mark.postgres
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # a worker runs on asyncio (psycopg's async too)
async def test_two_workers_never_execute_one_run_at_once(postgres_url: str) -> None:
    """The run lock: a second executor of run `r-1` (a stalled worker's successor) waits until
    the first is gone; another run is not held up."""
    order: list[str] = []
    first_in = anyio.Event()

    async def execute(name: str, session: str, hold: anyio.Event | None) -> None:
        async with run_lock(postgres_url, session, poll_s=0.05):
            order.append(f"{name} in")
            if name == "first":
                first_in.set()
            if hold is not None:
                await hold.wait()
            order.append(f"{name} out")

    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(execute, "first", "r-1", release)
        await first_in.wait()
        tg.start_soon(execute, "second", "r-1", None)
        await execute("other", "r-2", None)  # another run goes ahead meanwhile
        assert order == ["first in", "other in", "other out"]  # the second is still waiting
        release.set()
    assert order[3:] == ["first out", "second in", "second out"]


@pytest.mark.postgres
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_run_locks_connection_asks_the_server_to_probe_it_so_a_vanished_holder_lets_go(
    postgres_url: str,
) -> None:
    """Over TCP the server probes the lock holder after 10 s of silence, every 5 s, 3 times:
    a machine that vanished without closing its connection loses the lock in about 25 s."""
    async with run_lock(postgres_url, "r-keepalive") as conn:
        shown = {}
        for setting in ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count"):
            row = await (await conn.execute(f"SHOW {setting}")).fetchone()
            shown[setting] = row[0]
    assert shown == {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3"}


@pytest.mark.postgres
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_workers_run_locks_share_one_connection_and_each_is_let_go_of_when_its_run_ends(
    postgres_url: str,
) -> None:
    """A worker's run locks all live on one connection: run after run and runs side by side on
    one server backend, no connection per run; each lock is let go of once its run ended
    (another worker takes it), while a run that is still held keeps its own."""

    def holders() -> list[int]:  # the server backends holding run locks in this test's database now
        with psycopg.connect(postgres_url, autocommit=True) as other:
            rows = other.execute(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                (_NAMESPACE,),
            ).fetchall()
            return sorted(int(pid) for (pid,) in rows)

    def taken_elsewhere(session: str) -> bool:
        with psycopg.connect(postgres_url, autocommit=True) as other:
            row = other.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (_NAMESPACE, session))
            return bool(row.fetchone()[0])  # type: ignore[index]

    async with RunLocks(postgres_url, poll_s=0.05).serving() as locks:
        pids = []
        for i in range(3):
            async with locks.hold(f"pooled-{i}"):
                pids += holders()
                assert not taken_elsewhere(f"pooled-{i}")  # held: nobody else gets it

            async def let_go(session: str = f"pooled-{i}") -> bool:
                return taken_elsewhere(session)

            await eventually(let_go, "the lock to be let go of after its run", within_s=10)
        assert len(pids) == 3 and len(set(pids)) == 1  # one connection for the three runs
        async with locks.hold("held"), locks.hold("beside"):
            both = holders()
            assert len(both) == 2 and len(set(both)) == 1  # two locks at once, on the same connection
            assert not taken_elsewhere("held") and not taken_elsewhere("beside")


@pytest.mark.postgres
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_two_runs_of_one_session_in_one_worker_never_execute_at_once(postgres_url: str) -> None:
    """The server grants a session-level lock twice on one connection; the worker's locks do
    not: a second run of a session waits in the worker until the first let go of it."""
    order: list[str] = []
    first_in = anyio.Event()
    release = anyio.Event()

    async def execute(locks: RunLocks, name: str) -> None:
        async with locks.hold("r-same"):
            order.append(f"{name} in")
            if name == "first":
                first_in.set()
                await release.wait()
            order.append(f"{name} out")

    async with RunLocks(postgres_url, poll_s=0.05).serving() as locks, anyio.create_task_group() as tg:
        tg.start_soon(execute, locks, "first")
        await first_in.wait()
        tg.start_soon(execute, locks, "second")
        async with locks.hold("r-other"):  # another run goes ahead meanwhile
            order.append("other in")
        assert order == ["first in", "other in"]  # the second is still waiting
        release.set()
    assert order[2:] == ["first out", "second in", "second out"]


@pytest.mark.postgres
def test_a_heartbeat_that_is_not_claiming_renews_but_takes_nobody_over(postgres_url: str) -> None:
    recovered: list[list[str]] = []
    silent, starting = (
        Heartbeat(
            postgres_url,
            name,
            recover=recovered.append,
            fenced=pytest.fail,
            heartbeat_s=0.1,
            takeover_after_s=5,
        )
        for name in ("silent", "starting")
    )
    silent.register()
    starting.register()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE jeeves_workers SET heartbeat_at = now() - interval '1 minute' WHERE worker_id = 'silent'"
        )
        starting.claiming = False
        assert starting.beat(conn) == [] and recovered == []  # renewed its own row only
        starting.claiming = True
        assert starting.beat(conn) == ["silent"] and recovered == [["silent"]]


@pytest.mark.postgres
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_worker_beats_while_dbos_launches_so_a_slow_start_is_not_taken_over(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing and launching DBOS can outlast a short --takeover-after on a loaded machine:
    the worker's row is renewed meanwhile, and it claims nobody until it can recover runs."""
    from jeeves.durable import engine

    worker = Worker([TARGET], database=postgres_url, heartbeat_s=0.1, takeover_after_s=0.5)
    during: list[object] = []

    def slow_launch(*args: object, **kwargs: object) -> None:
        assert worker.heartbeat is not None
        with psycopg.connect(postgres_url, autocommit=True) as conn:

            def beat_at() -> object:
                row = conn.execute(
                    "SELECT heartbeat_at FROM jeeves_workers WHERE worker_id = %s", (worker.worker_id,)
                ).fetchone()
                assert row is not None
                return row[0]

            first = beat_at()
            wait_until(lambda: beat_at() != first, "the worker to beat while DBOS launched")
        during.append(worker.heartbeat.claiming)
        raise RuntimeError("launch failed")

    monkeypatch.setattr(engine, "launch", slow_launch)
    with pytest.raises(RuntimeError, match="launch failed"):
        await worker.run()
    assert during == [False]  # beating, not claiming, while DBOS launched
    assert worker.heartbeat is not None and worker.heartbeat._thread is not None
    assert not worker.heartbeat._thread.is_alive()  # a failed launch stops the beat


def test_a_workers_branch_queues_are_polled_at_most_every_half_second(tmp_path: Path) -> None:
    """The runs' queue at --poll; the branch queue, which only runs that spread use, no more
    often than BRANCH_POLL_S (each poll costs the worker CPU and the database transactions)."""
    from jeeves.durable.spread import branch_queue_name
    from jeeves.durable.worker import BRANCH_POLL_S

    name = target_name(TARGET)
    fast = sqlite_worker(tmp_path, polling_interval_s=0.1, global_concurrency=3).queues()
    assert fast == {queue_name(TARGET): (3, 0.1), branch_queue_name(name): (3, BRANCH_POLL_S)}
    slow = sqlite_worker(tmp_path, polling_interval_s=2.0).queues()
    assert slow == {queue_name(TARGET): (None, 2.0), branch_queue_name(name): (None, 2.0)}
