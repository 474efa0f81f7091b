"""`Worker`: executes submitted runs from DBOS queues, with heartbeats and takeover.

One worker per process (DBOS is a process-wide singleton). It serves targets (spec files or
`module:attr` references), each on its own queue, at most `concurrency` runs at once in
this process and `global_concurrency` across all workers (per target). Every run records
into the shared journal under its root session id, which is the DBOS workflow id.

Asyncio only: DBOS runs workflows on the event loop that launched it and has no trio
support, so `Worker.run` refuses trio with a UserError. Submitting works anywhere.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import sniffio

from jeeves._base.validate import check_int, check_number
from jeeves._run.branch import Placement, stream_branch
from jeeves._run.context import SPREADER, Architecture
from jeeves._run.replay import offline_script, skip_served
from jeeves._run.runner import RunResult, RunStream
from jeeves._run.runner import stream as stream_architecture
from jeeves.approvals.decide import Approvals, PendingGate
from jeeves.durable import engine
from jeeves.durable.heartbeat import Heartbeat
from jeeves.durable.runlock import RunLocks
from jeeves.durable.spread import Spreader, branch_queue_name, resolve_path
from jeeves.durable.targets import Target, load_targets, queue_of
from jeeves.errors import JournalError, UserError
from jeeves.journal.eventlog import ENDED, EventLog, open_event_log
from jeeves.journal.open import check_journal, close_journal, open_journal
from jeeves.journal.postgres import checked_url, display_url, is_database_url
from jeeves.journal.recorder import EventRecorder
from jeeves.journal.records import SessionRecord, error_type_name
from jeeves.journal.retry import configure as configure_db_retry
from jeeves.journal.retry import is_unavailable
from jeeves.journal.store import JournalStore

__all__ = ["DATABASE_ENV", "Worker", "database_from_env", "journal_for"]

DATABASE_ENV = "JEEVES_DATABASE"
BRANCH_POLL_S = 0.5
"""The branch queues are polled at most this often (the runs' queues at `polling_interval_s`):
each poll is DBOS reading the queue's row and trying a dequeue, a few statements and about
4 % of a busy worker's CPU at 0.1 s (bench/results/DURABLE_NOTES.md, stop 38), for a queue
only runs that spread ever use. A branch is a whole child session: half a second before it
starts is small next to it."""
GATE_RECHECK_S = 300.0
"""A run waiting at a gate looks at its journal again at least this often, so a decision
recorded without a wake-up message (`record_decision` in code) is acted on too."""


def database_from_env(database: str | None) -> str:
    """`database`, or `$JEEVES_DATABASE`; a UserError saying how to give one when neither is set."""
    value = database or os.environ.get(DATABASE_ENV, "")
    if not value:
        raise UserError(
            f"No database: pass --database postgresql://user@host/db or set {DATABASE_ENV} "
            f"(sqlite:///runs.sqlite for one machine)."
        )
    if not (is_database_url(value) or value.startswith("sqlite:///")):
        raise UserError(
            f"database={display_url(value)!r} is not a database URL DBOS can use; give postgresql://user@host:5432/db "
            f"(many machines) or sqlite:///path/to/runs.sqlite (one machine)."
        )
    return checked_url(value) if is_database_url(value) else value


def journal_for(database: str, journal: str | None) -> str:
    """Where runs record: `journal`, or the database itself when it is PostgreSQL."""
    if journal:
        return journal
    if is_database_url(database):
        return database
    raise UserError(
        f"database={database!r} is SQLite: give the runs a journal of their own (--journal runs.db, "
        f"or journal='runs.db' in code); "
        f"DBOS's tables and jeeves' journal do not share a SQLite file."
    )


class Worker:
    """Runs submitted jeeves runs from DBOS queues until stopped.

    Args:
        targets: Spec files (`architectures/codegen.toml`) and `module:attr` references this
            worker serves; each is a queue.
        database: The DBOS system database: `postgresql://...` (many workers, takeover) or
            `sqlite:///file` (one machine). Defaults to `$JEEVES_DATABASE`.
        journal: Where runs record (default: `database` when it is PostgreSQL).
        concurrency: Runs at once in this worker.
        global_concurrency: Runs at once per target across all workers (None: no limit).
        worker_id: This worker's DBOS executor id. Default: unique per process on
            PostgreSQL; "local" on SQLite, so a restarted worker recovers its own runs.
        heartbeat_s, takeover_after_s: How often this worker beats, and how long a silent
            worker keeps its runs before another takes them (PostgreSQL only).
        polling_interval_s: How often the queues are polled for new runs.
        offline: Build specs with their `[demo]` scripts instead of live models.
        approvals: The approval policy of targets that bring none (`module:attr`
            references, specs without `[approvals]`). A run reaching a gate waits for its
            decision on the worker (durably: a worker that dies hands it over), and a
            decision recorded from anywhere (`jeeves approve DATABASE SESSION`) wakes it.
        spread: Whether runs hand their parallel children (Supervisor's delegations,
            PlanExecute's worker steps) to any worker as branches (`jeeves.durable.spread`).
            Default: on PostgreSQL (many workers), off on SQLite (one). Every worker
            serves the branches of its targets either way.
        db_retry_s: How long a database fault (a restart, a dead connection, the network)
            is waited out before a run fails with a `JournalError` saying to resume it
            (process-wide; default `$JEEVES_DB_RETRY_S`, else 60 s).
    """

    def __init__(
        self,
        targets: Sequence[str],
        *,
        database: str | None = None,
        journal: str | None = None,
        concurrency: int = 10,
        global_concurrency: int | None = None,
        worker_id: str | None = None,
        heartbeat_s: float = 5.0,
        takeover_after_s: float = 30.0,
        polling_interval_s: float = 1.0,
        offline: bool = False,
        approvals: Approvals | None = None,
        spread: bool | None = None,
        db_retry_s: float | None = None,
    ) -> None:
        if db_retry_s is not None:
            configure_db_retry(db_retry_s)
        self.database = database_from_env(database)
        self.journal = journal_for(self.database, journal)
        self.concurrency = check_int(concurrency, name="concurrency", minimum=1)
        if global_concurrency is not None:
            check_int(global_concurrency, name="global_concurrency", minimum=1)
        self.global_concurrency = global_concurrency
        self.heartbeat_s = check_number(heartbeat_s, name="heartbeat_s", minimum=0, above=True)
        self.takeover_after_s = check_number(takeover_after_s, name="takeover_after_s", minimum=0, above=True)
        if self.takeover_after_s <= self.heartbeat_s:
            raise UserError(
                f"takeover_after_s={takeover_after_s!r} must exceed heartbeat_s={heartbeat_s!r}, or live "
                f"workers would be taken over; use e.g. 30 and 5."
            )
        self.polling_interval_s = check_number(
            polling_interval_s, name="polling_interval_s", minimum=0, above=True
        )
        self.targets: dict[str, Target] = load_targets(targets, offline=offline, approvals=approvals)
        postgres = is_database_url(self.database)
        self.spread = postgres if spread is None else bool(spread)
        self._client: Any = None
        self._client_lock = anyio.Lock()
        self.worker_id = worker_id or (
            f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}" if postgres else "local"
        )
        self._running: set[anyio.CancelScope] = set()
        self._events: EventLog | None = None
        self._locks: RunLocks | None = None
        """The run locks of the runs in flight, on one connection (PostgreSQL; while `run` serves)."""
        self._drained: anyio.Event | None = None
        self.heartbeat: Heartbeat | None = None
        if postgres:
            self.heartbeat = Heartbeat(
                self.database,
                self.worker_id,
                recover=engine.recover,
                fenced=self._fenced,
                heartbeat_s=self.heartbeat_s,
                takeover_after_s=self.takeover_after_s,
            )

    def __repr__(self) -> str:
        return f"Worker({sorted(self.targets)!r}, database={display_url(self.database)!r}, id={self.worker_id!r})"

    async def execute(self, target: str, task: str) -> dict[str, Any]:
        """The workflow body: one jeeves run of `target`, recorded (and resumed) in the journal.

        A run that fails is an outcome the journal holds, not a workflow error: the workflow
        returns it, so DBOS does not retry a run that failed for a reason a retry repeats."""
        session_id = engine.workflow_id()
        entry = self.targets.get(target)
        if entry is None:  # a queue routes only this worker's targets; this is a mismatch
            return {"session_id": session_id, "status": "failed", "error": f"unknown target {target!r}"}

        @asynccontextmanager
        async def attempt(store: JournalStore) -> AsyncIterator[RunStream]:
            arch, router = entry.build()  # afresh each attempt: an offline script serves one run
            if (scripted := offline_script(router)) is not None:  # a resumed run goes on where it stopped
                await skip_served(scripted, store, session_id)
            spreader = self._spreader(entry.name, arch, session_id)
            token = SPREADER.set(spreader)
            try:
                async with stream_architecture(
                    arch,
                    task,
                    router=router,
                    session_id=session_id,
                    journal=store,
                    architecture_ref=entry.source,
                    approvals=entry.approvals,
                ) as events:
                    yield events
            finally:
                SPREADER.reset(token)

        return await self._serve(session_id, target, task, attempt)

    async def execute_branch(
        self, target: str, path: list[str | int], task: str, placement: dict[str, Any]
    ) -> dict[str, Any]:
        """The branch workflow body: one child session of a run another worker executes
        (`jeeves.durable.spread`), recorded into the run's journal under its own id."""
        session_id = engine.workflow_id()
        entry = self.targets.get(target)
        if entry is None:
            return {"session_id": session_id, "status": "failed", "error": f"unknown target {target!r}"}

        @asynccontextmanager
        async def attempt(store: JournalStore) -> AsyncIterator[RunStream]:
            # A malformed placement or a path this build cannot follow is a UserError, which
            # `_serve` returns as the branch's failure (not retried: the same code fails alike).
            arch, router = entry.build()
            child = resolve_path(arch, path)
            async with stream_branch(
                child, task, Placement.from_json(placement), journal=store, router=router
            ) as events:
                yield events

        return await self._serve(session_id, f"{target} (branch)", task, attempt)

    async def _serve(
        self,
        session_id: str,
        label: str,
        task: str,
        attempt: Callable[[JournalStore], AbstractAsyncContextManager[RunStream]],
    ) -> dict[str, Any]:
        """Execute a run (or a branch) under its lock, recording its events, until it ends:
        at a gate nobody decided yet it waits here, durably, for a decision, then goes on from
        the journal.

        Whatever stops it is returned as the run's failure, typed (`Type: message`): a
        JeevesError (a database past its retry bound is a `JournalError` saying to resume),
        or an error of the target's own code (a build that fails); never an exception group."""
        scope = anyio.CancelScope()
        self._running.add(scope)
        run = _Served(self, session_id, label, task, attempt)
        try:
            with scope:
                try:
                    await run.serve()
                except Exception as exc:  # kept, not raised: DBOS would record an untyped error
                    run.failure = _single(exc)
                if run.failure is not None:
                    await run.record_failure()
        finally:
            self._running.discard(scope)
            if not self._running and self._drained is not None:
                self._drained.set()
            with anyio.CancelScope(shield=True):
                await run.close()
        if run.failure is not None:
            return {
                "session_id": session_id,
                "status": "failed",
                "error": f"{error_type_name(run.failure)}: {run.failure}",
            }
        if scope.cancelled_caught or run.result is None:  # stopping: the run is handed over, unfinished
            raise anyio.get_cancelled_exc_class()()
        result = run.result
        outcome: dict[str, Any] = {
            "session_id": session_id,
            "status": result.status,
            "text": result.text,
            "stop_reason": result.stop_reason,
        }
        if result.status != "completed":  # expired, rejected, cancelled: the reason is its text
            outcome["error"] = f"the run ended {result.status}: {result.text or result.stop_reason}"
        return outcome

    def _spreader(self, target: str, arch: Architecture, run_id: str) -> Spreader:
        return Spreader(
            self._dbos_client,
            target,
            arch,
            run_id,
            poll_s=min(self.polling_interval_s, 0.5),
            enqueue=self.spread,
        )

    async def _dbos_client(self) -> Any:
        """The DBOS client branches are queued and watched with: made on first use (DBOS has
        launched by then: only a running workflow asks), shared by this worker's runs."""
        async with self._client_lock:
            if self._client is None:
                self._client = await anyio.to_thread.run_sync(engine.client, self.database)
        return self._client

    def event_log(self) -> EventLog:
        """The event log every run of this worker records into (one: its tables are checked
        once, not per run)."""
        if self._events is None:
            self._events = open_event_log(self.journal)
        return self._events

    def _exclusive(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """The run lock on PostgreSQL (no two workers execute one run at once); nothing on
        SQLite, where one machine runs one worker."""
        if self._locks is None:
            return contextlib.nullcontext()
        return self._locks.hold(session_id)

    def queues(self) -> dict[str, tuple[int | None, float]]:
        """The DBOS queues this worker serves: name -> (global limit, polling interval s); each
        target's runs' queue at `polling_interval_s`, its branch queue at most every
        `BRANCH_POLL_S`."""
        branch_poll = max(self.polling_interval_s, BRANCH_POLL_S)
        queues = {queue_of(name): (self.global_concurrency, self.polling_interval_s) for name in self.targets}
        for name in self.targets:
            queues[branch_queue_name(name)] = (self.global_concurrency, branch_poll)
        return queues

    async def run(self, *, ready: anyio.Event | None = None) -> None:
        """Launch DBOS, serve the queues and beat until cancelled (Ctrl-C, SIGTERM, a cancel
        scope); then stop taking runs, cancel the ones in flight and hand them over."""
        if sniffio.current_async_library() != "asyncio":
            raise UserError(
                "A jeeves worker runs on asyncio only (DBOS runs workflows on an asyncio loop); start it "
                "with anyio.run(..., backend='asyncio') or `jeeves worker`."
            )
        # a journal of its own (the database is checked by the heartbeat and DBOS): a bad one is
        # one line now, not each run's failure
        if self.journal != self.database:
            await check_journal(self.journal)
        if self.heartbeat is not None:
            await anyio.to_thread.run_sync(self.heartbeat.register)
            self.heartbeat.claiming = False  # beat while DBOS starts, take nobody over yet
            self.heartbeat.start()
        queues = self.queues()
        launched = False
        try:
            async with self._run_locks():
                try:
                    engine.launch(
                        self.database,
                        worker_id=self.worker_id,
                        queues=list(queues),
                        body=self.execute,
                        branch=self.execute_branch,
                    )
                    launched = True
                    await anyio.to_thread.run_sync(
                        functools.partial(engine.register_queues, queues, worker_concurrency=self.concurrency)
                    )
                    if self.heartbeat is not None:
                        self.heartbeat.claiming = True
                    if ready is not None:
                        ready.set()
                    with _long_lived_heap():
                        await anyio.sleep_forever()
                finally:
                    if launched:
                        with anyio.CancelScope(shield=True):
                            await anyio.to_thread.run_sync(engine.shutdown)
                            await self._stop_runs()
        finally:
            with anyio.CancelScope(shield=True):
                if self._events is not None:
                    with contextlib.suppress(Exception):
                        await self._events.aclose()
                    self._events = None
                if self._client is not None:
                    await anyio.to_thread.run_sync(self._client.destroy)
                    self._client = None
                if self.heartbeat is not None:
                    stop = functools.partial(self.heartbeat.stop, hand_over=launched)
                    await anyio.to_thread.run_sync(stop)

    @asynccontextmanager
    async def _run_locks(self) -> AsyncIterator[None]:
        """The run locks while the block runs (PostgreSQL), let go of when it ends, after
        the runs stopped and before they are handed over."""
        if self.heartbeat is None:
            yield
            return
        async with RunLocks(self.database).serving() as locks:
            self._locks = locks
            try:
                yield
            finally:
                self._locks = None

    async def _stop_runs(self) -> None:
        """Cancel the runs in flight and wait until each has closed its journal, so none
        writes after this worker hands its runs over."""
        if not self._running:
            return
        self._drained = anyio.Event()
        for scope in list(self._running):
            scope.cancel()
        await self._drained.wait()  # set by the last run to leave (each unwinds in its own task)

    def _fenced(self, by: str) -> None:
        """This worker was taken over (it stalled past `takeover_after_s`): its runs belong to
        another worker now, so it must not touch them again. Stop the process at once."""
        sys.stderr.write(f"jeeves worker {self.worker_id}: taken over by {by}; stopping now.\n")
        sys.stderr.flush()
        os._exit(75)


GC_GEN0 = 10_000
"""The worker's threshold of young-generation collections (Python's default: 700)."""


@contextlib.contextmanager
def _long_lived_heap() -> Iterator[None]:
    """While the worker serves: its start-up heap (DBOS, SQLAlchemy, pydantic's schemas,
    the targets) frozen out of the cyclic collector, which no full collection walks again,
    and young collections every `GC_GEN0` net allocations instead of 700. A run frees what
    it made by reference counting; the collector found about 40 objects in cycles a run
    but cost the worker about 8 % of its CPU (bench/results/DURABLE.md). Restored after."""
    threshold = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_GEN0, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _gate_wait(pending: Sequence[PendingGate]) -> float:
    """How long a run waits at its gates before looking at the journal again: until the
    first gate expires (the resumed run then decides it `expire`), at most GATE_RECHECK_S."""
    expiries = [gate.expires_at for gate in pending if gate.expires_at is not None]
    if not expiries:
        return GATE_RECHECK_S
    return max(1.0, min(GATE_RECHECK_S, min(expiries) - time.time() + 0.5))


def _single(exc: BaseException) -> BaseException:
    """The error inside an exception group (a task group's), the first when several."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class _Served:
    """One run (or branch) a worker executes: its journal, its event recorder, its attempts."""

    def __init__(
        self,
        worker: Worker,
        session_id: str,
        label: str,
        task: str,
        attempt: Callable[[JournalStore], AbstractAsyncContextManager[RunStream]],
    ) -> None:
        self.worker, self.session_id, self.label, self.task = worker, session_id, label, task
        self.attempt = attempt
        self.store = open_journal(worker.journal)
        self.recorder = EventRecorder(worker.event_log(), session_id, architecture=label, task=task)
        self.result: RunResult | None = None
        self.failure: BaseException | None = None
        self.status: str | None = None

    async def serve(self) -> None:
        async with self.worker._exclusive(self.session_id), anyio.create_task_group() as flusher:
            flusher.start_soon(self.recorder.run)  # registers the run in the log beside its first steps
            try:
                self.result = await self._attempts()
                self.status = self.result.status
            except Exception as exc:  # kept: the flusher's task group would wrap it
                self.failure, self.status = _single(exc), "failed"
            finally:  # None: cancelled, the run goes on elsewhere
                await _persist(functools.partial(self.recorder.close, self.status))

    async def _attempts(self) -> RunResult:
        while True:
            async with self.attempt(self.store) as events:
                self.recorder.new_attempt()
                async for event in events:
                    self.recorder.add(event)
                result = await events.result()
            if result.status != "awaiting_approval":
                return result
            pending = [gate.gate_id for gate in result.pending]
            await self.recorder.set_status("awaiting_approval")
            await engine.publish({"status": "awaiting_approval", "pending": pending})
            await engine.receive(_gate_wait(result.pending))
            await engine.publish({"status": "running"})
            await self.recorder.set_status("running")
            await close_journal(self.store)  # a fresh store reads the decision recorded elsewhere
            self.store = open_journal(self.worker.journal)

    async def record_failure(self) -> None:
        """A run that failed outside its sessions (its target's build failed, its lock or
        journal unreachable past the retry bound): record its root as failed, with the
        cause, so `jeeves runs`, the run's record and `jeeves serve` say why. Written once
        the database answers again (a database fault is outlasted, not given up on)."""
        failure = self.failure
        if failure is None or "__" in self.session_id:  # a branch: its parent reports it
            return
        await _persist(self._record_failure)
        await _persist(functools.partial(self.recorder.log.set_status, self.session_id, "failed"))

    async def _record_failure(self) -> None:
        assert self.failure is not None
        record = await self.store.get_session(self.session_id)
        if record is not None and record.status not in ENDED:
            record = record.model_copy(
                update={
                    "status": "failed",
                    "stop_reason": error_type_name(self.failure),
                    "output": str(self.failure),
                }
            )
        elif record is None:
            record = SessionRecord(
                session_id=self.session_id,
                role="run",
                architecture=self.label,
                task=self.task,
                status="failed",
                stop_reason=error_type_name(self.failure),
                output=str(self.failure),
                created_at=time.time(),
            )
        else:  # the run's own sessions recorded how it ended
            return
        await self.store.put_session(record)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await close_journal(self.store)


async def _persist(write: Callable[[], Awaitable[None]]) -> None:
    """`write()`, tried again every second while the database does not answer (past the retry
    bound: the run already failed, but how it ended must reach the database)."""
    while True:
        try:
            await write()
            return
        except JournalError as exc:
            if not is_unavailable(exc):
                raise
        await anyio.sleep(1.0)
