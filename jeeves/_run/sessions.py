"""A session's life: its start and end events, its span, and its record in the journal.

`jeeves._run.context.execute` runs a session through these; the root's record also holds
what a resume needs (the source, the approval policy), the run's lease (owner,
renewed_at) and its TTL; its status follows the lifecycle in
`jeeves.journal.SessionStatus`.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import Any, Protocol

from jeeves._run.state import RunState, Session, Start, emit, sent_unread
from jeeves._run.steering import INJECT_STEP, Intervention, Turn, span_event, watchdog_evaluation
from jeeves._run.steps import journaled, next_index, put_whole
from jeeves.budget import AXES, Budget, clamp
from jeeves.errors import PROGRAM_ERRORS, BudgetExceeded, ReplayDivergence, RunEnded, UserError, tag_session
from jeeves.events import (
    AuditStats,
    BudgetSliced,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    SteeringInjected,
    WatchdogVerdictEvent,
)
from jeeves.journal.records import Journal, SessionRecord, SessionStatus, error_type_name
from jeeves.telemetry.tracer import NULL_SCOPE, NULL_SPAN, EventAttributes, SpanHandle

__all__ = [
    "SLICE_STEP",
    "Ended",
    "add_span_event",
    "allot",
    "complete",
    "describe_output",
    "fail",
    "injected",
    "intervention",
    "record",
    "recorded_model",
    "root_fields",
    "slice_stopped",
    "span",
    "span_note",
    "start",
    "started",
    "steered",
    "tool_span",
]

SLICE_STEP = "budget_slice"
"""The name of the step that allots a session its budget slice."""


class Ended(Protocol):
    """What a session's end reads of its Output (`jeeves._run.context.Output`)."""

    @property
    def value(self) -> Any: ...

    @property
    def text(self) -> str: ...

    @property
    def stop_reason(self) -> str: ...


def _rounds(output: Ended | None) -> int | None:
    """The rounds an Output reports (an int, or a sequence of rounds), if it has a `rounds` field."""
    rounds = getattr(output, "rounds", None)
    if isinstance(rounds, int) and not isinstance(rounds, bool):
        return rounds
    return len(rounds) if isinstance(rounds, list | tuple) else None


def describe_output(span: SpanHandle, output: Ended, index: int) -> None:
    """A finished session's span attributes: its stop reason, a critic's score, an audit's stats
    (none for the default tracer's span, which keeps nothing)."""
    if span is NULL_SPAN:
        return
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


def started(session: Session) -> SessionStarted:
    """`session`'s `session.started` event, as the stream carried it; in a run nobody reads,
    built at its first use (a journal record, a span, `ctx.started`) with the `seq` and `ts`
    it took when the session started."""
    event = session._started
    if event is not None:
        return event
    start = session._start
    if start is None:
        raise UserError(
            f"Session {session.session_id!r} has not started; use ctx.run(...) to run architectures."
        )
    event = session._started = SessionStarted(
        session_id=session.session_id,
        parent_id=session.parent_id,
        role=session.role,
        role_path=list(session.role_path),
        architecture=start.architecture,
        model=start.model,
        index=start.index,
        task=start.task,
    )
    if start.stamp is not None:
        sent_unread(session, event, start.stamp)
    return event


async def start(session: Session, architecture: Any, model: Any, index: int, task: Any) -> None:
    """Emit `session`'s `session.started` (built from what it started with: see `started`)."""
    session._start = begun = Start(architecture, model, index, task)
    begun.stamp = await emit(session, started, session)  # None: built and sent


def span(session: Session) -> AbstractContextManager[SpanHandle]:
    """The scope of `session`'s span, from the run's tracer (the default one records nothing:
    its scope needs no `session.started`)."""
    state = session._state
    return state.tracer.session(started(session)) if state.traced else NULL_SCOPE


async def fail(session: Session, span: SpanHandle, exc: BaseException, *, journaled: bool) -> None:
    """End `session` as failed with `exc` (tagged with its session id): `session.failed`, its
    span's error and (`journaled`) its record."""
    tag_session(exc, session.session_id)
    span.record_error(exc)
    await emit(session, _failed, session, exc)
    if journaled:
        ended = exc.status if isinstance(exc, RunEnded) else "failed"
        await record(session, ended, error=exc)  # type: ignore[arg-type]


