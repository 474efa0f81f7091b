"""A session's life: its start and end events, its span, and its record in the journal
(part of `jeeves._run.context.Context`).

The root's record also holds what a resume needs (the source, the approval policy), the
run's lease (owner, renewed_at) and its TTL; its status follows the lifecycle in
`jeeves.journal.SessionStatus`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

import anyio

from jeeves._base.trusted import trusted
from jeeves._run.architecture import Architecture, Output, describe_model
from jeeves._run.state import RunState
from jeeves._run.steps import StepsCore
from jeeves.budget import AXES, Budget, clamp
from jeeves.errors import PROGRAM_ERRORS, BudgetExceeded, ReplayDivergence, RunEnded, UserError, tag_session
from jeeves.events import AuditStats, BudgetSliced, SessionCompleted, SessionFailed, SessionStarted
from jeeves.journal.records import Journal, SessionRecord, SessionStatus, error_type_name
from jeeves.telemetry.tracer import NULL_SCOPE, NULL_SPAN, SpanHandle, is_null

if TYPE_CHECKING:
    from jeeves._run.context import Context

__all__ = ["SLICE_STEP", "Sessions", "root_fields"]

SLICE_STEP = "budget_slice"
"""The name of the step that allots a session its budget slice."""

_started = trusted(SessionStarted)
_completed = trusted(SessionCompleted)


def _rounds(output: Output | None) -> int | None:
    """The rounds an Output reports (an int, or a sequence of rounds), if it has a `rounds` field."""
    rounds = getattr(output, "rounds", None)
    if isinstance(rounds, int) and not isinstance(rounds, bool):
        return rounds
    return len(rounds) if isinstance(rounds, list | tuple) else None


def _describe_output(span: SpanHandle, output: Output, index: int) -> None:
    """A finished session's span attributes: its stop reason, a critic's score, an audit's stats."""
    span.set_attribute("jeeves.stop_reason", output.stop_reason)
    score = getattr(output.value, "score", None)
    if isinstance(score, int | float) and not isinstance(score, bool):
        span.set_attribute("jeeves.critic.score", float(score))
        span.set_attribute("jeeves.round", index)
    audit = getattr(output.value, "audit", None)
    if isinstance(audit, AuditStats):
        span.set_attribute("jeeves.audit.invalid_citations", audit.invalid_citations)
        span.set_attribute("jeeves.audit.uncited_claims", audit.uncited_claims)
        span.set_attribute("jeeves.audit.duration_ms", audit.duration_ms)


