"""A throwaway PostgreSQL cluster for the tests: `initdb` into a temp dir, a server on
127.0.0.1 and a free port, one fresh database per test, stopped at the end of the session.

The cluster itself is `bench/pgcluster.py` (shared with bench/durable.py, which must run
without pytest). Without the binaries the tests that need a server skip, saying how to
install them. No mock database: every `postgres` test talks to this server.

Fault tests take a server of their own (`own_postgres`, one per test module) and stop,
start or restart it (`Cluster.stop_server`, `start_server`, `restart(down_s)`) while runs,
gates and followers use it, without disturbing the session's server.

A test waiting for a row that another process writes (a worker's step, a heartbeat row
flipping to dead) waits with `row_written`, on LISTEN/NOTIFY, not by polling.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from bench.pgcluster import INSTALL, Cluster, find_binaries

__all__ = [
    "INSTALL",
    "Cluster",
    "find_binaries",
    "own_postgres",
    "postgres_cluster",
    "postgres_url",
    "row_written",
]


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """A PostgreSQL server for the whole test session (skips when the binaries are absent)."""
    yield from _cluster()


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[Cluster]:
    """A PostgreSQL server for one test module, to stop and restart (skips as above)."""
    yield from _cluster()


def _cluster() -> Iterator[Cluster]:
    bin_dir = find_binaries()
    if bin_dir is None:
        pytest.skip(
            f"PostgreSQL is not installed (no initdb/postgres on PATH or in /usr/lib/postgresql); {INSTALL}"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed; pip install -e '.[dev,dbos]'")
    cluster = Cluster(bin_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return postgres_cluster.database()


_NOTIFY_ON_WRITE = """
CREATE OR REPLACE FUNCTION jeeves_test_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_notify(TG_ARGV[0], ''); RETURN NULL; END $$;
CREATE OR REPLACE TRIGGER jeeves_test_notify AFTER INSERT OR UPDATE ON {table}
FOR EACH ROW EXECUTE FUNCTION jeeves_test_notify('{channel}');
"""


async def row_written(
    url: str, table: str, select: str, params: tuple[Any, ...] = (), *, what: str, within_s: float = 60
) -> tuple[Any, ...]:
    """The first row `select` (a query on `table`) returns, once another process has written it.

    A trigger this adds to `table` (the test's own database) NOTIFYs each committed insert or
    update, and the query is run again on each: no polling. Listening starts before the first
    look, so a row written in between is not missed. Fails naming `what` after `within_s`.
    """
    import psycopg

    channel = f"jeeves_test_{table}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"LISTEN {channel}")
        await conn.execute(_NOTIFY_ON_WRITE.format(table=table, channel=channel))
        with anyio.move_on_after(within_s):
            while (row := await (await conn.execute(select, params)).fetchone()) is None:
                async for _ in conn.notifies(stop_after=1):
                    pass
            return tuple(row)
    raise AssertionError(f"timed out after {within_s:g} s waiting for {what}")
