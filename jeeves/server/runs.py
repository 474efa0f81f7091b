"""The run registry: runs started by the server, their events, and who is following them.

A server cannot run a run inside the request that started it: the request ends (or the
client goes away) long before the run does. So the registry owns one task group for the
server's lifetime (`async with RunRegistry() as runs`), starts each run in it, and keeps
every event of a run in memory while it runs and for `retention_s` after it ended. Any
number of clients follow a run by sequence number: `events_after(seq)` is exactly the
events a client that has seen `seq` is missing, which is what SSE `Last-Event-ID` needs.

Invariants:
- a run's events are stored in the order the run's channel stamped them (strictly
  increasing `seq`), so "every event after `seq`" is a suffix of the list;
- a run is in `running` until its driving task has left the run's task group, so a
  finished record never has a task behind it;
- `cancel()` only cancels the run's own scope; leaving the registry cancels every run.

Gates: a run started with an approval policy waits on its gates live (`RunRecord.gates`,
a `GateDesk`, is its approver). A run the server found suspended in its journal at start
(`restore`) is held as `awaiting_approval` with no task behind it; once a decision is
recorded, `start(..., replace=True)` resumes it from the journal under the same id.

Disconnects: following is counted (`following`). By default a run outlives its
followers and can be re-attached. With `cancel_on_disconnect=True` a run is cancelled when
its last follower leaves before it finished; a run nobody has followed yet keeps going.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal, NamedTuple

import anyio
from anyio.abc import TaskGroup

from jeeves._base.ids import new_root_id, validate_root_id
from jeeves._run.context import Architecture
from jeeves._run.runner import RunResult, RunStream, check_injection, stream
from jeeves._run.source import register_loader
from jeeves._run.steering import Inbox
from jeeves.approvals.decide import Approvals, Decision, PendingGate
from jeeves.budget import Budget
from jeeves.errors import UserError
from jeeves.events import ApprovalDecided, ApprovalRequested, Event
from jeeves.journal.records import Journal, error_type_name
from jeeves.models.router import Router
from jeeves.server.gates import GateDesk
from jeeves.server.inbox import check_target
from jeeves.server.requests import RecordingTracer, RequestLog
from jeeves.server.wire import WireCache

__all__ = ["RunNotRunning", "RunRecord", "RunRegistry", "RunStatus", "TooManyRuns"]

RunStatus = Literal["running", "completed", "failed", "cancelled", "awaiting_approval", "expired", "rejected"]
"""`running` while the run's task goes (waiting on a live gate included); `awaiting_approval`:
suspended at gates, held in the journal, resumed once they are decided; the rest are ends."""

_ENDS: dict[str, RunStatus] = {
    "completed": "completed",
    "awaiting_approval": "awaiting_approval",
    "expired": "expired",
    "rejected": "rejected",
    "cancelled": "cancelled",
    "failed": "failed",
}


SERVED = "served"
"""The journal source kind of a run the server started: `{"kind": "served", "name": ...}`
names the catalog entry, so a restarted server can resume the run."""


def _load_served(source: Mapping[str, Any]) -> Architecture:
    raise UserError(
        f"This run was started by a jeeves server as its architecture {source.get('name')!r}; that server "
        f"rebuilds it to resume the run. To replay it here, pass the architecture: jeeves.replay(arch, ...) "
        f"or `jeeves replay --spec ...`."
    )


register_loader(SERVED, _load_served)


async def _suspend(journal: Journal, session_id: str) -> None:
    """Mark a run the server stopped at its gates as awaiting them (the core wrote `cancelled`)."""
    session = await journal.get_session(session_id)
    if session is not None:
        update = {
            "status": "awaiting_gate",
            "stop_reason": None,
            "lease_owner": None,
            "lease_renewed_at": None,
        }
        await journal.put_session(session.model_copy(update=update))


class _Options(NamedTuple):
    router: Router | None
    budget: Budget | None
    approvals: Approvals | None
    journal: Journal | None


class RunNotRunning(UserError):
    """A message was sent to a run that is not running."""


class TooManyRuns(UserError):
    """The registry already drives `max_running` runs; try again when one has ended."""


class RunRecord:
    """One run the server started: its events so far, its status, its outcome."""

    def __init__(self, session_id: str, architecture: str, task: str) -> None:
        self.session_id = session_id
        """The run's root session id."""
        self.architecture = architecture
        """The name the run was started under."""
        self.task = task
        self.status: RunStatus = "running"
        self.result: RunResult | None = None
        """Set when the run completed."""
        self.error: Exception | None = None
        """Set when the run failed."""
        self.finished_at: float | None = None
        """Registry clock time when the run ended (drives retention)."""
        self.followers = 0
        """Clients following the run right now."""
        self._events: list[Event] = []
        self._seqs: list[int] = []
        self._changed = anyio.Event()
        self._watched = False
        """Whether someone holds `_changed` (a new one is made at a change only then)."""
        self._done = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._cancel_requested = False
        self._shutdown = False
        self.gates = GateDesk(on_change=self._notify)
        """The gates the run waits on live (its approver)."""
        self.suspended: list[PendingGate] = []
        """With status awaiting_approval: the gates the journal holds undecided."""
        self.agui_cursor = 0
        """The seq an AG-UI stream of this run stopped at for an interrupt (its resume continues after it)."""
        self._stream: RunStream | None = None
        self._early = Inbox()
        """Messages sent before the run's stream opened (bounded like the run's own inbox)."""
        """Messages sent before the run's stream existed, handed to it when it does."""
        self.requests = RequestLog()
        """The requests of the run's live model calls (what the viewer's node detail shows)."""
        self.wire = WireCache(self._events, self._seqs)
        """The events as jeeves SSE messages, encoded once for all followers."""

    @property
    def finished(self) -> bool:
        return self.status != "running"

    @property
    def last_seq(self) -> int:
        """The seq of the newest event (0 before the first)."""
        return self._seqs[-1] if self._seqs else 0

    def events_after(self, seq: int) -> list[Event]:
        """Every stored event whose seq is greater than `seq`, in order."""
        return self._events[bisect.bisect_right(self._seqs, seq) :]

    async def wait_after(self, seq: int, within_s: float) -> bool:
        """Wait until an event after `seq` exists or the run ended; False after `within_s` without."""
        with anyio.move_on_after(within_s):
            while not self.finished and self.last_seq <= seq:
                await self.change_token().wait()
            return True
        return False

    async def changed(self) -> None:
        """Wait for the next change: an event, a gate arriving or leaving, the end."""
        await self.change_token().wait()

    def change_token(self) -> anyio.Event:
        """An event set at the next change after this call (take it before looking at the record)."""
        self._watched = True
        return self._changed

    async def wait(self) -> None:
        """Wait until the run ended (completed, failed or cancelled)."""
        await self._done.wait()

    def decided(self, gate_id: str) -> Decision | None:
        """The decision the run recorded for `gate_id` (from its `approval.decided` event), if any."""
        for event in reversed(self._events):
            if isinstance(event, ApprovalDecided) and event.gate_id == gate_id:
                return Decision(
                    decision=event.decision,
                    by=event.by,
                    at=event.at,
                    note=event.note,
                    arguments_hash=event.arguments_hash,
                )
        return None

    def undecided(self, upto: int) -> list[ApprovalRequested]:
        """Gates requested at or before seq `upto` that no `approval.decided` event has decided yet."""
        requested: dict[str, ApprovalRequested] = {}
        for event in self._events:
            if isinstance(event, ApprovalRequested) and event.seq <= upto:
                requested[event.gate_id] = event
            elif isinstance(event, ApprovalDecided):
                requested.pop(event.gate_id, None)
        return list(requested.values())

    def pending(self) -> list[PendingGate]:
        """Every gate of this run waiting for a decision: live ones, or those held in the journal."""
        return self.gates.pending() if not self.finished else list(self.suspended)

    def cancel(self) -> bool:
        """Cancel the run if it is still running; True if it was."""
        if self.finished:
            return False
        self._cancel_requested = True
        if self._scope is not None:
            self._scope.cancel()
        return True

    def inject(self, text: str, session_id: str | None = None) -> None:
        """Queue a human's message for the run's agents (`RunStream.inject`).

        Raises:
            RunNotRunning: the run has ended.
            UserError: `RunStream.inject` refused the message (empty, another run's session),
                or `check_target` did (a session that cannot take it), or the inbox's caps.
        """
        if self.finished:
            raise RunNotRunning(
                f"Run {self.session_id!r} has ended; a message can only reach a running agent."
            )
        check_injection(self.session_id, text, session_id)
        check_target(self.session_id, self._events, session_id)
        if self._stream is None:  # started, but its task has not opened the stream yet
            self._early.put(text, session_id)
        else:
            self._stream.inject(text, session_id)

    def _attach(self, stream: RunStream) -> None:
        self._stream = stream
        for text, session_id in self._early.drain():
            stream.inject(text, session_id)

    def summary(self) -> dict[str, Any]:
        """What `GET /runs` shows: JSON-able, with no configuration in it (no routes, no keys)."""
        out: dict[str, Any] = {
            "session_id": self.session_id,
            "architecture": self.architecture,
            "task": self.task,
            "status": self.status,
            "events": len(self._events),
            "last_seq": self.last_seq,
        }
        pending = self.pending()
        if pending:
            out["pending_gates"] = [g.gate_id for g in pending]
        if self.result is not None:
            out["stop_reason"] = self.result.stop_reason
            out["output"] = self.result.text
            out["usage"] = self.result.usage.model_dump()
        if self.error is not None:
            out["error"] = {"type": error_type_name(self.error), "message": str(self.error)}
        return out

    # -- written by the registry's driving task only ------------------------------------
    def _notify(self) -> None:
        if not self._watched:  # nobody waits: the current token still means "the next change"
            return
        self._watched = False
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def _append(self, event: Event) -> None:
        self._events.append(event)
        self._seqs.append(event.seq)
        self._notify()

    def _finish(self, status: RunStatus, now: float) -> None:
        self.status = status
        self.finished_at = now
        self._notify()
        self._done.set()


