"""A throwaway PostgreSQL cluster for the tests: `initdb` into a temp dir, a server on
127.0.0.1 and a free port, one fresh database per test, stopped at the end of the session.

The cluster itself is `bench/pgcluster.py` (shared with bench/durable.py, which must run
without pytest). Without the binaries the tests that need a server skip, saying how to
install them. No mock database: every `postgres` test talks to this server.

Fault tests take a server of their own (`own_postgres`, one per test module) and stop,
start or restart it (`Cluster.stop_server`, `start_server`, `restart(down_s)`) while runs,
gates and followers use it, without disturbing the session's server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.pgcluster import INSTALL, Cluster, find_binaries

__all__ = ["INSTALL", "Cluster", "find_binaries", "own_postgres", "postgres_cluster", "postgres_url"]


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
