"""jeeves.durable without worker processes: argument checks, asyncio only, heartbeats and the
atomic takeover claim on a real PostgreSQL."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import psycopg
import pytest

from jeeves.durable import Worker, engine, queue_name, submit, target_name
from jeeves.durable.heartbeat import Heartbeat
from jeeves.durable.runlock import run_lock
from jeeves.errors import UserError
from tests.durable.conftest import TARGET, environ

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
        assert a.beat(conn) == [] and recovered == []  # not launched yet: renews, claims nobody
        a.can_recover()
        b.can_recover()
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
async def test_a_worker_beats_while_dbos_launches_and_stops_beating_if_the_launch_fails(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch slower than the takeover time must not get a live worker taken for dead:
    the beat starts at registration (claiming nobody until the worker can recover runs)."""
    worker = Worker([TARGET], database=postgres_url, worker_id="slow", heartbeat_s=0.05, takeover_after_s=5)
    seen: dict[str, object] = {}

    def launch(*args: object, **kwargs: object) -> None:
        assert worker.heartbeat is not None
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            first = conn.execute(
                "SELECT heartbeat_at FROM jeeves_workers WHERE worker_id = 'slow'"
            ).fetchone()
            renewed = False
            for _ in range(400):  # up to 20 s of the beat's own 0.05 s period
                row = conn.execute(
                    "SELECT heartbeat_at FROM jeeves_workers WHERE worker_id = 'slow'"
                ).fetchone()
                if row != first:
                    renewed = True
                    break
                time.sleep(0.05)
        seen["renewed during launch"] = renewed
        seen["claiming"] = worker.heartbeat._claiming.is_set()
        raise RuntimeError("launch failed")

    monkeypatch.setattr(engine, "launch", launch)
    with pytest.raises(RuntimeError, match="launch failed"):
        await worker.run()
    assert seen == {"renewed during launch": True, "claiming": False}
    assert worker.heartbeat is not None and worker.heartbeat._thread is not None
    assert not worker.heartbeat._thread.is_alive()  # a failed launch stops the beat
