"""PostgresJournal: a real server (tests/postgres.py), many writers, versioned, opened by URL."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest

import jeeves
from jeeves.errors import JournalError, UserError
from jeeves.journal.open import list_runs, open_journal
from jeeves.journal.postgres import PostgresJournal, display_url, driver_message
from tests.conftest import REPO, jeeves_cli, subprocess_env
from tests.journal import archs
from tests.journal.test_base import session, step

psycopg = pytest.importorskip("psycopg")

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def test_one_database_holds_many_runs_and_replays_them(postgres_url: str) -> None:
    async with PostgresJournal(postgres_url) as journal:
        for sid in ("job-1", "job-2", "job-3"):
            await jeeves.run(
                archs.build_agent(), f"task {sid}", model=archs.model(), journal=journal, session_id=sid
            )
    assert [r.session_id for r in await list_runs(postgres_url)] == ["job-1", "job-2", "job-3"]
    for sid in ("job-1", "job-3"):  # jeeves.run and jeeves.replay take the URL as a journal
        assert (await jeeves.replay(archs.build_agent(), postgres_url, sid)).text.startswith(f"task {sid}")


async def test_many_writers_at_once_lose_nothing_and_the_last_write_wins(postgres_url: str) -> None:
    writers = [PostgresJournal(postgres_url) for _ in range(8)]  # eight connections, one table
    try:
        async with anyio.create_task_group() as tg:
            for w, journal in enumerate(writers):
                for i in range(10):
                    tg.start_soon(journal.put_step, step(f"r{w}", i))
                    tg.start_soon(journal.put_session, session(f"r{w}", task=f"w{w}"))
                    tg.start_soon(journal.put_step, step("shared", i, result={"by": w}))
        async with PostgresJournal(postgres_url) as reader:  # a new object: nothing cached
            for w in range(8):
                assert await reader.step_indices(f"r{w}") == list(range(10))
            assert await reader.step_indices("shared") == list(range(10))
            assert len(await reader.sessions()) == 8
    finally:
        for journal in writers:
            await journal.aclose()


def test_processes_starting_together_on_an_empty_database_all_create_the_journal(postgres_url: str) -> None:
    code = (
        "import sys, anyio\n"
        "from jeeves.journal import PostgresJournal\n"
        "from jeeves.journal.records import SessionRecord\n"
        "async def main():\n"
        "    async with PostgresJournal(sys.argv[1]) as j:\n"
        "        await j.put_session(SessionRecord(session_id=sys.argv[2], role='agent', architecture='agent'))\n"
        "anyio.run(main)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, postgres_url, f"p{i}"], env=subprocess_env(), cwd=REPO)
        for i in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("SELECT session_id FROM jeeves_sessions ORDER BY session_id").fetchall()
    assert [r[0] for r in rows] == ["p0", "p1", "p2", "p3"]


async def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    async with PostgresJournal(postgres_url) as journal:
        await journal.put_session(session())
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE jeeves_journal SET value = '7' WHERE key = 'schema_version'")
    with pytest.raises(JournalError, match=r"was written by a newer jeeves \(journal schema v7; .*Upgrade"):
        await PostgresJournal(postgres_url).get_session("r1")


async def test_fresh_stores_whose_first_calls_share_a_batch_check_the_journal_once_and_merge(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker opens a store per run, and each store's first call checks the journal's
    tables: in one batch (one transaction) that check runs once for every store of the
    database, and their writes still merge into one statement; a check that fails (a newer
    schema) fails every call it was for, and those calls write nothing."""
    from jeeves.journal import pgbatch

    async with PostgresJournal(postgres_url) as first:
        await first.put_session(session())  # the tables exist
    checks: list[str] = []
    merged: list[int] = []
    real_check, real_merged = PostgresJournal._check_version, pgbatch._merged

    def check(self: PostgresJournal, conn: object) -> None:
        checks.append(self.url)
        real_check(self, conn)  # type: ignore[arg-type]

    def counted(conn: object, calls: list[pgbatch.Call]) -> None:
        if calls:
            merged.append(len(calls))
        real_merged(conn, calls)

    monkeypatch.setattr(PostgresJournal, "_check_version", check)
    monkeypatch.setattr(pgbatch, "_merged", counted)
    stores = [PostgresJournal(postgres_url) for _ in range(5)]
    async with anyio.create_task_group() as tg:
        for i, store in enumerate(stores):
            tg.start_soon(store.put_step, step(f"m{i}", 0))
    assert (len(checks), merged) == (1, [5])
    for i, store in enumerate(stores):
        assert await store.step_indices(f"m{i}") == [0]
        await store.aclose()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE jeeves_journal SET value = '7' WHERE key = 'schema_version'")
    stores = [PostgresJournal(postgres_url) for _ in range(3)]
    errors: list[BaseException] = []

    async def write(store: PostgresJournal, i: int) -> None:
        try:
            await store.put_step(step(f"n{i}", 0))
        except JournalError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg:
        for i, store in enumerate(stores):
            tg.start_soon(write, store, i)
    assert len(errors) == 3 and all("newer jeeves" in str(e) for e in errors)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM jeeves_steps WHERE session_id LIKE 'n%'").fetchone()[0] == 0