class Sessions(StepsCore):
    """A session's start, end and record (a part of Context)."""

    __slots__ = ()

    async def execute(self, arch: Architecture, task: str, *, index: int = 0) -> Output:
        """Run `arch` as this context's session (the runner calls this for the root)."""
        state = self._state
        state.role_paths[self.session_id] = self.role_path
        setup_error: Exception | None = None
        try:
            if state.journal is not None and state.mode == "replay":
                model = await self._recorded_model()
            else:
                model = describe_model(arch, cast("Context", self))
        except Exception as exc:  # no route, a replay missing this session: fail as this session, below
            model, setup_error = None, exc
        # An adopted session's records are its branch worker's (`jeeves._run.branch`): they are
        # already final, and rewriting them (in progress, then ended) would make a parent
        # taken over mid-adoption read the branch as unfinished.
        journaled = state.journal is not None and not self._adopted
        bare = not journaled and is_null(state.tracer)  # nothing but the reader reads session.started
        name = getattr(arch, "name", type(arch).__name__)
        await self._start(name, model, index, task, keep=not bare)
        if journaled:
            await self._record_session(self.started, "in_progress")
        with NULL_SCOPE if bare else state.tracer.session(self.started) as span:
            state.spans[self.session_id] = span
            try:
                if setup_error is not None:
                    raise setup_error
                if self._slice is not None:
                    await self._allot(self._slice)
                output = await arch.run(cast("Context", self), task)
                if not isinstance(output, Output):
                    raise UserError(
                        f"{type(arch).__name__}.run returned {output!r}; an architecture must return a jeeves.Output."
                    )
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                tag_session(exc, self.session_id)
                span.record_error(exc)
                usage = state.tree_usage(self.session_id)
                await self.emit(
                    SessionFailed(
                        session_id=self.session_id,
                        error_type=error_type_name(exc),
                        message=str(exc),
                        usage=usage,
                    )
                )
                ended = exc.status if isinstance(exc, RunEnded) else "failed"
                if journaled:
                    await self._record_session(self.started, ended, error=exc)  # type: ignore[arg-type]
                raise
            finally:
                state.spans.pop(self.session_id, None)
                if self._replayed:
                    span.set_attribute("jeeves.replayed_steps", self._replayed)
                if self._adopted:  # its work (and its model-call spans) ran on another worker
                    span.set_attribute("jeeves.adopted", True)
            if span is not NULL_SPAN:  # the default tracer records nothing: skip reading for it
                _describe_output(span, output, index)
        if state.channel.consume:  # `self.observed`: in jeeves.run nobody reads it, so it is not built
            await self.emit(
                _completed(
                    session_id=self.session_id,
                    output=output.text,
                    stop_reason=output.stop_reason,
                    usage=state.tree_usage(self.session_id),
                )
            )
        if journaled:
            await self._record_session(self.started, "completed", output=output)
        return output

    async def _start(self, name: Any, model: Any, index: int, task: Any, *, keep: bool) -> None:
        """Emit `session.started`. Unless `keep` (a journal or a tracer reads it), the context
        keeps only the event's fields (`ctx.started` builds it again if asked), and in
        `jeeves.run`, where nobody reads events, it is not built at all: it takes its `seq`."""
        # the task, the name and the model come from user code: validated unless plainly typed
        plain = type(task) is str and type(name) is str and (model is None or type(model) is str)
        channel = self._state.channel
        if not keep and plain and not channel.consume:
            seq, ts = channel.skip()
            self._started = (name, model, index, task, seq, ts)
            return
        started = (_started if plain else SessionStarted)(
            session_id=self.session_id,
            parent_id=self.parent_id,
            role=self.role,
            role_path=list(self.role_path),
            architecture=name,
            model=model,
            index=index,
            task=task,
        )
        self._started = started
        await self.emit(started)
        if not keep:
            self._started = (
                started.architecture,
                started.model,
                index,
                started.task,
                started.seq,
                started.ts,
            )

    async def _allot(self, wanted: Budget) -> None:
        """Put this session under its slice: `wanted` held to what remains above it, taken as
        this session's first step (a `function` step named `budget_slice`), so a replay or a
        resume runs under the slice the recording had, whatever remains when it runs."""

        async def allot() -> Budget:
            return clamp(wanted, self._meter.remaining())

        allotted = (
            await self.step("function", SLICE_STEP, wanted.model_dump(mode="json"), allot, Budget)
        ).value
        self._meter = self._meter.slice(allotted, owner=self.session_id)
        await self.emit(
            BudgetSliced(
                session_id=self.session_id,
                max_tokens=allotted.max_tokens,
                max_usd=allotted.max_usd,
                max_model_calls=allotted.max_model_calls,
                deadline_s=allotted.deadline_s,
                clamped=[
                    axis
                    for axis, field in AXES.items()
                    if getattr(wanted, field) is not None
                    and getattr(allotted, field) < getattr(wanted, field)
                ],
            )
        )

    def slice_stopped(self) -> BudgetExceeded | None:
        """The error this session's own budget slice stopped a step with, if it did."""
        meter = self._meter
        return meter.stopped if meter.owner == self.session_id else None

    async def _recorded_model(self) -> str | None:
        """The model a strict replay's session names: the recorded one (no route is resolved)."""
        assert self._state.journal is not None
        record = await self._state.journal.get_session(self.session_id)
        if record is None:
            raise ReplayDivergence(
                f"Replay reached session {self.session_id!r}, which the journal does not hold: the architecture "
                f"or the task differs from the recorded run. Replay the run with the code that recorded it.",
                session_id=self.session_id,
                step=-1,
            )
        return record.model

    async def _record_session(
        self,
        started: SessionStarted,
        status: SessionStatus,
        *,
        output: Output | None = None,
        error: BaseException | None = None,
    ) -> None:
        state = self._state
        journal = state.journal
        if journal is None:
            return
        if state.mode == "replay":
            await self._check_end(journal, started, status, output, error)
            return
        record = self._session_record(
            started, status, output, error, usage=state.tree_usage(self.session_id).model_dump()
        )
        state.suspension.enter()  # a journal write in flight: a suspending run waits for it
        try:
            with anyio.CancelScope(shield=True):
                if self.parent_id is not None:
                    await journal.put_session(record)
                    return
                async with state.root_lock:
                    await journal.put_session(record.model_copy(update=root_fields(state, status)))
        finally:
            state.suspension.leave()

    def _session_record(
        self,
        started: SessionStarted,
        status: SessionStatus,
        output: Output | None,
        error: BaseException | None,
        **extra: Any,
    ) -> SessionRecord:
        """This session's record at `status`; `extra` adds fields (a live run's usage)."""
        return SessionRecord(
            session_id=self.session_id,
            parent_id=self.parent_id,
            role=self.role,
            architecture=started.architecture,
            model=started.model,
            task=started.task,
            status=status,
            stop_reason=output.stop_reason if output else (error_type_name(error) if error else None),
            output=output.text if output else (str(error) if error else None),
            rounds=_rounds(output),
            **extra,
        )

    async def _check_end(
        self,
        journal: Journal,
        started: SessionStarted,
        status: SessionStatus,
        output: Output | None,
        error: BaseException | None,
    ) -> None:
        """A strict replay's journal records nothing: it compares each session's end with the
        recorded one (status, stop reason, output, rounds; `jeeves._run.replay`). So only the end
        is reported, with only what is compared: no in-progress record, no usage, no root fields.
        An error of the code or the journal itself is not compared: it says more than a comparison."""
        if status == "in_progress" or isinstance(error, PROGRAM_ERRORS):
            return
        record = self._session_record(started, status, output, error)
        state = self._state
        state.suspension.enter()
        try:
            await journal.put_session(record)  # a comparison, not a write: nothing to shield here
        finally:
            state.suspension.leave()


def root_fields(state: RunState, status: str) -> dict[str, Any]:
    """What only the root's record holds: how to rebuild and govern the run, and its lease."""
    running = status == "in_progress"
    if running:
        state.lease_renewed_at = time.time()
    return {
        "source": state.source,
        "approvals": state.approvals.model_dump(mode="json") if state.approvals is not None else None,
        "created_at": state.created_at,
        "expires_at": state.expires_at,
        "lease_owner": state.owner if running else None,
        "lease_renewed_at": state.lease_renewed_at if running else None,
        "progress": state.progress,
    }
