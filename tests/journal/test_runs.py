"""Listing a journal's runs: every store's `runs(last)`, `list_runs(last=)`, and the error
messages that name a journal's runs, however many it holds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

import jeeves
from jeeves.errors import JournalError, UserError
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.open import SHOWN_RUNS, list_runs, named_runs, read_runs
from jeeves.journal.records import SessionRecord
from jeeves.journal.store import JournalStore
from tests.journal import archs
from tests.journal.conftest import Stores
from tests.journal.test_snapshot import _Bare

pytestmark = pytest.mark.anyio


async def _record(journal: object, *ids: str) -> None:
    """Record a fan-out run (a root and three child sessions) under each id."""
    for sid in ids:
        await jeeves.run(
            archs.build_fanout(), "count these", model=archs.model(), journal=journal, session_id=sid
        )


async def test_every_store_lists_its_runs_in_order_the_latest_last(stores: Stores) -> None:
    await _record(stores.open(), "r1", "r2", "r3")
    store = stores.open()

    assert len(await store.sessions()) == 12  # each run's root and its three workers
    every = await store.runs()  # type: ignore[attr-defined]
    assert [r.session_id for r in every] == ["r1", "r2", "r3"]
    assert all(isinstance(r, SessionRecord) and r.parent_id is None for r in every)
    assert [r.session_id for r in await store.runs(2)] == ["r2", "r3"]  # type: ignore[attr-defined]
    assert [r.session_id for r in await store.runs(1)] == ["r3"]  # type: ignore[attr-defined]
    assert [r.session_id for r in await store.runs(99)] == ["r1", "r2", "r3"]  # type: ignore[attr-defined]
    for huge in (2**63, 10**30):  # past a SQL LIMIT's 64-bit integer: every run, as `jeeves runs --last`
        assert [r.session_id for r in await store.runs(huge)] == ["r1", "r2", "r3"]  # type: ignore[attr-defined]
    assert [r.session_id for r in await list_runs(store, last=2)] == ["r2", "r3"]
    assert [r.status for r in await list_runs(store)] == ["completed"] * 3


@pytest.mark.parametrize("last", [0, -3, True, 2.0, "2"])
async def test_list_runs_refuses_a_last_that_is_not_a_count(last: object) -> None:
    with pytest.raises(UserError, match=r"^last must be an int >= 1, got"):
        await list_runs(MemoryJournal(), last=last)  # type: ignore[arg-type]


async def test_a_run_recorded_again_keeps_its_place(stores: Stores) -> None:
    """A root's record is rewritten as it runs (status, lease, progress): its place in the
    list is where it was first recorded, in every store."""
    store = stores.open()
    await _record(store, "r1", "r2")
    first = await store.get_session("r1")
    assert first is not None
    await store.put_session(first.model_copy(update={"status": "failed"}))

    assert [(r.session_id, r.status) for r in await list_runs(stores.open())] == [
        ("r1", "failed"),
        ("r2", "completed"),
    ]
    assert [r.session_id for r in await list_runs(stores.open(), last=1)] == ["r2"]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_the_database_stores_list_runs_without_reading_a_child_session(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The list is one query on the roots: a child session's record, damaged here, is never
    decoded (listing every session meets it)."""
    from tests.journal.conftest import stores_of

    stores = stores_of(kind, tmp_path, request)
    try:
        await _record(stores.open(), "r1", "r2")
        damage = "UPDATE {table} SET record = '{{' WHERE session_id = 'r1__worker_1'"
        if kind == "sqlite":
            with sqlite3.connect(stores.path) as conn:
                conn.execute(damage.format(table="sessions"))
        else:
            import psycopg

            with psycopg.connect(str(stores.path), autocommit=True) as conn:
                conn.execute(damage.format(table="jeeves_sessions").encode())
        store = stores.open()

        assert [r.session_id for r in await list_runs(store)] == ["r1", "r2"]
        with pytest.raises(JournalError, match="r1__worker_1"):
            await store.sessions()
    finally:
        stores.close()