async def test_the_stores_of_a_process_share_its_connection_and_their_calls_share_transactions(
    postgres_url: str,
) -> None:
    """A worker opens a store per run: every store of the process talks to the database on the
    connection it keeps (same server backend, no new connection per store), and calls made
    together go out in one transaction (group commit), each committed before it returns."""

    def backend(conn: object) -> int:
        return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[attr-defined]

    async with PostgresJournal(postgres_url) as first:
        await first.put_session(session())
        pid = await first._call(backend)
    async with PostgresJournal(postgres_url) as second, PostgresJournal(postgres_url) as third:
        assert await second._call(backend) == pid
        assert await third._call(backend) == pid
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            commits = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            before = conn.execute(commits).fetchone()[0]
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon((second if i % 2 else third).put_step, step(f"g{i}", 0))
            after = conn.execute(commits).fetchone()[0]
        assert after - before - 1 < 20  # 20 writes, in fewer transactions (the bench's read is one)
        for i in range(20):  # each committed: another store reads it
            async with PostgresJournal(postgres_url) as reader:
                assert await reader.step_indices(f"g{i}") == [0]


async def test_a_statement_refused_in_a_batch_fails_its_own_caller_only(postgres_url: str) -> None:
    """Calls sent together share a transaction: when the database refuses one statement, the
    batch is rolled back and sent again call by call, so the others are committed and only
    the refused call's caller hears of it (a JournalError naming the database)."""
    outcomes: dict[str, object] = {}

    async with PostgresJournal(postgres_url) as journal:
        await journal.put_session(session())  # the tables exist: the calls below batch alone

        async def call(name: str, fn: object) -> None:
            try:
                outcomes[name] = await journal._call(fn)  # type: ignore[arg-type]
            except JournalError as exc:
                outcomes[name] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "bad", lambda conn: conn.execute("SELECT * FROM no_such_table"))
            for i in range(3):
                tg.start_soon(journal.put_step, step(f"ok{i}", 0))
        assert isinstance(outcomes["bad"], JournalError) and "no_such_table" in str(outcomes["bad"])
    async with PostgresJournal(postgres_url) as reader:
        for i in range(3):
            assert await reader.step_indices(f"ok{i}") == [0]


async def test_a_v1_journal_reads_as_the_sqlite_store_reads_one(postgres_url: str) -> None:
    """As SQLiteJournal: a journal from before the approvals schema (v1, `running`) reads, its
    running root as in_progress (listed paused: it holds no lease), and takes v2 records."""
    async with PostgresJournal(postgres_url) as journal:
        await journal.put_session(session())
        await journal.put_step(step())
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE jeeves_journal SET value = '1' WHERE key = 'schema_version'")
        conn.execute("UPDATE jeeves_steps SET record = replace(record, '\"v\":4', '\"v\":1')")
        conn.execute(
            "UPDATE jeeves_sessions SET record = replace(replace(record, '\"v\":4', '\"v\":1'), "
            '\'"status":"in_progress"\', \'"status":"running"\')'
        )
        (text,) = conn.execute("SELECT record FROM jeeves_sessions").fetchone()
    assert '"v":1' in text and '"status":"running"' in text
    async with PostgresJournal(postgres_url, create=False) as journal:
        record = await journal.get_session("r1")
        assert record is not None and (record.v, record.status) == (1, "in_progress")
        old = await journal.get_step("r1", 0)
        assert old is not None and old.v == 1
        await journal.put_step(step(index=1))
        assert await journal.step_indices("r1") == [0, 1]
    assert [r.status for r in await list_runs(postgres_url)] == ["paused"]


async def test_a_database_without_a_journal_is_created_only_when_recording(postgres_url: str) -> None:
    with pytest.raises(UserError, match=r"holds no jeeves journal \(no table jeeves_journal\)"):
        await PostgresJournal(postgres_url, create=False).sessions()
    with pytest.raises(UserError, match="holds no jeeves journal"):
        await list_runs(postgres_url)
    async with PostgresJournal(postgres_url) as journal:
        assert await journal.sessions() == []
    assert await list_runs(postgres_url) == []


