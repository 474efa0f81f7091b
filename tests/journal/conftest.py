"""Every journal store, behind one fixture: tests that hold for all stores take `stores`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jeeves.journal.jsonl import JSONLJournal
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.postgres import PostgresJournal
from jeeves.journal.sqlite import SQLiteJournal
from jeeves.journal.store import JournalStore


class Stores:
    """Opens the store under test; file and database stores open a new object on the same
    file (database) each time. `path` is what messages name: the file, or the database URL."""

    def __init__(self, kind: str, directory: Path, url: str | None = None) -> None:
        self.kind = kind
        self.path: Path | str = url or directory / ("journal.jsonl" if kind == "jsonl" else "journal.db")
        self._memory = MemoryJournal()
        self.opened: list[JournalStore] = []

    def open(self) -> JournalStore:
        if self.kind == "memory":
            return self._memory
        store: JournalStore
        if self.kind == "postgres":
            store = PostgresJournal(str(self.path))
        elif self.kind == "jsonl":
            store = JSONLJournal(self.path)
        else:
            store = SQLiteJournal(self.path)
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            store.close()  # type: ignore[attr-defined]


@pytest.fixture(params=["memory", "jsonl", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    opened = Stores(str(request.param), tmp_path, url)
    yield opened
    opened.close()


def postgres_rows(url: str) -> list[str]:
    """Every record a PostgreSQL journal holds, as the text in its rows."""
    import psycopg

    with psycopg.connect(url) as conn:
        steps = conn.execute("SELECT record FROM jeeves_steps").fetchall()
        sessions = conn.execute("SELECT record FROM jeeves_sessions").fetchall()
    return [str(text) for (text,) in [*sessions, *steps]]


def rewrite_postgres(url: str, session_id: str, text: str) -> None:
    """Replace the text of step 0 of `session_id` in a PostgreSQL journal (damage by hand)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE jeeves_steps SET record = %s WHERE session_id = %s AND idx = 0", (text, session_id)
        )


KINDS_ON_DISK = ["jsonl", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
"""The stores that outlive the process (for tests through the CLI)."""


def stores_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Stores:
    """A `Stores` of `kind` outside the `stores` fixture (postgres gets a fresh database)."""
    return Stores(kind, tmp_path, request.getfixturevalue("postgres_url") if kind == "postgres" else None)