class RunRegistry:
    """Starts runs in a task group it owns and keeps their events for followers.

    ```python
    async with RunRegistry(retention_s=600) as runs:
        record = runs.start(agent, "task", name="demo", router=router)
        await record.wait()
    ```

    Args:
        retention_s: How long a finished run's events stay available for (re)attaching.
            Finished runs are dropped lazily, on the next registry call after that.
        cancel_on_disconnect: Cancel a run when its last follower leaves before it ended.
        max_running: How many runs may be going at once; `start` refuses more with
            `TooManyRuns` (a finished run no longer counts, however long it is retained).
        clock: Monotonic seconds; injectable for tests of retention.
    """

    def __init__(
        self,
        *,
        retention_s: float = 600.0,
        cancel_on_disconnect: bool = False,
        max_running: int = 8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if retention_s < 0:
            raise UserError(f"retention_s must be >= 0 seconds, got {retention_s!r}.")
        if max_running < 1:
            raise UserError(f"max_running must be at least 1 run, got {max_running!r}.")
        self.max_running = max_running
        self.retention_s = retention_s
        self.cancel_on_disconnect = cancel_on_disconnect
        self._clock = clock
        self._runs: dict[str, RunRecord] = {}
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> RunRegistry:
        if self._group is not None:
            raise UserError("This RunRegistry is already open; a registry serves one server at a time.")
        self._group = await anyio.create_task_group().__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group, self._group = self._group, None
        assert group is not None
        self.cancel_all()
        group.cancel_scope.cancel()
        return await group.__aexit__(exc_type, exc, tb)

    # -- queries -------------------------------------------------------------------------
    def get(self, session_id: str) -> RunRecord | None:
        """The run with this root session id, if it is running or still retained."""
        self._purge()
        return self._runs.get(session_id)

    def runs(self) -> list[RunRecord]:
        """Every run still held, oldest first."""
        self._purge()
        return list(self._runs.values())

    def running(self) -> list[RunRecord]:
        """Runs whose driving task has not finished yet."""
        return [r for r in self._runs.values() if not r.finished]

    # -- commands ------------------------------------------------------------------------
    def start(
        self,
        arch: Architecture,
        task: str,
        *,
        name: str,
        session_id: str | None = None,
        router: Router | None = None,
        budget: Budget | None = None,
        approvals: Approvals | None = None,
        journal: Journal | None = None,
        replace: bool = False,
    ) -> RunRecord:
        """Start `arch` on `task` in the registry's task group and return its record at once.

        With `approvals` the run's gates wait on the record's `GateDesk` (its live approver);
        with `journal` every step is recorded there, and a session id the journal holds
        resumes (served steps are not run again). `replace=True` lets a finished record
        with the same id (a run suspended at gates) be replaced by its resumption.

        Raises:
            TooManyRuns: `max_running` runs are going already.
            UserError: the registry is not open, `session_id` is not a valid root id, or a
                run with that id is still held (pick another id, or wait for retention).
        """
        if self._group is None:
            raise UserError("The RunRegistry is not open; start runs inside `async with registry:`.")
        self._purge()
        sid = validate_root_id(session_id) if session_id is not None else new_root_id()
        held = self._runs.get(sid)
        if held is not None and not (replace and held.finished):
            raise UserError(
                f"A run with session_id {sid!r} is already held by this server; "
                f"use another session_id, or follow the existing run at /runs/{sid}/events."
            )
        if len(self.running()) >= self.max_running:
            raise TooManyRuns(
                f"This server is already running {self.max_running} runs, its limit; "
                f"try again when one has ended (the limit is max_runs=, `jeeves serve --max-runs`)."
            )
        record = RunRecord(sid, name, task)
        self._runs.pop(sid, None)  # a replaced record moves to the end: it is the newest run
        self._runs[sid] = record
        options = _Options(router, budget, approvals, journal)
        self._group.start_soon(self._drive, record, arch, task, options, name=f"jeeves run {sid}")
        return record

    def restore(self, session_id: str, name: str, task: str, pending: list[PendingGate]) -> RunRecord:
        """Hold a run found suspended in the journal (status `awaiting_approval`, no task behind it)."""
        record = RunRecord(session_id, name, task)
        record.suspended = list(pending)
        record._finish("awaiting_approval", self._clock())
        record.finished_at = None  # retained until resumed: its gates are still waiting
        self._runs[session_id] = record
        return record

    def cancel(self, session_id: str) -> RunRecord | None:
        """Cancel a running run; returns its record (None when unknown)."""
        record = self.get(session_id)
        if record is not None:
            record.cancel()
        return record

    def cancel_all(self) -> int:
        """Stop every run still going (a server shutting down); returns how many were.

        A run waiting on gates is suspended, not cancelled: its record (and, with a journal,
        its root session record) says `awaiting_approval`, so a server restarted on the
        same journal holds it again and its gates can still be decided.
        """
        stopping = self.running()
        for record in stopping:
            record.suspended = record.gates.pending()
            record._shutdown = True
        return sum(record.cancel() for record in stopping)

    @contextmanager
    def following(self, record: RunRecord) -> Iterator[RunRecord]:
        """Count a follower for the duration of the block (an SSE response, say).

        On leaving, with `cancel_on_disconnect`, the run is cancelled if it is still
        running and nobody else follows it.
        """
        record.followers += 1
        try:
            yield record
        finally:
            record.followers -= 1
            if self.cancel_on_disconnect and record.followers == 0:
                record.cancel()

    # -- internals -----------------------------------------------------------------------
    async def _drive(self, record: RunRecord, arch: Architecture, task: str, options: _Options) -> None:
        status: RunStatus = "cancelled"
        try:
            with anyio.CancelScope() as scope:
                record._scope = scope
                if record._cancel_requested:
                    scope.cancel()
                try:
                    async with stream(
                        arch,
                        task,
                        router=options.router,
                        session_id=record.session_id,
                        budget=options.budget,
                        journal=options.journal,
                        approvals=options.approvals,
                        approver=record.gates.ask if options.approvals is not None else None,
                        architecture_ref={"kind": SERVED, "name": record.architecture}
                        if options.journal is not None
                        else None,
                        tracer=RecordingTracer(record.requests),
                    ) as events:
                        record._attach(events)
                        async for event in events:
                            record._append(event)
                        record.result = await events.result()
                    record.suspended = list(record.result.pending)
                    status = _ENDS[record.result.status]
                except Exception as exc:
                    record.error = exc
                    status = "failed"
        finally:
            if status == "cancelled" and record._shutdown and record.suspended:
                status = "awaiting_approval"
                if options.journal is not None:
                    with anyio.CancelScope(shield=True):
                        await _suspend(options.journal, record.session_id)
            record._finish(status, self._clock())

    def _purge(self) -> None:
        now = self._clock()
        expired = [
            sid
            for sid, r in self._runs.items()
            if r.finished_at is not None
            and r.status != "awaiting_approval"
            and r.followers == 0
            and now - r.finished_at >= self.retention_s
        ]
        for sid in expired:
            del self._runs[sid]
