"""SQLiteJournal: many runs in one WAL-mode file, versioned, queried off the event loop."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import pytest

import jeeves
from jeeves.errors import JournalError, UserError
from jeeves.journal.open import list_runs
from jeeves.journal.records import SessionRecord
from jeeves.journal.sqlite import SQLiteJournal
from tests.journal import archs
from tests.journal.test_base import session, step
from tests.waiting import ThreadGate

pytestmark = pytest.mark.anyio


async def test_one_file_holds_many_runs_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        for sid in ("job-1", "job-2", "job-3"):
            await jeeves.run(
                archs.build_agent(), f"task {sid}", model=archs.model(), journal=journal, session_id=sid
            )
    assert [r.session_id for r in await list_runs(path)] == ["job-1", "job-2", "job-3"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    for sid in ("job-1", "job-3"):
        assert (await jeeves.replay(archs.build_agent(), path, sid)).text.startswith(f"task {sid}")


async def test_two_store_objects_on_one_file_see_each_others_writes(tmp_path: Path) -> None:
    async with SQLiteJournal(tmp_path / "runs.db") as a, SQLiteJournal(tmp_path / "runs.db") as b:
        await a.put_step(step("r1", 0))
        assert await b.get_step("r1", 0) == step("r1", 0)
        await b.put_step(step("r1", 1))
        assert await a.get_step("r1", 1) == step(
            "r1", 1
        )  # a cached session sees writes through this object only…
        await b.put_session(session("r1", status="completed"))
        record = await a.get_session("r1")
        assert record is not None and record.status == "completed"


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE jeeves_journal SET value = '7' WHERE key = 'schema_version'")
    with pytest.raises(
        JournalError, match=r"runs.db was written by a newer jeeves \(journal schema v7; .*Upgrade"
    ):
        await SQLiteJournal(path).get_session("r1")


async def test_a_v1_journal_reads_with_its_running_root_in_progress(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session())
        await journal.put_step(step())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE jeeves_journal SET value = '1' WHERE key = 'schema_version'")
        conn.execute("UPDATE steps SET record = replace(record, '\"v\":4', '\"v\":1')")
        conn.execute(
            "UPDATE sessions SET record = replace(replace(record, '\"v\":4', '\"v\":1'), "
            '\'"status":"in_progress"\', \'"status":"running"\')'
        )
        (text,) = conn.execute("SELECT record FROM sessions").fetchone()
    assert '"v":1' in text and '"status":"running"' in text
    async with SQLiteJournal(path, create=False) as journal:
        record = await journal.get_session("r1")
        assert record is not None and (record.v, record.status) == (1, "in_progress")
        await journal.put_step(step(index=1))
        assert await journal.step_indices("r1") == [0, 1]
    assert [r.status for r in await list_runs(path)] == ["paused"]


async def test_a_newer_record_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_step(step())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE steps SET record = replace(record, '\"v\":4', '\"v\":9')")
    with pytest.raises(
        JournalError, match=r"runs.db \(session 'r1' step 0\): the record was written by a newer"
    ):
        async with SQLiteJournal(path) as journal:
            await journal.get_step("r1", 0)


async def test_files_that_are_not_journals_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(
        JournalError, match=r"app.db is a SQLite database but not a jeeves journal \(tables: \['users'\]\)"
    ):
        await SQLiteJournal(other).sessions()
    text = tmp_path / "notes.db"
    text.write_text("not a database, just some text " * 10)
    with pytest.raises(JournalError, match="notes.db is not a jeeves journal or is damaged"):
        await SQLiteJournal(text).sessions()


async def test_a_damaged_row_names_the_file_and_record(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session())
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE sessions SET record = \'{"type": "sess\'')
    with pytest.raises(JournalError, match=r"runs.db \(session 'r1'\): the record is not JSON"):
        async with SQLiteJournal(path) as journal:
            await journal.sessions()


async def test_a_missing_file_is_created_only_when_recording(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "runs.db"
    with pytest.raises(UserError, match="There is no journal at .*runs.db"):
        await SQLiteJournal(path, create=False).sessions()
    assert not path.exists()
    async with SQLiteJournal(path) as journal:
        assert await journal.sessions() == []
    assert path.exists()


async def test_database_work_runs_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: set[int] = set()
    original = SQLiteJournal._locked

    def spy(self: SQLiteJournal, fn: object, *args: object) -> object:
        threads.add(threading.get_ident())
        return original(self, fn, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteJournal, "_locked", spy)
    async with SQLiteJournal(tmp_path / "runs.db") as journal:
        await jeeves.run(
            archs.build_fanout(), "count these", model=archs.model(), journal=journal, session_id="r1"
        )
        await jeeves.replay(archs.build_fanout(), journal, "r1")
    assert threads and threading.get_ident() not in threads


async def test_a_resumed_run_reads_each_session_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs.db"
    await jeeves.run(archs.build_agent(), "count these", model=archs.model(), journal=path, session_id="r1")
    reads: list[str] = []
    original = SQLiteJournal._session_steps

    def spy(self: SQLiteJournal, conn: sqlite3.Connection, session_id: str) -> dict[int, str]:
        reads.append(session_id)
        return original(self, conn, session_id)

    monkeypatch.setattr(SQLiteJournal, "_session_steps", spy)
    await jeeves.run(archs.build_agent(), "count these", model=archs.model(), journal=path, session_id="r1")
    assert reads == ["r1"]  # served step by step, through the cache (a strict replay: test_snapshot.py)


async def test_a_row_holding_another_steps_record_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_step(step(index=0))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE steps SET idx = 5")
    conn.close()
    with pytest.raises(
        JournalError, match=r"runs.db \(session 'r1' step 5\): the row holds step 0 of \"r1\""
    ):
        async with SQLiteJournal(path) as journal:
            await journal.get_step("r1", 5)


def test_many_stores_opening_a_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    """Workers open one journal per run: the first connections to a new file race to switch
    it to WAL while another creates the tables, and none may fail as "locked"."""
    path = tmp_path / "runs.db"
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def open_and_write(k: int) -> None:
        try:
            journal = SQLiteJournal(path)
            start.wait()
            journal._locked(lambda conn: conn.execute("SELECT 1"))  # connects: the schema and WAL
            journal.close()
        except BaseException as exc:
            errors.append(exc)

    for _ in range(5):
        path.unlink(missing_ok=True)
        threads = [threading.Thread(target=open_and_write, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_concurrent_writes_share_commits_and_each_returns_committed(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    statements: list[str] = []
    unseen: list[tuple[str, int]] = []
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session("r0"))  # opens the connection: trace it from here on
        assert journal._conn is not None
        journal._conn.set_trace_callback(statements.append)

        async def write(i: int) -> None:
            await journal.put_step(step(f"r{i % 5}", i))
            with sqlite3.connect(path) as other:  # durable when it returns: another connection sees it
                if other.execute("SELECT 1 FROM steps WHERE idx = ?", (i,)).fetchone() is None:
                    unseen.append((f"r{i % 5}", i))
            other.close()

        async with anyio.create_task_group() as group:
            for i in range(200):
                group.start_soon(write, i)
        assert unseen == []
        assert len(await journal.step_indices("r3")) == 40
    commits = statements.count("COMMIT")
    assert sum(s.startswith("INSERT INTO steps") for s in statements) == 200
    assert 1 <= commits < 50  # grouped: the writes that arrive during a commit share the next one


async def test_a_lone_write_is_its_own_commit(tmp_path: Path) -> None:
    statements: list[str] = []
    async with SQLiteJournal(tmp_path / "runs.db") as journal:
        await journal.put_session(session("r1"))
        assert journal._conn is not None
        journal._conn.set_trace_callback(statements.append)
        await journal.put_step(step("r1", 0))
        assert statements[-1] == "COMMIT"
        await journal.put_step(step("r1", 1))
    assert statements.count("COMMIT") == 2


async def test_a_failed_group_fails_each_of_its_writers_and_the_next_group_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    original = SQLiteJournal._transaction
    failing = True

    def transaction(self: SQLiteJournal, conn: sqlite3.Connection, writes: list[object]) -> None:
        if failing:
            raise sqlite3.DatabaseError("disk I/O error")
        original(self, conn, writes)  # type: ignore[arg-type]

    monkeypatch.setattr(SQLiteJournal, "_transaction", transaction)
    errors: list[str] = []
    async with SQLiteJournal(path) as journal:

        async def write(i: int) -> None:
            try:
                await journal.put_step(step("r1", i))
            except JournalError as exc:
                errors.append(str(exc))

        async with anyio.create_task_group() as group:
            for i in range(10):
                group.start_soon(write, i)
        assert len(errors) == 10 and "disk I/O error" in errors[0]
        assert await journal.get_step("r1", 0) is None  # neither stored nor cached
        failing = False
        await journal.put_step(step("r1", 0))
        assert await journal.get_step("r1", 0) == step("r1", 0)


# -- a child's session record is left behind (committed with the next call) --------------------
def _rows(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT session_id, record FROM sessions ORDER BY rowid").fetchall()
    return [(sid, SessionRecord.model_validate_json(text).status) for sid, text in rows]


async def test_a_childs_record_is_not_waited_on_and_goes_out_in_order_with_the_roots(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    entered, release = ThreadGate(), threading.Event()

    def busy(conn: sqlite3.Connection) -> None:  # holds the store's thread
        entered.open()
        release.wait()

    async with SQLiteJournal(path) as journal:
        await journal.put_session(session("r1", status="in_progress"))  # the file is open: children go behind
        async with anyio.create_task_group() as tg:
            tg.start_soon(journal._call, busy)
            await entered.wait()
            try:
                with anyio.fail_after(5):  # the thread is blocked: a waited write would time out here
                    await journal.put_session(session("r1__c1", parent_id="r1", status="in_progress"))
                    await journal.put_session(session("r1__c1", parent_id="r1", status="completed"))
                    await journal.put_session(session("r1__c2", parent_id="r1", status="completed"))
                assert _rows(path) == [("r1", "in_progress")]  # nothing of them committed yet
            finally:
                release.set()
            await journal.put_session(session("r1", status="completed"))  # the root's waits, carrying them
            assert _rows(path) == [
                ("r1", "completed"),
                ("r1__c1", "completed"),
                ("r1__c2", "completed"),
            ]


async def test_a_left_behind_write_that_failed_is_raised_by_the_next_call(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session("r1"))
        with sqlite3.connect(path) as conn:
            conn.execute("DROP TABLE sessions")
        await journal.put_session(session("r1__c1", parent_id="r1"))  # returns: nothing waits on it
        with pytest.raises(
            JournalError, match=r"runs\.db: no such table: sessions; the journal file is damaged"
        ):
            await journal.step_indices("r1")  # a read rides with it, and then hears it
        assert await journal.step_indices("r1") == []  # heard once


async def test_closing_commits_what_was_left_behind(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    journal = SQLiteJournal(path)
    await journal.put_session(session("r1"))
    await journal.put_session(session("r1__c1", parent_id="r1"))
    await journal.aclose()
    assert _rows(path) == [("r1", "in_progress"), ("r1__c1", "in_progress")]

    closed_sync = SQLiteJournal(path)
    await closed_sync.put_session(session("r1__c2", parent_id="r1"))  # the file is not open yet: waited
    await closed_sync.put_session(session("r1__c3", parent_id="r1"))
    closed_sync.close()  # no event loop needed: it commits them itself
    assert [sid for sid, _ in _rows(path)] == ["r1", "r1__c1", "r1__c2", "r1__c3"]