def _failed(session: Session, exc: BaseException) -> SessionFailed:
    return SessionFailed(
        session_id=session.session_id,
        error_type=error_type_name(exc),
        message=str(exc),
        usage=session._state.tree_usage(session.session_id),
    )


async def complete(session: Session, output: Ended, *, journaled: bool) -> None:
    """End `session` with `output`: `session.completed` and (`journaled`) its record."""
    await emit(session, _completed, session, output)
    if journaled:
        await record(session, "completed", output=output)


def _completed(session: Session, output: Ended) -> SessionCompleted:
    return SessionCompleted(
        session_id=session.session_id,
        output=output.text,
        stop_reason=output.stop_reason,
        usage=session._state.tree_usage(session.session_id),
    )


async def allot(session: Session, wanted: Budget) -> None:
    """Put this session under its slice: `wanted` held to what remains above it, taken as
    this session's first step (a `function` step named `budget_slice`), so a replay or a
    resume runs under the slice the recording had, whatever remains when it runs."""

    async def allotment() -> Budget:
        return clamp(wanted, session._meter.remaining())

    allotted = (
        await journaled(
            session,
            "function",
            SLICE_STEP,
            next_index(session),
            lambda: wanted.model_dump(mode="json"),
            allotment,
            Budget,
            [],
        )
    ).value
    session._meter = session._meter.slice(allotted, owner=session.session_id)
    await emit(session, _sliced, session, wanted, allotted)


def _sliced(session: Session, wanted: Budget, allotted: Budget) -> BudgetSliced:
    return BudgetSliced(
        session_id=session.session_id,
        max_tokens=allotted.max_tokens,
        max_usd=allotted.max_usd,
        max_model_calls=allotted.max_model_calls,
        deadline_s=allotted.deadline_s,
        clamped=[
            axis
            for axis, field in AXES.items()
            if getattr(wanted, field) is not None and getattr(allotted, field) < getattr(wanted, field)
        ],
    )


def slice_stopped(session: Session) -> BudgetExceeded | None:
    """The error this session's own budget slice stopped a step with, if it did."""
    meter = session._meter
    return meter.stopped if meter.owner == session.session_id else None


async def recorded_model(session: Session) -> str | None:
    """The model a strict replay's session names: the recorded one (no route is resolved)."""
    assert session._state.journal is not None
    found = await session._state.journal.get_session(session.session_id)
    if found is None:
        raise ReplayDivergence(
            f"Replay reached session {session.session_id!r}, which the journal does not hold: the architecture "
            f"or the task differs from the recorded run. Replay the run with the code that recorded it.",
            session_id=session.session_id,
            step=-1,
        )
    return found.model


async def record(
    session: Session,
    status: SessionStatus,
    *,
    output: Ended | None = None,
    error: BaseException | None = None,
) -> None:
    state = session._state
    journal = state.journal
    if journal is None:
        return
    event = started(session)
    if state.mode == "replay":
        await _check_end(session, journal, event, status, output, error)
        return
    entry = _session_record(
        session, event, status, output, error, usage=state.tree_usage(session.session_id).model_dump()
    )
    state.suspension.enter()  # a journal write in flight: a suspending run waits for it
    try:
        if session.parent_id is not None:
            await put_whole(journal.put_session, entry)
            return

        async def put_root(record: SessionRecord) -> None:
            async with state.root_lock:
                await journal.put_session(record)

        await put_whole(put_root, entry.model_copy(update=root_fields(state, status)))
    finally:
        state.suspension.leave()