async def test_a_store_without_runs_is_listed_from_its_sessions() -> None:
    bare = _Bare()
    assert isinstance(bare, JournalStore) and not hasattr(bare, "runs")
    await _record(bare, "r1", "r2", "r3")

    assert [r.session_id for r in await read_runs(bare)] == ["r1", "r2", "r3"]
    assert [r.session_id for r in await list_runs(bare, last=2)] == ["r2", "r3"]


def test_named_runs_stays_one_short_line_however_many_runs() -> None:
    assert named_runs([]) == "none"
    assert named_runs(["a", "b"]) == "'a', 'b'"
    ids = [f"run-{i}" for i in range(20_000)]
    named = named_runs(ids)
    assert named == "'run-19995', 'run-19996', 'run-19997', 'run-19998', 'run-19999' (the latest 5 of 20000)"
    assert named.count("'") == 2 * SHOWN_RUNS


async def test_replaying_a_run_a_big_journal_lacks_names_its_latest_runs() -> None:
    journal = MemoryJournal()
    for i in range(SHOWN_RUNS + 2):
        await journal.put_session(SessionRecord(session_id=f"r{i}", role="agent", architecture="agent"))
        await journal.put_session(
            SessionRecord(
                session_id=f"r{i}__worker_0", parent_id=f"r{i}", role="worker", architecture="agent"
            )
        )

    with pytest.raises(UserError) as caught:
        await jeeves.replay(archs.build_fanout(), journal, "nobody")

    message = str(caught.value)
    assert "holds no run 'nobody'; its runs are: 'r2', 'r3', 'r4', 'r5', 'r6' (the latest 5 of 7)." in message
    assert "\n" not in message and "worker" not in message


async def test_every_store_reads_a_runs_subtree_and_nothing_with_a_like_id(stores: Stores) -> None:
    """A subtree is `root` and the ids starting `root__` (SQLite finds them through the
    primary key's index, as a range): never a run whose id only starts like it."""
    await _record(stores.open(), "a", "a_b", "a-b", "ab", "a.b", "a:b")
    store = stores.open()

    for root in ("a", "a_b", "a:b"):
        tree = [r.session_id for r in await store.sessions(root)]
        assert tree[0] == root and sorted(tree[1:]) == [f"{root}__worker_{k}" for k in range(3)], tree
    assert [r.session_id for r in await store.runs()] == ["a", "a_b", "a-b", "ab", "a.b", "a:b"]  # type: ignore[attr-defined]


async def test_a_cancelled_run_lists_what_it_spent_and_its_resume_adds_to_it() -> None:
    """A run stopped mid-way (Ctrl-C) listed as 0 calls and $0 though it had made calls."""
    from jeeves.testing import FunctionModel, Reply, call

    started = anyio.Event()
    release = anyio.Event()

    @jeeves.tool
    async def slow(n: int) -> str:
        """Take a while."""
        started.set()
        await release.wait()
        return f"did {n}"

    usage = jeeves.Usage(input_tokens=10, output_tokens=2, model_calls=1, cost_usd=0.01)

    def act(request: jeeves.ModelRequest) -> Reply:
        done = sum(m.role == "tool" for m in request.messages)
        return (
            Reply(tool_calls=[call("slow", {"n": done})], usage=usage)
            if done < 2
            else Reply(text="ok", usage=usage)
        )

    journal = MemoryJournal()
    agent = jeeves.Agent("Work.", tools=[slow], model=FunctionModel(act))
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: jeeves.run(agent, "Go.", journal=journal, session_id="c1"))
        await started.wait()  # the first call is made; its tool is running
        group.cancel_scope.cancel()
    (cancelled,) = await list_runs(journal)
    assert cancelled.status == "cancelled"
    assert (cancelled.usage.model_calls, cancelled.usage.cost_usd) == (1, pytest.approx(0.01))
    release.set()
    done = await jeeves.resume(agent, "c1", journal=journal)
    assert done.text == "ok"
    (finished,) = await list_runs(journal)
    assert finished.usage.model_calls == 3  # the whole run's, the first call counted once
