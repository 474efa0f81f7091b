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

Disconnects: following is counted (`following`). By default a run outlives its
followers and can be re-attached. With `cancel_on_disconnect=True` a run is cancelled when
its last follower leaves before it finished; a run nobody has followed yet keeps going.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from jeeves.architecture import Architecture
from jeeves.budget import Budget
from jeeves.errors import UserError
from jeeves.events import Event
from jeeves.ids import new_root_id, validate_root_id
from jeeves.journal import error_type_name
from jeeves.models.router import Router
from jeeves.runner import RunResult, stream
from jeeves.server.requests import RecordingTracer, RequestLog

__all__ = ["RunRecord", "RunRegistry", "RunStatus", "TooManyRuns"]

RunStatus = Literal["running", "completed", "failed", "cancelled"]


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
        self._done = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._cancel_requested = False
        self.requests = RequestLog()
        """The requests of the run's live model calls (what the viewer's node detail shows)."""

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
                await self._changed.wait()
            return True
        return False

    async def wait(self) -> None:
        """Wait until the run ended (completed, failed or cancelled)."""
        await self._done.wait()

    def cancel(self) -> bool:
        """Cancel the run if it is still running; True if it was."""
        if self.finished:
            return False
        self._cancel_requested = True
        if self._scope is not None:
            self._scope.cancel()
        return True

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
        if self.result is not None:
            out["stop_reason"] = self.result.stop_reason
            out["output"] = self.result.text
            out["usage"] = self.result.usage.model_dump()
        if self.error is not None:
            out["error"] = {"type": error_type_name(self.error), "message": str(self.error)}
        return out

    # -- written by the registry's driving task only ------------------------------------
    def _notify(self) -> None:
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
    ) -> RunRecord:
        """Start `arch` on `task` in the registry's task group and return its record at once.

        Raises:
            TooManyRuns: `max_running` runs are going already.
            UserError: the registry is not open, `session_id` is not a valid root id, or a
                run with that id is still held (pick another id, or wait for retention).
        """
        if self._group is None:
            raise UserError("The RunRegistry is not open; start runs inside `async with registry:`.")
        self._purge()
        sid = validate_root_id(session_id) if session_id is not None else new_root_id()
        if sid in self._runs:
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
        self._runs[sid] = record
        self._group.start_soon(self._drive, record, arch, task, router, budget, name=f"jeeves run {sid}")
        return record

    def cancel(self, session_id: str) -> RunRecord | None:
        """Cancel a running run; returns its record (None when unknown)."""
        record = self.get(session_id)
        if record is not None:
            record.cancel()
        return record

    def cancel_all(self) -> int:
        """Cancel every run still going (a server shutting down); returns how many were."""
        return sum(record.cancel() for record in self.running())

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
    async def _drive(
        self, record: RunRecord, arch: Architecture, task: str, router: Router | None, budget: Budget | None
    ) -> None:
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
                        router=router,
                        session_id=record.session_id,
                        budget=budget,
                        tracer=RecordingTracer(record.requests),
                    ) as events:
                        async for event in events:
                            record._append(event)
                        record.result = await events.result()
                    status = "completed"
                except Exception as exc:
                    record.error = exc
                    status = "failed"
        finally:
            record._finish(status, self._clock())

    def _purge(self) -> None:
        now = self._clock()
        expired = [
            sid
            for sid, r in self._runs.items()
            if r.finished_at is not None and r.followers == 0 and now - r.finished_at >= self.retention_s
        ]
        for sid in expired:
            del self._runs[sid]