async def _record_runs(url: str, *ids: str) -> None:
    async with PostgresJournal(url) as journal:
        for sid in ids:
            await jeeves.run(
                archs.build_fanout(), "count these", model=archs.model(), journal=journal, session_id=sid
            )


def _plan(url: str, sql: str, root: str | None = None) -> str:
    """PostgreSQL's plan of one of the store's reads (of run `root`; else of the latest 50
    runs), sequential scans priced out: a read that no index can serve still plans a `Seq Scan`."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        args = (50,) if root is None else PostgresJournal._tree(root)
        rows = conn.execute(f"EXPLAIN {sql}".encode(), args).fetchall()
    return "\n".join(row[0] for row in rows)


async def test_one_runs_sessions_and_steps_are_read_through_indexes_not_the_tables(postgres_url: str) -> None:
    """A strict replay (`read_run`) and `sessions(root)` find the run's subtree by a range of
    `jeeves_sessions_tree` and its steps by their primary key, whatever else the journal holds."""
    await _record_runs(postgres_url, "a", "a_b", "ab", "a-b")
    for sql in (PostgresJournal._SELECT_TREE, PostgresJournal._READ_RUN):
        plan = _plan(postgres_url, sql, "a")
        assert "Seq Scan" not in plan and "jeeves_sessions_tree" in plan, plan
    assert "jeeves_steps_pkey" in _plan(postgres_url, PostgresJournal._READ_RUN, "a")
    latest = _plan(postgres_url, PostgresJournal._SELECT_RUNS)  # `jeeves runs --last 50`
    assert "Seq Scan" not in latest and "jeeves_sessions_runs" in latest, latest

    async with PostgresJournal(postgres_url) as journal:
        run = await journal.read_run("a")
        ids = [r.session_id for r in run.sessions()]  # in the order first recorded
        assert ids == [r.session_id for r in await journal.sessions("a")]
        assert ids[0] == "a" and sorted(ids[1:]) == ["a__worker_0", "a__worker_1", "a__worker_2"]
        for record in run.sessions():
            assert run.step_indices(record.session_id) == await journal.step_indices(record.session_id)
        assert (await jeeves.replay(archs.build_fanout(), journal, "a_b")).output


@pytest.mark.parametrize(
    "dropped",
    [["jeeves_sessions_tree"], ["jeeves_sessions_runs"], ["jeeves_sessions_tree", "jeeves_sessions_runs"]],
)
async def test_a_journal_made_before_its_indexes_gets_them_when_recorded_into(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, dropped: list[str]
) -> None:
    """A reader reads an older journal as it is (no DDL); the first store that records there
    adds the indexes it lacks, once."""
    from jeeves.journal import postgres

    await _record_runs(postgres_url, "old")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for name in dropped:
            conn.execute(f"DROP INDEX {name}".encode())
    monkeypatch.setattr(postgres, "_TABLES_SEEN", set())  # as a new process would: no table seen yet

    async with PostgresJournal(postgres_url, create=False) as reader:
        assert [r.session_id for r in (await reader.read_run("old")).sessions()][:1] == ["old"]
        assert [r.session_id for r in await reader.runs(last=1)] == ["old"]
    plans = _plan(postgres_url, PostgresJournal._SELECT_TREE, "old") + _plan(
        postgres_url, PostgresJournal._SELECT_RUNS
    )
    assert [name for name in postgres._INDEXES if name not in plans] == dropped

    await _record_runs(postgres_url, "new")
    plans = _plan(postgres_url, PostgresJournal._SELECT_TREE, "old") + _plan(
        postgres_url, PostgresJournal._SELECT_RUNS
    )
    assert all(name in plans for name in postgres._INDEXES)


async def test_a_role_that_may_not_add_the_index_records_on_and_is_told_how_to_mend_it(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a table's owner may index it: a role granted its rows alone still records and
    reads, warned once in one line with the statement to run."""
    from jeeves.journal import postgres

    await _record_runs(postgres_url, "old")
    role = "writer_" + postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP INDEX jeeves_sessions_tree")
        conn.execute(f"CREATE ROLE {role} LOGIN".encode())
        conn.execute(f"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO {role}".encode())
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}".encode())
    monkeypatch.setattr(postgres, "_TABLES_SEEN", set())
    url = postgres_url.replace("jeeves@", f"{role}@", 1)

    with pytest.warns(UserWarning, match=r"this role may not add the journal's indexes") as caught:
        await _record_runs(url, "new")
    assert len(caught) == 1 and "\n" not in str(caught[0].message)
    assert f"run as the tables' owner: {postgres._INDEXES['jeeves_sessions_tree']}" in str(caught[0].message)
    async with PostgresJournal(url, create=False) as reader:
        assert [r.session_id for r in await list_runs(reader)] == ["old", "new"]
        assert len((await reader.read_run("new")).sessions()) == 4