def _session_record(
    session: Session,
    started: SessionStarted,
    status: SessionStatus,
    output: Ended | None,
    error: BaseException | None,
    **extra: Any,
) -> SessionRecord:
    """This session's record at `status`; `extra` adds fields (a live run's usage)."""
    return SessionRecord(
        session_id=session.session_id,
        parent_id=session.parent_id,
        role=session.role,
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
    session: Session,
    journal: Journal,
    started: SessionStarted,
    status: SessionStatus,
    output: Ended | None,
    error: BaseException | None,
) -> None:
    """A strict replay's journal records nothing: it compares each session's end with the
    recorded one (status, stop reason, output, rounds; `jeeves._run.replay`). So only the end
    is reported, with only what is compared: no in-progress record, no usage, no root fields.
    An error of the code or the journal itself is not compared: it says more than a comparison
    (also when it reached this session in a group, from children run in a task group)."""
    if status == "in_progress" or _program_error(error):
        return
    entry = _session_record(session, started, status, output, error)
    state = session._state
    state.suspension.enter()
    try:
        await journal.put_session(entry)  # a comparison, not a write: nothing to shield here
    finally:
        state.suspension.leave()


def _program_error(error: BaseException | None) -> bool:
    """Whether `error` is, or is a group holding, an error of the program, its configuration
    or its journal (`PROGRAM_ERRORS`)."""
    if isinstance(error, BaseExceptionGroup):
        return error.subgroup(lambda e: isinstance(e, PROGRAM_ERRORS)) is not None
    return isinstance(error, PROGRAM_ERRORS)


# -- a session's span -------------------------------------------------------------------
def span_note(session: Session, session_id: str, event: WatchdogVerdictEvent | SteeringInjected) -> None:
    """Put a verdict or an injected message on session `session_id`'s span, if it is open
    (a watchdog verdict also as a `gen_ai.evaluation.result`, see `jeeves._run.steering`)."""
    span = session._state.spans.get(session_id)
    if span is not None:
        span.add_event(*span_event(event))
        if isinstance(event, WatchdogVerdictEvent):
            span.add_event(*watchdog_evaluation(event, session_id))


def add_span_event(session: Session, session_id: str, name: str, attributes: EventAttributes) -> None:
    """Put an event on session `session_id`'s span, if it is open (a critic's verdict as a
    `gen_ai.evaluation.result` on the session it judged); a no-op without telemetry."""
    span = session._state.spans.get(session_id)
    if span is not None:
        span.add_event(name, attributes)


def tool_span(
    session: Session, name: str, call_id: str, arguments: str
) -> AbstractContextManager[SpanHandle]:
    """The span of one tool call `session` runs live (the run's tracer's)."""
    return session._state.tracer.tool_call(started(session), name, call_id, arguments)


# -- steering ----------------------------------------------------------------------------
def steered(session: Session) -> bool:
    """Whether a parent attached an intervener to `session` (`ctx.run(..., intervene=)`)."""
    return session._intervene is not None


async def intervention(session: Session, turn: Turn) -> Intervention | None:
    """What `session`'s intervener (if its parent attached one) asks after `turn`."""
    if session._intervene is None:
        return None
    return await session._intervene(turn)


async def injected(session: Session, turn: int) -> tuple[str, ...]:
    """A human's messages for `session`, taken at the boundary after `turn`.

    Taken from the run's inbox as a journaled `function` step named `inject` (request:
    the turn), made only when there are messages. A replay, or a resume that reaches
    the boundary where the recording took messages, finds that step at this session's
    next index and is served it; the inbox is not read then. Each message is announced
    as `steering.injected` (source `human`) and put on this session's span.
    """
    state = session._state
    served = False
    if state.journal is not None and not (state.fresh and not session._adopted):  # a new run has no step
        found = await state.journal.get_step(session.session_id, session._steps)
        served = found is not None and found.kind == "function" and found.name == INJECT_STEP
    if not served and (state.mode == "replay" or session._adopted or not len(state.inbox)):
        return ()
    messages = state.inbox.take(session.session_id) if not served else ()
    if not served and not messages:
        return ()

    async def take() -> list[str]:
        return list(messages)

    taken, replayed = await journaled(
        session, "function", INJECT_STEP, next_index(session), lambda: {"turn": turn}, take, list[str], []
    )
    for text in taken:
        event = SteeringInjected(
            session_id=session.session_id,
            target_session_id=session.session_id,
            cause="human",
            source="human",
            message=text,
            replayed=replayed,
        )
        span_note(session, session.session_id, event)
        await emit(session, event)
    return tuple(taken)


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
