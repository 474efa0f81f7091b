"""Every journal store, behind one fixture: tests that hold for all stores take `stores`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jeeves.replay import JournalStore, JSONLJournal, MemoryJournal, SQLiteJournal


class Stores:
    """Opens the store under test; file stores open a new object on the same file each time."""

    def __init__(self, kind: str, directory: Path) -> None:
        self.kind = kind
        self.path = directory / ("journal.jsonl" if kind == "jsonl" else "journal.db")
        self._memory = MemoryJournal()
        self.opened: list[JournalStore] = []

    def open(self) -> JournalStore:
        if self.kind == "memory":
            return self._memory
        store = JSONLJournal(self.path) if self.kind == "jsonl" else SQLiteJournal(self.path)
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            store.close()  # type: ignore[attr-defined]


@pytest.fixture(params=["memory", "jsonl", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    opened = Stores(str(request.param), tmp_path)
    yield opened
    opened.close()