async def test_the_scaling_pages_statements_build_the_journals_own_indexes_without_blocking(
    postgres_url: str,
) -> None:
    """docs/scaling.md's statements, for an owner to build the indexes without blocking
    writers, are the ones jeeves runs, made concurrent, and they build indexes the reads use."""
    from jeeves.journal import postgres

    page = (REPO / "docs" / "scaling.md").read_text()
    block = page.split("```sql\n", 1)[1].split("```", 1)[0]
    statements = [line.rstrip(";") for line in block.splitlines()]
    assert statements == [
        sql.replace("CREATE INDEX", "CREATE INDEX CONCURRENTLY", 1) for sql in postgres._INDEXES.values()
    ]

    await _record_runs(postgres_url, "old")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP INDEX jeeves_sessions_tree")
        conn.execute("DROP INDEX jeeves_sessions_runs")
        for statement in statements:  # CONCURRENTLY: outside a transaction, as an owner runs it
            conn.execute(statement.encode())
    plans = _plan(postgres_url, PostgresJournal._SELECT_TREE, "old") + _plan(
        postgres_url, PostgresJournal._SELECT_RUNS
    )
    assert "jeeves_sessions_tree" in plans and "jeeves_sessions_runs" in plans


async def test_an_unreachable_server_is_one_journal_error_naming_the_url_without_its_password() -> None:
    url = "postgresql://jeeves:s3cret@127.0.0.1:1/nowhere"
    with pytest.raises(
        JournalError, match=r"postgresql://jeeves:\*\*\*@127.0.0.1:1/nowhere: cannot connect"
    ) as info:
        await PostgresJournal(url).sessions()
    assert "s3cret" not in str(info.value) and "\n" not in str(info.value)
    assert (
        display_url("postgres://u@h/db?password=x&sslmode=require")
        == "postgres://u@h/db?password=***&sslmode=require"
    )


def test_a_url_libpq_cannot_read_is_one_line_that_never_quotes_its_password() -> None:
    with pytest.raises(UserError) as info:  # before any connection: libpq's own message quotes the URL
        PostgresJournal("postgresql://pgadmin:s3cret-pw@[::1:55432/jv")  # an IPv6 host left open
    said = str(info.value)
    assert said.startswith("postgresql://pgadmin:***@[::1:55432/jv is not a PostgreSQL URL libpq can read (")
    assert said.endswith("; write postgresql://USER:PASSWORD@HOST:PORT/DBNAME.")
    assert "s3cret" not in said and "\n" not in said and info.value.__cause__ is None


def test_a_drivers_message_that_quotes_the_url_is_masked() -> None:
    url = "postgresql://pgadmin:s3cret-pw@db.internal/jv"
    said = driver_message(ValueError(f'invalid URI: "{url}";\n auth for s3cret-pw failed'), url)
    assert said == 'invalid URI: "postgresql://pgadmin:***@db.internal/jv"; auth for *** failed'
    assert (
        driver_message(ValueError("pw abc"), "postgresql://u:abc@h/d") == "pw abc"
    )  # too short to mask words


def test_a_url_that_is_not_postgres_is_refused() -> None:
    with pytest.raises(UserError, match=r"url='mysql://x' is not a PostgreSQL URL"):
        PostgresJournal("mysql://x")


def test_open_journal_opens_a_url_as_a_postgres_journal(postgres_url: str) -> None:
    store = open_journal(postgres_url, create=False)
    assert isinstance(store, PostgresJournal) and store.url == postgres_url
    legacy = open_journal(postgres_url.replace("postgresql://", "postgres://"))
    assert isinstance(legacy, PostgresJournal)


def test_jeeves_runs_and_replay_take_a_database_url(postgres_url: str) -> None:
    async def record() -> None:
        async with PostgresJournal(postgres_url) as journal:
            await jeeves.run(
                archs.build_agent(),
                "Write add",
                model=archs.model(),
                journal=journal,
                session_id="job-17",
                architecture_ref="tests.journal.archs:build_agent",
            )

    anyio.run(record)
    runs = jeeves_cli("runs", postgres_url)
    assert runs.returncode == 0, runs.stderr
    assert "job-17" in runs.stdout and "completed" in runs.stdout
    replayed = jeeves_cli("replay", postgres_url, "job-17")
    assert replayed.returncode == 0, replayed.stderr
    assert "job-17" in replayed.stdout


def test_import_jeeves_imports_neither_psycopg_nor_dbos() -> None:
    code = (
        "import sys, jeeves, jeeves.journal\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('psycopg', 'dbos', 'sqlalchemy')]\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
