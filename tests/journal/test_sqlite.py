"""SQLiteJournal: many runs in one WAL-mode file, versioned, written on the event loop, read off it."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
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


async def test_a_journal_opened_to_read_is_read_as_it_is_and_never_made_one(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(JournalError, match=r"empty.db is an empty SQLite file, not a jeeves journal; record"):
        await list_runs(empty)
    assert empty.stat().st_size == 0  # not made a journal by a listing
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session())
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = path.read_bytes()
    assert [r.session_id for r in await list_runs(path)] == ["r1"]
    assert path.read_bytes() == before  # a read writes nothing into the file
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE steps")
    with pytest.raises(
        JournalError, match=r"runs.db lacks the journal's table\(s\) steps\. The journal is damaged"
    ):
        await list_runs(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'steps'").fetchone() is None


async def test_reads_run_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


async def test_concurrent_writes_each_return_committed(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    unseen: list[tuple[str, int]] = []
    async with SQLiteJournal(path) as journal:

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


async def test_a_lone_write_is_its_own_commit_on_the_loops_thread(tmp_path: Path) -> None:
    statements: list[str] = []
    threads: set[int] = set()

    def trace(statement: str) -> None:
        statements.append(statement)
        threads.add(threading.get_ident())

    async with SQLiteJournal(tmp_path / "runs.db") as journal:
        await journal.put_session(session("r1"))
        assert journal._writer is not None
        journal._writer.set_trace_callback(trace)
        await journal.put_step(step("r1", 0))
        assert statements[-1] == "COMMIT"
        await journal.put_step(step("r1", 1))
    assert statements.count("COMMIT") == 2
    assert threads == {threading.get_ident()}


# -- another writer holds the file: the loop waits without blocking ------------------------------
def _hold_write_lock(path: Path, seconds: float) -> tuple[sqlite3.Connection, threading.Timer]:
    """Another connection takes the file's write lock now and lets it go `seconds` later (from
    a thread of its own: whatever the event loop does meanwhile)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO jeeves_journal (key, value) VALUES ('other', 'x')")
    timer = threading.Timer(seconds, lambda: (other.execute("COMMIT"), other.close()))
    timer.start()
    return other, timer


async def test_a_locked_file_is_waited_for_on_the_loop_which_serves_other_tasks(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    statements: list[str] = []
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session("r1"))  # the file is open
        assert journal._writer is not None
        journal._writer.set_trace_callback(statements.append)
        ticks: list[float] = []
        waited: list[float] = []
        _, timer = _hold_write_lock(path, 0.5)

        async def ticker() -> None:
            while not waited:
                ticks.append(time.monotonic())
                await anyio.sleep(0.01)  # time, not sync: the ticks measure that the loop keeps serving

        async def write(i: int) -> None:
            start = time.monotonic()
            await journal.put_step(step("r1", i))
            waited.append(time.monotonic() - start)

        async with anyio.create_task_group() as group:
            group.start_soon(ticker)
            for i in range(10):
                group.start_soon(write, i)
        timer.join()
        assert min(waited) > 0.4  # each write waited for the other writer's lock
        assert len(ticks) >= 10  # ... while the loop kept serving the ticker (~50 ticks)
        assert max(b - a for a, b in zip(ticks, ticks[1:], strict=False)) < 0.45  # blocked: >= 0.5
        assert await journal.step_indices("r1") == list(range(10))
        assert statements.count("COMMIT") == 1  # the writes made while it waited went out together
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM steps").fetchone() == (10,)
        assert conn.execute("SELECT value FROM jeeves_journal WHERE key = 'other'").fetchone() == ("x",)
    conn.close()


async def test_a_file_locked_past_the_retry_bound_fails_the_write_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path, retry_s=0.2) as journal:
        await journal.put_session(session("r1"))
        _, timer = _hold_write_lock(path, 1.0)
        try:
            with pytest.raises(
                JournalError, match=r"runs\.db: the database did not answer for 0 s .*resume the run"
            ):
                await journal.put_step(step("r1", 0))
        finally:
            timer.join()
        await journal.put_step(step("r1", 0))  # free again: the next write goes through
        assert await journal.step_indices("r1") == [0]


async def test_a_write_cancelled_while_the_file_is_locked_is_still_committed(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session("r1"))
        _, timer = _hold_write_lock(path, 0.3)
        with anyio.move_on_after(0.05):
            await journal.put_step(step("r1", 0))  # waits for the lock, then returns committed
        timer.join()
        assert await journal.step_indices("r1") == [0]


async def test_the_wal_stays_bounded_checkpointed_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    threads: set[int] = set()
    original = SQLiteJournal._checkpoint

    def spy(self: SQLiteJournal) -> None:
        threads.add(threading.get_ident())
        original(self)

    monkeypatch.setattr(SQLiteJournal, "_checkpoint", spy)
    wal = Path(f"{path}-wal")
    sizes: list[int] = []
    result = {"text": "x" * 1000}
    async with SQLiteJournal(path) as journal:
        for i in range(4000):  # ~43 MB of WAL frames, were it never checkpointed
            await journal.put_step(step("r1", i, result=result))
            if i % 100 == 0:
                sizes.append(os.stat(wal).st_size)
        assert len(await journal.step_indices("r1")) == 4000
    assert threads and threading.get_ident() not in threads
    assert max(sizes) < 12 * 2**20, sizes  # about 9 MB at most, 43 MB when never checkpointed


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
    async with SQLiteJournal(path) as journal:
        await journal.put_session(session("r1", status="in_progress"))  # the file is open: children go behind
        _, timer = _hold_write_lock(path, 5.0)  # a waited write would wait for it
        try:
            with anyio.fail_after(2):
                await journal.put_session(session("r1__c1", parent_id="r1", status="in_progress"))
                await journal.put_session(session("r1__c1", parent_id="r1", status="completed"))
                await journal.put_session(session("r1__c2", parent_id="r1", status="completed"))
            assert _rows(path) == [("r1", "in_progress")]  # nothing of them committed yet
        finally:
            timer.cancel()
            timer.function()  # let the lock go now
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
